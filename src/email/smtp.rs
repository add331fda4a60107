//! SMTP delivery: the server of `[email] smtp_url`, reached with TLS (from the
//! start on `smtps://`, STARTTLS required on `smtp://`; in clear only to a loopback
//! address) and logged in with the password of a file only its owner can read.
//!
//! A send goes step by step (DNS, connection, TLS, login, sender, recipient,
//! message), so a failure says which step failed and what the server answered:
//! `email test` prints it, the records keep it. The password is sent only inside
//! TLS (or to the loopback), and appears in no log line or error: lettre is built
//! without its `tracing` feature, which would log the SMTP dialogue.
//!
//! Retries follow the webhooks' (`alerts::Retry`, the shared backoff): a 4xx
//! answer or a server that cannot be reached is tried again within the run; a 5xx
//! answer to the recipient or the message is final. A refusal of the login or the
//! sender is the setup's, not the message's: the message stays pending.

use crate::alerts::Retry;
use crate::alerts::outbox::Delivery;
use crate::api::secret::Secret;
use crate::email::EmailError;
use lettre::Address;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::ClientId;
use std::error::Error as _;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How the connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtps://`: TLS from the first byte (port 465).
    Implicit,
    /// `smtp://`: STARTTLS, refused when the server does not offer it (port 587).
    StartTls,
    /// `smtp://…?tls=none`: in clear, to a loopback address only.
    Clear,
}

impl Security {
    fn as_str(self) -> &'static str {
        match self {
            Security::Implicit => "TLS",
            Security::StartTls => "STARTTLS",
            Security::Clear => "no TLS",
        }
    }
}

/// The server of `smtp_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// A name or an address (an IPv6 address without brackets).
    pub host: String,
    pub port: u16,
    pub security: Security,
}

impl Server {
    /// Reads `smtps://HOST[:PORT]`, `smtp://HOST[:PORT]` or
    /// `smtp://HOST:PORT?tls=none`; the error says what to write instead. The URL is
    /// not repeated when it holds an `@`: it may carry a password.
    pub fn parse(text: &str) -> Result<Server, String> {
        let shown = if text.contains('@') {
            "the URL".to_string()
        } else {
            format!("{text:?}")
        };
        let url = url::Url::parse(text).map_err(|e| {
            format!("{shown} is not a URL ({e}); write smtps://HOST:465 or smtp://HOST:587")
        })?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(
                "the URL holds a user name or password: put the user name in username \
                        and the password in password_file (chmod 600)"
                    .to_string(),
            );
        }
        let host = url
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string())
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{shown} names no host; write smtp://HOST:587"))?;
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return Err(format!(
                "{shown} has a path; write smtps://HOST:465 or smtp://HOST:587"
            ));
        }
        let mut tls = None;
        for (key, value) in url.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("tls", "none" | "starttls") if tls.is_none() => tls = Some(value.into_owned()),
                _ => {
                    return Err(format!(
                        "{shown}: unknown setting {key}={value}; the only one is tls=none (in clear, to a loopback address)"
                    ));
                }
            }
        }
        let security = match (url.scheme(), tls.as_deref()) {
            ("smtps", None) => Security::Implicit,
            ("smtp", None | Some("starttls")) => Security::StartTls,
            ("smtp", Some(_)) if is_loopback(&host) => Security::Clear,
            ("smtp", Some(_)) => {
                return Err(format!(
                    "tls=none sends the password and the messages in clear, so it is allowed only to a \
                     loopback address (127.0.0.1, ::1, localhost), not to {host}: use smtps://{host}:465 \
                     or smtp://{host}:587 (STARTTLS)"
                ));
            }
            ("smtps", Some(_)) => {
                return Err(format!(
                    "{shown}: smtps:// is TLS from the start; tls= applies to smtp:// only"
                ));
            }
            (other, _) => {
                return Err(format!(
                    "{shown}: the scheme {other}:// is not SMTP; write smtps://HOST:465 (TLS) or smtp://HOST:587 (STARTTLS)"
                ));
            }
        };
        let port = url.port().unwrap_or(match security {
            Security::Implicit => 465,
            _ => 587,
        });
        Ok(Server {
            host,
            port,
            security,
        })
    }
}

/// Whether `host` names this machine: the only place a message may go in clear.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The login of `username` and `password_file`.
#[derive(Debug, Clone)]
pub struct Login {
    pub user: String,
    /// Redacted in every formatting path.
    pub password: Secret,
}

/// Everything a [`Mailer`] is made of; the config file's `[email]`, checked.
#[derive(Debug, Clone)]
pub struct MailerSettings {
    pub server: Server,
    pub from: Mailbox,
    pub login: Option<Login>,
    /// Root certificates trusted besides the system's: the PEM file and its bytes.
    pub roots: Option<(std::path::PathBuf, Vec<u8>)>,
    /// How long one step of the dialogue may take.
    pub timeout: Duration,
    pub retry: Retry,
}

/// The step of a send that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The server's name did not resolve.
    Dns,
    /// No connection, or the server refused it in its greeting.
    Connect,
    /// TLS could not be set up (certificate, handshake, no STARTTLS).
    Tls,
    /// The server refused the login.
    Login,
    /// The server refused the sender (`MAIL FROM`).
    Sender,
    /// The server refused the recipient (`RCPT TO`).
    Recipient,
    /// The server refused the message (`DATA`).
    Message,
}

impl Step {
    /// The word `email test` and the records say it with.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Dns => "DNS",
            Step::Connect => "connection",
            Step::Tls => "TLS",
            Step::Login => "authentication",
            Step::Sender | Step::Recipient | Step::Message => "refusal",
        }
    }
}

/// Why a send failed: the step, the server's reply code when it answered, and what
/// happened in words (never the password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {detail}", .step.as_str())]
pub struct Failure {
    pub step: Step,
    pub code: Option<u16>,
    pub detail: String,
}

impl Failure {
    /// A 5xx answer to the recipient or the message: retrying would get the same.
    pub fn is_final(&self) -> bool {
        matches!(self.step, Step::Recipient | Step::Message) && self.code.is_some_and(|c| c >= 500)
    }

    /// A 4xx answer, or a server that could not be found or reached: worth another
    /// attempt within the run. A TLS failure or a refused login is not; trying
    /// again at once would only repeat it (or lock the account).
    fn worth_retrying(&self) -> bool {
        match self.code {
            Some(code) => (400..500).contains(&code),
            None => !matches!(self.step, Step::Tls | Step::Login),
        }
    }

    /// Whether the server or the setup failed, rather than the server's answer for
    /// this one recipient or message: the run stops sending, as it does to a webhook
    /// that is down.
    pub fn stops_the_run(&self) -> bool {
        !(matches!(self.step, Step::Recipient | Step::Message) && self.code.is_some())
    }
}

/// The server took the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub code: u16,
    /// Its answer (a queue id, usually).
    pub text: String,
}

/// A message's attempts within a run.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Where the message stands, as the outbox records it.
    pub outcome: Delivery,
    pub attempts: u32,
    /// The last failure, when it was not delivered.
    pub failure: Option<Failure>,
}

/// How much of a refusal is kept in the records.
const EXCERPT_CHARS: usize = 200;

/// Sends messages through the configured server.
#[derive(Clone)]
pub struct Mailer {
    server: Server,
    from: Mailbox,
    login: Option<Login>,
    /// TLS parameters, unless in clear.
    tls: Option<TlsParameters>,
    timeout: Duration,
    retry: Retry,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("server", &self.server)
            .field("from", &self.from.to_string())
            .field("login", &self.login)
            .finish()
    }
}

impl Mailer {
    /// Sets up TLS (the system's roots and those of `roots`).
    pub fn new(settings: MailerSettings) -> Result<Mailer, EmailError> {
        let tls = match settings.server.security {
            Security::Clear => None,
            Security::Implicit | Security::StartTls => Some(tls_parameters(
                &settings.server.host,
                settings.roots.as_ref(),
            )?),
        };
        Ok(Mailer {
            server: settings.server,
            from: settings.from,
            login: settings.login,
            tls,
            timeout: settings.timeout,
            retry: settings.retry,
        })
    }

    /// The sender.
    pub fn from(&self) -> &Mailbox {
        &self.from
    }

    /// The server in words: `host:port (STARTTLS, as user)`.
    pub fn describe(&self) -> String {
        let login = self
            .login
            .as_ref()
            .map_or_else(|| "no login".to_string(), |l| format!("as {}", l.user));
        format!(
            "{}:{} ({}, {login})",
            self.server.host,
            self.server.port,
            self.server.security.as_str()
        )
    }

    /// Sends `message` to `to`, retrying within the run what may succeed later.
    pub async fn send(&self, to: &Address, message: &[u8]) -> Sent {
        let backoff = self.retry.backoff();
        let mut tried = 0;
        loop {
            let result = self.send_once(to, message).await;
            tried += 1;
            let failure = match result {
                Ok(accepted) => {
                    return Sent {
                        outcome: Delivery::Delivered(accepted.code),
                        attempts: tried,
                        failure: None,
                    };
                }
                Err(failure) => failure,
            };
            if failure.is_final() {
                let excerpt = failure.to_string().chars().take(EXCERPT_CHARS).collect();
                return Sent {
                    outcome: Delivery::Failed {
                        status: failure.code.unwrap_or_default(),
                        excerpt,
                    },
                    attempts: tried,
                    failure: Some(failure),
                };
            }
            if !failure.worth_retrying() || tried > backoff.max_retries {
                return Sent {
                    outcome: Delivery::Pending {
                        status: failure.code,
                        error: failure.to_string(),
                    },
                    attempts: tried,
                    failure: Some(failure),
                };
            }
            let delay = backoff.delay(tried - 1, None);
            tracing::debug!(attempt = tried, ?delay, error = %failure, "e-mail not sent yet; retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: connect, protect, log in, hand the message over, quit.
    pub async fn send_once(&self, to: &Address, message: &[u8]) -> Result<Accepted, Failure> {
        let mut conn = self.open().await?;
        let sent = self.transfer(&mut conn, to, message).await;
        if !conn.has_broken() {
            // The message is the server's once DATA is answered; a lost QUIT changes nothing.
            let _ = tokio::time::timeout(self.timeout, conn.quit()).await;
        }
        sent
    }

    /// A connection ready for a message: greeted, protected and logged in.
    async fn open(&self) -> Result<AsyncSmtpConnection, Failure> {
        let Server {
            host,
            port,
            security,
        } = &self.server;
        let addresses = self.resolve().await?;
        let hello = ClientId::default();
        let implicit = match security {
            Security::Implicit => self.tls.clone(),
            _ => None,
        };
        let connect = AsyncSmtpConnection::connect_tokio1(
            &addresses[..],
            Some(self.timeout),
            &hello,
            implicit,
            None,
        );
        let mut conn = self
            .step(connect)
            .await
            .map_err(|e| connect_failure(&e, host, *port))?;
        if let (Security::StartTls, Some(tls)) = (security, &self.tls) {
            if !conn.can_starttls() {
                return Err(Failure {
                    step: Step::Tls,
                    code: None,
                    detail: format!(
                        "{host}:{port} does not offer STARTTLS, and orgledger sends neither the password nor \
                         the messages in clear: use the server's submission port with STARTTLS (587) or \
                         smtps://{host}:465"
                    ),
                });
            }
            self.step(conn.starttls(tls.clone(), &hello))
                .await
                .map_err(|e| Failure {
                    step: Step::Tls,
                    code: e.code(),
                    detail: format!(
                        "STARTTLS with {host}:{port} failed: {}",
                        e.tls_cause().unwrap_or_else(|| e.words())
                    ),
                })?;
        }
        if let Some(login) = &self.login {
            let credentials =
                Credentials::new(login.user.clone(), login.password.expose().to_string());
            let mechanisms = [Mechanism::Plain, Mechanism::Login];
            self.step(conn.auth(&mechanisms, &credentials))
                .await
                .map_err(|e| Failure {
                    step: Step::Login,
                    code: e.code(),
                    detail: format!("{host} refused the login of {}: {}", login.user, e.words()),
                })?;
        }
        Ok(conn)
    }

    /// The server's addresses; a name that does not resolve is a DNS failure.
    async fn resolve(&self) -> Result<Vec<SocketAddr>, Failure> {
        let Server { host, port, .. } = &self.server;
        let dns = |detail: String| Failure {
            step: Step::Dns,
            code: None,
            detail,
        };
        let found = tokio::time::timeout(
            self.timeout,
            tokio::net::lookup_host((host.as_str(), *port)),
        )
        .await
        .map_err(|_| {
            dns(format!(
                "resolving {host} took longer than {:?}",
                self.timeout
            ))
        })?
        .map_err(|e| dns(format!("cannot resolve {host}: {e}")))?;
        let addresses: Vec<SocketAddr> = found.collect();
        if addresses.is_empty() {
            return Err(dns(format!("{host} resolves to no address")));
        }
        Ok(addresses)
    }

    /// `MAIL FROM`, `RCPT TO`, `DATA` and the message, each refusal named by its step.
    async fn transfer(
        &self,
        conn: &mut AsyncSmtpConnection,
        to: &Address,
        message: &[u8],
    ) -> Result<Accepted, Failure> {
        let refused = |step: Step, what: String| {
            move |e: Trouble| Failure {
                step,
                code: e.code(),
                detail: match e.code() {
                    Some(_) => format!("the server refused {what}: {}", e.words()),
                    None => format!("the connection failed while sending {what}: {}", e.words()),
                },
            }
        };
        let from = self.from.email.clone();
        let sender = format!("the sender {from}");
        self.step(conn.command(Mail::new(Some(from), Vec::new())))
            .await
            .map_err(refused(Step::Sender, sender))?;
        self.step(conn.command(Rcpt::new(to.clone(), Vec::new())))
            .await
            .map_err(refused(Step::Recipient, format!("the recipient {to}")))?;
        self.step(conn.command(Data))
            .await
            .map_err(refused(Step::Message, "the message".to_string()))?;
        let answer = self
            .step(conn.message(message))
            .await
            .map_err(refused(Step::Message, "the message".to_string()))?;
        Ok(Accepted {
            code: u16::from(answer.code()),
            text: answer.message().collect::<Vec<_>>().join(" "),
        })
    }

    /// One step of the dialogue within the timeout.
    async fn step<T>(
        &self,
        step: impl Future<Output = Result<T, lettre::transport::smtp::Error>>,
    ) -> Result<T, Trouble> {
        match tokio::time::timeout(self.timeout, step).await {
            Ok(result) => result.map_err(Trouble::Smtp),
            Err(_) => Err(Trouble::TimedOut(self.timeout)),
        }
    }
}

/// What went wrong in one step.
#[derive(Debug)]
enum Trouble {
    /// lettre's error: a refusal, the network, TLS.
    Smtp(lettre::transport::smtp::Error),
    /// No answer within the timeout.
    TimedOut(Duration),
}

impl Trouble {
    /// The reply code of a refusal.
    fn code(&self) -> Option<u16> {
        match self {
            Trouble::Smtp(e) => e.status().map(u16::from),
            Trouble::TimedOut(_) => None,
        }
    }

    /// In words: the server's code and answer, or the cause's chain.
    fn words(&self) -> String {
        match self {
            Trouble::Smtp(e) => match (e.status(), e.source()) {
                (Some(code), Some(answer)) => format!("{code} {answer}"),
                (Some(code), None) => code.to_string(),
                _ => crate::cause::chain(e),
            },
            Trouble::TimedOut(after) => format!("no answer within {after:?}"),
        }
    }

    /// rustls's reason, when a TLS handshake failed (tokio-rustls reports it as an
    /// I/O error that holds it).
    fn tls_cause(&self) -> Option<String> {
        let Trouble::Smtp(e) = self else {
            return None;
        };
        let mut next = e.source();
        while let Some(err) = next {
            if let Some(tls) = err.downcast_ref::<rustls::Error>() {
                return Some(tls.to_string());
            }
            let inner = err
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>());
            if let Some(tls) = inner {
                return Some(tls.to_string());
            }
            next = err.source();
        }
        None
    }
}

/// TLS parameters for `host`: the system's roots, and those of the PEM file.
fn tls_parameters(
    host: &str,
    roots: Option<&(std::path::PathBuf, Vec<u8>)>,
) -> Result<TlsParameters, EmailError> {
    // lettre builds on the process's rustls provider: ring, as every other client here.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = TlsParameters::builder(host.to_string());
    if let Some((file, pem)) = roots {
        let bad = |why: &str| {
            EmailError::Setup(format!(
                "config [email] ca_file {}: {why}; give a PEM file of root certificates",
                file.display()
            ))
        };
        if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
            return Err(bad("it holds no certificate"));
        }
        let certificate = Certificate::from_pem(pem).map_err(|_| bad("it is not PEM"))?;
        builder = builder.add_root_certificate(certificate);
    }
    builder.build_rustls().map_err(|e| {
        EmailError::Setup(format!(
            "cannot set up TLS for {host}: {}",
            crate::cause::chain(&e)
        ))
    })
}

/// A failure to connect: TLS when rustls said no, the greeting's refusal when the
/// server answered, the network's reason otherwise.
fn connect_failure(trouble: &Trouble, host: &str, port: u16) -> Failure {
    if let Some(why) = trouble.tls_cause() {
        return Failure {
            step: Step::Tls,
            code: None,
            detail: format!("the TLS handshake with {host}:{port} failed: {why}"),
        };
    }
    Failure {
        step: Step::Connect,
        code: trouble.code(),
        detail: format!("cannot talk to {host}:{port}: {}", trouble.words()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_says_how_the_connection_is_protected_and_clear_text_stays_on_loopback() {
        let server = Server::parse("smtp://smtp.example.com").expect("starttls");
        assert_eq!(
            (server.port, server.security),
            (587, Security::StartTls),
            "{server:?}"
        );
        let server = Server::parse("smtps://smtp.example.com").expect("implicit");
        assert_eq!((server.port, server.security), (465, Security::Implicit));
        let server = Server::parse("smtp://127.0.0.1:2525?tls=none").expect("loopback");
        assert_eq!((server.port, server.security), (2525, Security::Clear));
        let server = Server::parse("smtp://[::1]:25?tls=none").expect("loopback v6");
        assert_eq!(server.host, "::1");
        let err = Server::parse("smtp://mail.example.com:25?tls=none").expect_err("not loopback");
        assert!(
            err.contains("loopback") && err.contains("smtp://mail.example.com:587"),
            "{err}"
        );
        let err = Server::parse("smtp://me:hunter2@mail.example.com").expect_err("password");
        assert!(
            err.contains("password_file") && !err.contains("hunter2"),
            "{err}"
        );
        let err = Server::parse("http://mail.example.com").expect_err("scheme");
        assert!(err.contains("smtps://HOST:465"), "{err}");
        let err = Server::parse("smtp://mail.example.com?tls=maybe").expect_err("setting");
        assert!(err.contains("tls=maybe"), "{err}");
        assert!(Server::parse("smtp://mail.example.com/inbox").is_err());
    }

    #[test]
    fn only_a_5xx_to_the_recipient_or_the_message_is_final() {
        let failure = |step, code| Failure {
            step,
            code,
            detail: String::new(),
        };
        assert!(failure(Step::Recipient, Some(550)).is_final());
        assert!(failure(Step::Message, Some(554)).is_final());
        assert!(!failure(Step::Recipient, Some(451)).is_final());
        assert!(failure(Step::Message, Some(451)).worth_retrying());
        // The setup's refusals keep the message pending, unretried within the run.
        for step in [Step::Login, Step::Sender] {
            let refused = failure(step, Some(535));
            assert!(!refused.is_final() && !refused.worth_retrying() && refused.stops_the_run());
        }
        assert!(failure(Step::Connect, None).worth_retrying());
        assert!(failure(Step::Message, None).worth_retrying());
        assert!(!failure(Step::Tls, None).worth_retrying());
        assert!(!failure(Step::Recipient, Some(550)).stops_the_run());
        assert!(failure(Step::Message, None).stops_the_run());
    }
}
