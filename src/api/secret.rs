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
        hex::encode(&digest[..6])
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

#[cfg(test)]
mod tests {
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
