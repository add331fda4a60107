//! Taking secrets out of JSON before it is printed or stored.
//!
//! Two forms: [`redact_json`] for a parsed value (the `api` command prints it), and
//! [`redact_body`] for the bytes the mirror keeps. The second works on the bytes
//! directly: parsing every project document into a `serde_json::Value` and writing
//! it back costs a twentieth of a large sync's CPU (docs/performance.md), and would
//! rewrite the body (sorted keys, no whitespace) where the mirror should keep it as
//! received.

/// JSON keys whose values are secrets in the API's answers (development keys of
/// get-project-info, the new project's key of create-project).
pub const SECRET_KEYS: &[&str] = &["apiKey", "hmacKey"];

/// What a secret string value becomes.
const REDACTED: &[u8] = b"\"[redacted]\"";

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

/// A JSON body with the string values of [`SECRET_KEYS`], at any depth, replaced by
/// `"[redacted]"`; every other byte is kept as received.
///
/// Meant for bodies that already parsed as JSON: it scans string tokens only (a
/// string followed by `:` is a key), so a value that merely reads like a key name
/// stays, and a body that is not JSON comes back unchanged or with at most a
/// string after a key-like token replaced.
pub fn redact_body(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'"', &raw[at..]).map(|i| at + i) {
        let Some(close) = string_end(raw, open) else {
            break;
        };
        at = close + 1;
        let after_key = skip_space(raw, at);
        if raw.get(after_key) != Some(&b':') || !is_secret_key(&raw[open..=close]) {
            continue;
        }
        let value = skip_space(raw, after_key + 1);
        if raw.get(value) != Some(&b'"') {
            continue;
        }
        let Some(value_end) = string_end(raw, value) else {
            break;
        };
        out.extend_from_slice(&raw[copied..value]);
        out.extend_from_slice(REDACTED);
        copied = value_end + 1;
        at = copied;
    }
    out.extend_from_slice(&raw[copied..]);
    out
}

/// Index of the quote closing the string token that opens at `open` (no
/// validation of what is between).
pub(crate) fn string_end(raw: &[u8], open: usize) -> Option<usize> {
    let mut at = open + 1;
    loop {
        let i = at + memchr::memchr2(b'"', b'\\', raw.get(at..)?)?;
        if raw[i] == b'"' {
            return Some(i);
        }
        // A backslash escapes the next byte, which may be a quote.
        at = i + 2;
    }
}

fn skip_space(raw: &[u8], mut at: usize) -> usize {
    while raw.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// Whether a string token (with its quotes) names a secret. Keys written with
/// escapes (`"api\u004bey"`) are decoded first, so they cannot slip through.
fn is_secret_key(token: &[u8]) -> bool {
    let inner = &token[1..token.len() - 1];
    if !inner.contains(&b'\\') {
        return SECRET_KEYS.iter().any(|k| k.as_bytes() == inner);
    }
    serde_json::from_slice::<String>(token).is_ok_and(|k| SECRET_KEYS.contains(&k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(body: &str) -> String {
        String::from_utf8(redact_body(body.as_bytes())).expect("utf-8")
    }

    #[test]
    fn redacts_nested_secret_keys_only() {
        let body = r#"{"developmentKeys":{"apiKey":"ei_123","hmacKey":"abc"},"project":{"name":"apiKey"},"list":[{"apiKey":"k"}]}"#;
        assert_eq!(
            redact(body),
            r#"{"developmentKeys":{"apiKey":"[redacted]","hmacKey":"[redacted]"},"project":{"name":"apiKey"},"list":[{"apiKey":"[redacted]"}]}"#
        );
    }

    #[test]
    fn keeps_layout_and_handles_escapes_and_non_strings() {
        let body = "{ \"a\\\"pi\" : \"x\",\n  \"apiKey\" :\t\"se\\\"cr\\\\et\", \"hmacKey\": null,\n  \"api\\u004bey\": \"hidden\", \"n\": \"apiKey\" }";
        let out = redact(body);
        assert_eq!(
            out,
            "{ \"a\\\"pi\" : \"x\",\n  \"apiKey\" :\t\"[redacted]\", \"hmacKey\": null,\n  \"api\\u004bey\": \"[redacted]\", \"n\": \"apiKey\" }"
        );
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(parsed["hmacKey"], serde_json::Value::Null);
    }

    #[test]
    fn agrees_with_the_value_form() {
        let body = r#"{"success":true,"developmentKeys":{"apiKey":"ei_9","hmacKey":"h"},"devices":[{"apiKey":"d","x":[1,2,{"hmacKey":"z"}]}],"text":"\"apiKey\":\"no\""}"#;
        let mut value: serde_json::Value = serde_json::from_str(body).expect("json");
        redact_json(&mut value);
        let scanned: serde_json::Value =
            serde_json::from_slice(&redact_body(body.as_bytes())).expect("json");
        assert_eq!(scanned, value);
    }

    #[test]
    fn truncated_input_does_not_panic() {
        for body in [r#"{"apiKey":"#, r#"{"apiKey":"abc"#, r#"{"apiKey"#, "\"\\"] {
            let _ = redact_body(body.as_bytes());
        }
    }
}
