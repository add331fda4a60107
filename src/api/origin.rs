//! Where requests carrying a credential may go: only to the origin (scheme, host,
//! port) the user configured.
//!
//! reqwest strips the standard sensitive headers (`Authorization`, `Cookie`) when a
//! redirect leaves the origin, but not custom ones such as `x-api-key` and
//! `x-jwt-token`, nor a webhook's signed body. Every HTTP client of orgledger is
//! built here, with a redirect policy that follows a few same-origin hops and stops
//! at any other: the redirect answer then comes back to the caller, which turns it
//! into an error that names the Location's origin (see [`refused_redirect`]).
//! https to http is a change of scheme, so it is another origin too.

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

/// Same-origin redirects followed in a row before the answer counts as a loop.
pub const MAX_REDIRECTS: usize = 5;

/// A redirect that was not followed: where it pointed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRedirect {
    /// The origin of the `Location` (`scheme://host:port`), or why it has none.
    pub to: String,
    /// Why it was not followed, in words for the user.
    pub why: String,
}

/// A client builder whose redirects never leave `configured`'s origin.
pub fn client_builder(configured: &Url) -> reqwest::ClientBuilder {
    let origin = configured.origin();
    reqwest::Client::builder().redirect(Policy::custom(move |attempt: Attempt<'_>| {
        if attempt.previous().len() > MAX_REDIRECTS || attempt.url().origin() != origin {
            attempt.stop()
        } else {
            attempt.follow()
        }
    }))
}

/// A client for requests to `url`'s origin alone (the sandbox's admin routes, the
/// benchmark's downloader), with default settings.
pub fn client_for(url: &str) -> Result<reqwest::Client, String> {
    let parsed = parse_http_url(url)?;
    client_builder(&parsed)
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Parses a configured http(s) URL, or says what is wrong with it (never echoing
/// it: a webhook URL can carry a token).
pub fn parse_http_url(url: &str) -> Result<Url, String> {
    match Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
            Ok(parsed)
        }
        Ok(_) => Err("must start with http:// or https:// and name a host".to_string()),
        Err(e) => Err(format!("is not a URL ({e})")),
    }
}

/// The origin of `url` as `scheme://host:port`, with the port even when it is the
/// scheme's default, so two origins that differ only there read differently.
pub fn origin_text(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{}://{host}:{port}", url.scheme()),
        (Some(host), None) => format!("{}://{host}", url.scheme()),
        _ => format!("{}:", url.scheme()),
    }
}

/// Why the client stopped at a redirect answer (301, 302, 303, 307, 308) to a request for
/// `requested` (the URL after any same-origin hops): its `Location` leaves
/// `configured`'s origin, or there were too many hops, or it has no usable
/// `Location`. `None` for an answer that is not a redirect.
pub fn refused_redirect(
    status: u16,
    location: Option<&str>,
    requested: &Url,
    configured: &Url,
) -> Option<RefusedRedirect> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let target = location.and_then(|l| requested.join(l).ok());
    let Some(target) = target else {
        return Some(RefusedRedirect {
            to: "no usable Location".to_string(),
            why: "a redirect without a target cannot be followed".to_string(),
        });
    };
    let why = if target.origin() == configured.origin() {
        format!("more than {MAX_REDIRECTS} redirects in a row")
    } else {
        format!(
            "orgledger sends credentials and signed events only to the configured origin {}",
            origin_text(configured)
        )
    };
    Some(RefusedRedirect {
        to: origin_text(&target),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("test URL")
    }

    #[test]
    fn another_host_port_or_scheme_is_another_origin() {
        let configured = url("https://api.example.com/v1");
        let cases = [
            ("https://evil.example.com/x", "https://evil.example.com:443"),
            (
                "https://api.example.com:8443/x",
                "https://api.example.com:8443",
            ),
            ("http://api.example.com/x", "http://api.example.com:80"),
        ];
        for (location, origin) in cases {
            let refused = refused_redirect(307, Some(location), &configured, &configured)
                .expect("a redirect is refused");
            assert_eq!(refused.to, origin);
            assert!(
                refused.why.contains("https://api.example.com:443"),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn a_same_origin_redirect_that_came_back_was_a_loop_and_other_answers_pass() {
        let configured = url("http://127.0.0.1:3000/");
        let requested = url("http://127.0.0.1:3000/v1/api/organizations");
        let refused =
            refused_redirect(302, Some("/v1/api/other"), &requested, &configured).expect("refused");
        assert_eq!(refused.to, "http://127.0.0.1:3000");
        assert!(refused.why.contains("redirects in a row"));
        assert!(refused_redirect(307, None, &requested, &configured).is_some());
        assert_eq!(refused_redirect(200, None, &requested, &configured), None);
        assert_eq!(
            refused_redirect(404, Some("/x"), &requested, &configured),
            None
        );
        assert_eq!(refused_redirect(304, None, &requested, &configured), None);
    }

    #[test]
    fn only_http_urls_with_a_host_are_accepted_and_errors_do_not_echo_them() {
        assert!(parse_http_url("https://hooks.example.com/T0/secret").is_ok());
        for bad in [
            "ftp://x/secret",
            "not a url secret",
            "mailto:secret@example.com",
        ] {
            let error = parse_http_url(bad).expect_err(bad);
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
