//! A string that must never be printed: API keys, JWTs, development keys.
//!
//! `Debug` and `Display` show `[redacted]`, so a secret that ends up in a log line,
//! an error message or a `{:?}` dump leaks nothing. The only way to the text is
//! [`Secret::expose`], which makes every use greppable.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Secret text, redacted in every formatting path.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret text itself; call only where the value must leave the process
    /// (an HTTP header) or be fingerprinted.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A short, stable, non-reversible fingerprint (first 12 hex digits of SHA-256),
    /// enough to tell two keys apart in the mirror without storing either.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.0.as_bytes());
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// JSON keys whose values are secrets in the API's answers (development keys of
/// operation 6, the new project's key of operation 8).
pub const SECRET_KEYS: &[&str] = &["apiKey", "hmacKey"];

/// Replaces the string values of [`SECRET_KEYS`], at any depth, with `[redacted]`.
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if SECRET_KEYS.contains(&key.as_str()) && v.is_string() {
                    *v = serde_json::Value::from("[redacted]");
                } else {
                    redact_json(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        _ => {}
    }
}

/// A JSON body with its secrets redacted; a body that is not JSON is returned as is
/// (it cannot have reached the mirror as a parsed document anyway).
pub fn redact_body(raw: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(raw) {
        Ok(mut value) => {
            redact_json(&mut value);
            serde_json::to_vec(&value).unwrap_or_else(|_| raw.to_vec())
        }
        Err(_) => raw.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_nested_secret_keys_only() {
        let body = br#"{"developmentKeys":{"apiKey":"ei_123","hmacKey":"abc"},"project":{"name":"apiKey"},"list":[{"apiKey":"k"}]}"#;
        let text = String::from_utf8(redact_body(body)).expect("utf-8");
        assert!(!text.contains("ei_123") && !text.contains("\"abc\"") && !text.contains("\"k\""));
        assert!(
            text.contains("\"name\":\"apiKey\""),
            "values named like keys stay"
        );
    }

    use super::*;

    #[test]
    fn formatting_never_shows_the_value() {
        let s = Secret::new("ei_supersecret");
        assert!(!format!("{s:?}").contains("supersecret"));
        assert!(!format!("{s}").contains("supersecret"));
        assert_eq!(s.expose(), "ei_supersecret");
    }

    #[test]
    fn fingerprint_is_short_stable_and_distinct() {
        let a = Secret::new("key-a");
        assert_eq!(a.fingerprint().len(), 12);
        assert_eq!(a.fingerprint(), Secret::new("key-a").fingerprint());
        assert_ne!(a.fingerprint(), Secret::new("key-b").fingerprint());
        assert!(!a.fingerprint().contains("key"));
    }
}
