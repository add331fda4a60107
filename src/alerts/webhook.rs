//! Webhook delivery: one POST per event, retried within the run as the API client
//! retries (`Backoff`: exponential with jitter, a `Retry-After` honoured); what is
//! still pending after the run's attempts is tried again at the next run. In the `standard` format it is signed as Standard Webhooks say
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">`); the signing key is decoded from `whsec_<base64>` once and
//! never printed. Slack and Teams webhooks are not signed: their URL is the secret,
//! so it is named nowhere (errors say the webhook's name and at most an origin).

use crate::alerts::AlertError;
use crate::alerts::format::Format;
use crate::alerts::outbox::Delivery;
use crate::api::origin;
use crate::api::pacing::{self, Backoff};
use crate::api::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::path::Path;
use std::time::Duration;

/// The signing key (the decoded bytes of a `whsec_` secret).
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey([redacted])")
    }
}

impl SigningKey {
    /// Decodes `whsec_<base64>`; `file` is named in the error (the secret is not).
    pub fn parse(secret: &Secret, file: &Path) -> Result<SigningKey, AlertError> {
        let bad = |why: &str| AlertError::Secret {
            file: file.to_path_buf(),
            why: why.to_string(),
        };
        let encoded = secret
            .expose()
            .strip_prefix("whsec_")
            .ok_or_else(|| bad("it does not start with whsec_"))?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|_| bad("the part after whsec_ is not base64"))?;
        if key.is_empty() {
            return Err(bad("the key after whsec_ is empty"));
        }
        Ok(SigningKey(key))
    }

    /// `v1,<base64 signature>` of one delivery.
    pub fn sign(&self, id: &str, timestamp: i64, body: &str) -> String {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(mac) => mac,
            Err(_) => return String::new(),
        };
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body.as_bytes());
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// Attempts on one event within a run: `attempts` tries, waiting about `base`,
/// 2·`base`, … between (±50 % jitter, at most [`Backoff`]'s default cap), or the
/// receiver's `Retry-After` when longer.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Tries per event and run (at least 1).
    pub attempts: u32,
    /// The first wait.
    pub base: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            base: Duration::from_millis(500),
        }
    }
}

impl Retry {
    /// The waits between the attempts (the e-mail room retries with them too).
    pub fn backoff(&self) -> Backoff {
        Backoff {
            base: self.base,
            cap: Backoff::default().cap,
            max_retries: self.attempts.max(1) - 1,
        }
    }
}

/// The longest `Retry-After` waited for within a run. A receiver that asks for
/// more gets the event at the next run instead: waiting longer would hold up the
/// report job that sends it (and the sync queued behind that job).
const MOST_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Where events go, and how.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// How the mirror, the logs and `status` call it.
    name: String,
    format: Format,
    /// A secret: chat tools put their token in the URL.
    url: Secret,
    /// The `standard` format's signing key.
    key: Option<SigningKey>,
    http: reqwest::Client,
    retry: Retry,
}

/// The name of the webhook set by `webhook_url` / `--webhook` (and of the one
/// webhook of mirrors from before several were possible).
pub const DEFAULT_NAME: &str = "default";

/// How much of a refusing receiver's body is kept.
const EXCERPT_CHARS: usize = 200;

impl Webhook {
    /// A Standard Webhooks sender to `url` (http or https), named
    /// [`DEFAULT_NAME`].
    pub fn new(url: &str, key: SigningKey, retry: Retry) -> Result<Webhook, AlertError> {
        Webhook::build(url, Format::Standard, Some(key), retry)
    }

    /// An unsigned sender in a chat format (`slack`, `teams`), named
    /// [`DEFAULT_NAME`].
    pub fn chat(url: &str, format: Format, retry: Retry) -> Result<Webhook, AlertError> {
        if format == Format::Standard {
            return Err(AlertError::Setup(
                "a standard webhook is signed: it needs its secret file".into(),
            ));
        }
        Webhook::build(url, format, None, retry)
    }

    /// The same sender under another name.
    pub fn named(mut self, name: &str) -> Webhook {
        self.name = name.to_string();
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its message format.
    pub fn format(&self) -> Format {
        self.format
    }

    fn build(
        url: &str,
        format: Format,
        key: Option<SigningKey>,
        retry: Retry,
    ) -> Result<Webhook, AlertError> {
        let parsed = origin::parse_http_url(url)
            .map_err(|why| AlertError::Setup(format!("a {} webhook URL {why}", format.as_str())))?;
        // reqwest is built without a default crypto provider; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // The signed payload follows no redirect to another origin.
        let http = origin::client_builder(&parsed)
            .timeout(Duration::from_secs(15))
            .user_agent(concat!("orgledger/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AlertError::Setup(format!("cannot set up the webhook client: {e}")))?;
        Ok(Webhook {
            name: DEFAULT_NAME.to_string(),
            format,
            url: Secret::new(url),
            key,
            http,
            retry,
        })
    }

    /// Delivers one event, retrying what may succeed later. Returns the outcome and
    /// the attempts made.
    pub async fn deliver(&self, id: &str, body: &str) -> (Delivery, u32) {
        let backoff = self.retry.backoff();
        let mut tried = 0;
        loop {
            let (outcome, retry_after) = self.post(id, body).await;
            tried += 1;
            if !matches!(outcome, Delivery::Pending { .. }) || tried > backoff.max_retries {
                return (outcome, tried);
            }
            if retry_after.is_some_and(|secs| Duration::from_secs(secs) > MOST_RETRY_AFTER) {
                tracing::debug!(
                    id,
                    retry_after,
                    "the webhook asks for a longer wait than a run gives it; tried again at the next run"
                );
                return (outcome, tried);
            }
            let delay = backoff.delay(tried - 1, retry_after);
            tracing::debug!(
                id,
                attempt = tried,
                ?delay,
                "webhook not delivered yet; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// Where a redirect answer pointed and why it was not followed, in words that
    /// name the Location's origin only (its path may carry a token).
    fn refused_redirect(&self, response: &reqwest::Response) -> Option<String> {
        let configured = origin::parse_http_url(self.url.expose()).ok()?;
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        let refused = origin::refused_redirect(
            response.status().as_u16(),
            location,
            response.url(),
            &configured,
        )?;
        Some(format!(
            "redirects to {}; {}, so it was not followed",
            refused.to, refused.why
        ))
    }

    /// One POST: its outcome, and the receiver's `Retry-After` in seconds when it
    /// sent one.
    async fn post(&self, id: &str, body: &str) -> (Delivery, Option<u64>) {
        let mut request = self
            .http
            .post(self.url.expose())
            .header("content-type", "application/json");
        if let Some(key) = &self.key {
            let timestamp = chrono::Utc::now().timestamp();
            request = request
                .header("webhook-id", id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", key.sign(id, timestamp, body));
        }
        let sent = request.body(body.to_string()).send().await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                let pending = Delivery::Pending {
                    status: None,
                    // The URL stays out: a chat tool's webhook URL is itself a secret.
                    error: format!(
                        "no answer from the webhook: {}",
                        crate::cause::chain(&e.without_url())
                    ),
                };
                return (pending, None);
            }
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return (Delivery::Delivered(status), None);
        }
        if let Some(excerpt) = self.refused_redirect(&response) {
            return (Delivery::Failed { status, excerpt }, None);
        }
        let retry_after = pacing::retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
        // As the API client: 408 and 429 say "later", other 4xx say "never".
        if (400..500).contains(&status) && status != 408 && status != 429 {
            (Delivery::Failed { status, excerpt }, None)
        } else {
            let pending = Delivery::Pending {
                status: Some(status),
                error: format!("HTTP {status}: {excerpt}"),
            };
            (pending, retry_after)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_like_the_standard_webhooks_reference() {
        // The example of the Standard Webhooks specification's test suite.
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let key = SigningKey::parse(&secret, Path::new("s")).expect("valid secret");
        let sig = key.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn a_secret_without_the_prefix_is_refused_without_being_echoed() {
        let err = SigningKey::parse(&Secret::new("hunter2hunter2"), Path::new("/etc/s"))
            .expect_err("no prefix");
        let text = err.to_string();
        assert!(text.contains("/etc/s") && text.contains("whsec_"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
