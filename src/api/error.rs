//! Errors of the API client. Every variant names the operation and the full URL, so a
//! message in a log or in `sync_errors` says what failed and where; none carries a
//! credential (they are [`crate::api::secret::Secret`]s and never formatted).
//! Causes are said inline and are not `source()`s (the crate's rule, `crate::cause`).

use crate::api::models::InvalidRequest;
use crate::api::operation::Operation;

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
    /// The body exceeds the size limit.
    #[error("{op} {url}: the response is larger than {limit} bytes")]
    TooLarge {
        /// The operation.
        op: Operation,
        /// The full URL called (never holds a credential: they travel in headers).
        url: String,
        /// The limit.
        limit: u64,
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

    /// Whether trying again may succeed: transport failures, timeouts, 429, 5xx, and
    /// answers that arrived broken (a truncated or garbled body, a transient
    /// `success: false`). Other 4xx answers and invalid requests are final.
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Connect { .. }
            | ApiError::Timeout { .. }
            | ApiError::Decode { .. }
            | ApiError::Unsuccessful { .. } => true,
            ApiError::Http { status, .. } => *status == 429 || *status >= 500,
            ApiError::TooLarge { .. }
            | ApiError::InvalidRequest { .. }
            | ApiError::Unreachable { .. }
            | ApiError::Setup(_) => false,
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
