//! Errors of the API client. Every variant names the operation and the full URL, so a
//! message in a log or in `sync_errors` says what failed and where; none carries a
//! credential (they are [`crate::api::secret::Secret`]s and never formatted).
//! Causes are said inline and are not `source()`s (the crate's rule, `crate::cause`).

use crate::api::models::InvalidRequest;
use crate::api::operation::Operation;

/// How a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The service or the way to it failed (no connection, a timeout, 408, 5xx, a
    /// body that arrived broken): retried with backoff, and the document is
    /// fetched again at the end of a sync.
    Transient,
    /// The service asked to slow down (429): the throttle makes every request wait
    /// its `Retry-After` (amid failures, this request alone;
    /// `crate::api::throttle`), and the document is tried again then, with none of
    /// its retries spent, up to
    /// [`crate::api::pacing::RATE_LIMITED_ATTEMPTS`] times; it is fetched again at
    /// the end of a sync like a transient failure.
    RateLimited,
    /// The service answered on purpose that it will not serve this document (200
    /// with `success: false`): tried a few times within seconds
    /// ([`crate::api::pacing::REFUSED_ATTEMPTS`]), in case the refusal passes, and
    /// never fetched again at the end of a sync.
    Refused,
    /// Trying again cannot help (another 4xx, a body over the limit, a redirect
    /// that is not followed, an invalid request).
    Final,
}

impl Retry {
    /// Whether a document whose tries of the first pass ended so is fetched
    /// again at the end of a sync.
    pub fn again_at_the_end(self) -> bool {
        matches!(self, Retry::Transient | Retry::RateLimited)
    }
}

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No connection could be made (refused, DNS, reset) or the body broke off.
    #[error(
        "{op} {url}: cannot reach the service: {reason}; check the URL and that the service is up"
    )]
    Connect {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// What the transport said.
        reason: String,
    },
    /// No complete answer within the timeout.
    #[error("{op} {url}: no answer within {secs} s")]
    Timeout {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// The timeout.
        secs: u64,
    },
    /// The service answered with a non-200 status.
    #[error("{op} {url}: HTTP {status}: {excerpt}")]
    Http {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// HTTP status code.
        status: u16,
        /// The start of the body (the service's error text when it sent one).
        excerpt: String,
        /// Seconds the service asked us to wait (429 `Retry-After`).
        retry_after: Option<u64>,
    },
    /// The envelope said `success: false`.
    #[error("{op} {url}: the service answered success=false: {message}")]
    Unsuccessful {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// The envelope's `error` text.
        message: String,
    },
    /// The body is not the JSON the operation returns.
    #[error("{op} {url}: the response does not decode: {detail}")]
    Decode {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// Parser message with line and column.
        detail: String,
    },
    /// The body, or one element of a streamed list, exceeds its size limit.
    #[error(
        "{op} {url}: {part} is larger than {limit} bytes ({mb} MB), the limit for {name}; the rest was not read",
        mb = limit >> 20,
        name = op.name()
    )]
    TooLarge {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// The limit, in bytes.
        limit: u64,
        /// What passed the limit: `the response`, or `one element of the list`.
        part: &'static str,
    },
    /// The service redirected the request where it is not followed (another origin,
    /// or a loop).
    #[error("{op} {url}: HTTP {status} redirects to {to}; {why}, so it was not followed")]
    Redirected {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// HTTP status code (3xx).
        status: u16,
        /// The origin of the `Location` (`scheme://host:port`), never its path or
        /// query, which may carry a token.
        to: String,
        /// Why it was not followed.
        why: String,
    },
    /// The request was refused before sending (create-project's contract).
    #[error("{op}: invalid request: {cause}")]
    InvalidRequest {
        /// The operation.
        op: Operation,
        /// What is wrong (said in the message, so not a `source`).
        cause: InvalidRequest,
    },
    /// The service did not answer for longer than the outage limit.
    #[error(
        "the service was unreachable for {waited} from {since}, the last probe met {last}; the run stopped, and what it did not fetch keeps its previous version"
    )]
    Unreachable {
        /// When the outage began, e.g. `2026-06-01 12:00:03 UTC`.
        since: String,
        /// How long it was waited out, e.g. `10 minutes`.
        waited: String,
        /// What the last probe met (the error it got).
        last: String,
    },
    /// The client could not be built (bad base URL, TLS setup).
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
}

impl ApiError {
    /// HTTP status, when the service answered with one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ApiError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How this failure is retried (see [`Retry`]).
    pub fn retry(&self) -> Retry {
        match self {
            ApiError::Connect { .. } | ApiError::Timeout { .. } | ApiError::Decode { .. } => {
                Retry::Transient
            }
            ApiError::Unsuccessful { .. } => Retry::Refused,
            ApiError::Http { status: 429, .. } => Retry::RateLimited,
            ApiError::Http { status, .. } if *status == 408 || *status >= 500 => Retry::Transient,
            ApiError::Http { .. }
            | ApiError::TooLarge { .. }
            | ApiError::Redirected { .. }
            | ApiError::InvalidRequest { .. }
            | ApiError::Unreachable { .. }
            | ApiError::Setup(_) => Retry::Final,
        }
    }

    /// Whether the failure is one an unreachable service gives (no connection, a
    /// timeout, a gateway's or an unavailable answer), rather than an answer.
    pub fn points_to_outage(&self) -> bool {
        match self {
            ApiError::Connect { .. } | ApiError::Timeout { .. } => true,
            ApiError::Http { status, .. } => matches!(status, 502..=504),
            _ => false,
        }
    }

    /// The wait the service asked for, if any.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
