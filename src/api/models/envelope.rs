//! The envelope every response shares, and the trait that lets the HTTP client check
//! it generically after parsing a body once.

use serde::{Deserialize, Serialize};

/// The `success`/`error` pair every response carries.
pub trait ApiResponse {
    /// Whether the service reported success; the one field every answer must carry
    /// (docs/api.md, the envelope).
    fn success(&self) -> bool;
    /// The service's error description, normally set only when `success` is false.
    fn error_text(&self) -> Option<&str>;

    /// Parses a body. Responses with a faster reader of their own override this.
    fn from_json(text: &str) -> Result<Self, serde_json::Error>
    where
        Self: serde::de::DeserializeOwned,
    {
        serde_json::from_str(text)
    }
}

/// Implements [`ApiResponse`] for response structs with `success: bool` and
/// `error: Option<String>` fields; `Response => parser` gives one a body parser of
/// its own instead of plain serde.
macro_rules! impl_api_response {
    ($($response:ty $(=> $parser:path)?),+ $(,)?) => {
        $(
            impl $crate::api::models::ApiResponse for $response {
                fn success(&self) -> bool {
                    self.success
                }

                fn error_text(&self) -> Option<&str> {
                    self.error.as_deref()
                }

                $(
                    fn from_json(text: &str) -> Result<Self, serde_json::Error> {
                        $parser(text)
                    }
                )?
            }
        )+
    };
}
pub(crate) use impl_api_response;

/// Only the envelope of a response: enough to read the outcome of a body whose
/// operation is unknown or whose payload failed to parse.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Whether the operation succeeded.
    pub success: bool,
    /// Error description; set when `success` is false.
    pub error: Option<String>,
}

impl_api_response!(Envelope);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_reads_success_and_error_and_ignores_payload() {
        let body =
            r#"{"success": false, "error": "Organization not found", "organization": {"id": 1}}"#;
        let envelope: Envelope = serde_json::from_str(body).unwrap();
        assert!(!envelope.success());
        assert_eq!(envelope.error_text(), Some("Organization not found"));
    }

    #[test]
    fn envelope_without_error_has_no_error_text() {
        let envelope: Envelope =
            serde_json::from_str(r#"{"success": true, "error": null}"#).unwrap();
        assert!(envelope.success());
        assert_eq!(envelope.error_text(), None);
    }

    #[test]
    fn envelope_requires_success() {
        let missing = serde_json::from_str::<Envelope>(r#"{"error": "x"}"#).unwrap_err();
        assert!(
            missing.to_string().contains("missing field `success`"),
            "{missing}"
        );
        let null = serde_json::from_str::<Envelope>(r#"{"success": null}"#).unwrap_err();
        assert!(null.to_string().contains("invalid type: null"), "{null}");
    }
}
