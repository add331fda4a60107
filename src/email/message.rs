//! A message as it is sent: `From`, `To`, `Subject`, `Date`, a `Message-ID` derived
//! from what the message is (sent again after an answer that got lost, it has the
//! same id, and mail clients show it once), `Auto-Submitted: auto-generated` (RFC
//! 3834: no vacation replies to it), and a multipart/alternative of a plain-text
//! and an HTML part, inside a multipart/mixed with the attachments when there are
//! any. Addresses are checked here, once, for the config and the owners files.

use crate::email::EmailError;
use lettre::Address;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use sha2::{Digest, Sha256};

/// What a message says.
#[derive(Debug, Clone, Default)]
pub struct Content {
    pub subject: String,
    /// The plain-text part.
    pub text: String,
    /// The HTML part (a whole document).
    pub html: String,
    pub attachments: Vec<Attachment>,
}

/// A file attached.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// Its file name in the message.
    pub name: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

/// An address of the config (`key` names where), as a mailbox (`Name <address>`
/// or a bare address). Non-ASCII addresses are refused: few servers take them.
pub fn mailbox(text: &str, key: &str) -> Result<Mailbox, EmailError> {
    let refused = |why: String| EmailError::Setup(format!("{key}: {text:?} {why}"));
    if !text.is_ascii() {
        return Err(refused(
            "is not plain ASCII; write the address as the mail provider spells it in ASCII".into(),
        ));
    }
    text.parse::<Mailbox>()
        .map_err(|e| refused(format!("is not an e-mail address ({e})")))
}

/// A bare address of the config.
pub fn address(text: &str, key: &str) -> Result<Address, EmailError> {
    mailbox(text.trim(), key).map(|m| m.email)
}

/// The message to `to` (its address is the envelope's), ready for `DATA`. `key` says what the message is (the
/// subscription, date and recipient; the digest's events): its `Message-ID` is
/// derived from it.
pub fn build(
    from: &Mailbox,
    to: &Mailbox,
    key: &str,
    content: &Content,
) -> Result<Vec<u8>, EmailError> {
    let failed = |why: String| EmailError::Message {
        to: to.email.to_string(),
        why,
    };
    let digest = Sha256::digest(key.as_bytes());
    let id = format!(
        "<{}.orgledger@{}>",
        hex::encode(&digest[..16]),
        from.email.domain()
    );
    let body = MultiPart::alternative_plain_html(content.text.clone(), content.html.clone());
    let body = if content.attachments.is_empty() {
        body
    } else {
        let mut mixed = MultiPart::mixed().multipart(body);
        for file in &content.attachments {
            let kind = ContentType::parse(file.content_type)
                .map_err(|e| failed(format!("{}: {e}", file.content_type)))?;
            mixed = mixed.singlepart(
                lettre::message::Attachment::new(file.name.clone()).body(file.bytes.clone(), kind),
            );
        }
        mixed
    };
    let message = lettre::Message::builder()
        .from(from.clone())
        .to(to.clone())
        .subject(content.subject.clone())
        .date_now()
        .message_id(Some(id))
        .raw_header(HeaderValue::new(
            HeaderName::new_from_ascii_str("Auto-Submitted"),
            "auto-generated".to_string(),
        ))
        .multipart(body)
        .map_err(|e| failed(e.to_string()))?;
    Ok(message.formatted())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(attachments: Vec<Attachment>) -> Content {
        Content {
            subject: "Reports as of 2026-06-01: Zoë's organizations".into(),
            text: "Hello\n".into(),
            html: "<!DOCTYPE html><html lang=\"en\"><head><title>t</title></head><body><p>Hello</p></body></html>".into(),
            attachments,
        }
    }

    #[test]
    fn a_message_has_its_headers_both_parts_and_an_id_that_follows_its_key() {
        let from = mailbox("orgledger <reports@example.com>", "from").expect("from");
        let to = mailbox("Finance <finance@example.com>", "to").expect("to");
        let file = Attachment {
            name: "orgledger-2026-06-01.xlsx".into(),
            content_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            bytes: vec![0x50, 0x4b, 3, 4],
        };
        let bytes = build(
            &from,
            &to,
            "weekly/2026-06-01/finance@example.com",
            &content(vec![file]),
        )
        .expect("message");
        let text = String::from_utf8(bytes).expect("7-bit message");
        let header = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{name}: ")))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no {name}: {text}"))
        };
        assert!(header("From").contains("reports@example.com"));
        assert_eq!(header("To"), "To: Finance <finance@example.com>");
        assert!(header("Date").len() > 10);
        assert_eq!(header("Auto-Submitted"), "Auto-Submitted: auto-generated");
        assert!(text.contains("multipart/mixed") && text.contains("multipart/alternative"));
        assert!(text.contains("text/plain") && text.contains("text/html"));
        assert!(text.contains("orgledger-2026-06-01.xlsx"));
        let id = header("Message-ID");
        let again = build(
            &from,
            &to,
            "weekly/2026-06-01/finance@example.com",
            &content(vec![]),
        )
        .expect("message");
        let again = String::from_utf8(again).expect("7-bit message");
        assert!(again.contains(&id), "the same key, the same id");
        let other = build(
            &from,
            &to,
            "weekly/2026-06-02/finance@example.com",
            &content(vec![]),
        )
        .expect("message");
        assert!(!String::from_utf8(other).expect("7-bit").contains(&id));
        assert!(
            !again.contains("multipart/mixed"),
            "no attachment, no mixed part"
        );
    }

    #[test]
    fn addresses_are_checked_and_named_by_their_key() {
        let err = address("not an address", "config [email] from").expect_err("bad");
        assert!(err.to_string().contains("config [email] from"), "{err}");
        assert!(address("zoë@example.com", "k").is_err());
        assert_eq!(
            mailbox("Ops <ops@example.com>", "k")
                .expect("named")
                .email
                .to_string(),
            "ops@example.com"
        );
    }
}
