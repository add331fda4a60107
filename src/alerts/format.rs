//! The message a webhook gets for an event, in its format: the event itself
//! (`standard`, Standard Webhooks), a Slack message (Block Kit blocks with a plain
//! `text` fallback) or a Microsoft Teams message (an Adaptive Card attachment, as
//! Teams' incoming webhooks and Workflows take it). The chat messages carry the
//! event's one-line text and its key figures ([`Event::figures`]); the event's id
//! is in their footer, so a repeat can be recognized by a person too.

use crate::alerts::events::Event;
use serde_json::{Value, json};

/// A webhook's message format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// The event as JSON, signed (Standard Webhooks).
    #[default]
    Standard,
    /// A Slack incoming webhook: Block Kit with a `text` fallback.
    Slack,
    /// A Microsoft Teams incoming webhook: a message with an Adaptive Card.
    Teams,
}

/// What a format that is none of them is told.
pub const UNKNOWN: &str = "not a webhook format: use standard, slack or teams";

/// Slack's limits: a header's text, a section's text, one field's text.
const SLACK_HEADER_CHARS: usize = 150;
const SLACK_SECTION_CHARS: usize = 3000;
const SLACK_FIELD_CHARS: usize = 2000;

impl Format {
    /// Every format, as the config names them.
    pub const ALL: [Format; 3] = [Format::Standard, Format::Slack, Format::Teams];

    /// The name in the config and in the mirror.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Standard => "standard",
            Format::Slack => "slack",
            Format::Teams => "teams",
        }
    }

    /// The format named `text`.
    pub fn parse(text: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// The request body of `event` in this format.
    pub fn body(self, event: &Event) -> String {
        match self {
            Format::Standard => event.to_json(),
            Format::Slack => slack(event).to_string(),
            Format::Teams => teams(event).to_string(),
        }
    }
}

/// The footer line: which event this is.
fn footer(event: &Event) -> String {
    format!("{} · {}", event.kind, event.id)
}

/// A Slack message. Names come from the service: the fallback `text` (read as
/// mrkdwn) has `&`, `<` and `>` escaped as Slack asks, so a name cannot mention
/// `@channel` or make a link, and the blocks use `plain_text` only.
fn slack(event: &Event) -> Value {
    let plain = |text: &str, max: usize| json!({"type": "plain_text", "text": clip(text, max)});
    let fields: Vec<Value> = event
        .figures()
        .into_iter()
        .take(10)
        .map(|(label, value)| plain(&format!("{label}: {value}"), SLACK_FIELD_CHARS))
        .collect();
    let mut blocks = vec![
        json!({"type": "header", "text": plain(&event.kind, SLACK_HEADER_CHARS)}),
        json!({"type": "section", "text": plain(&event.text, SLACK_SECTION_CHARS)}),
    ];
    if !fields.is_empty() {
        blocks.push(json!({"type": "section", "fields": fields}));
    }
    blocks.push(json!({"type": "context", "elements": [plain(&footer(event), SLACK_FIELD_CHARS)]}));
    json!({"text": slack_escape(&event.text), "blocks": blocks})
}

/// `&`, `<` and `>` as Slack's mrkdwn wants them in plain text.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A Teams message: one Adaptive Card (version 1.4, which Teams renders) with the
/// text, the figures as a fact set and the footer.
fn teams(event: &Event) -> Value {
    let facts: Vec<Value> = event
        .figures()
        .into_iter()
        .map(|(title, value)| json!({"title": title, "value": value}))
        .collect();
    let card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": event.kind, "weight": "Bolder", "size": "Medium", "wrap": true},
            {"type": "TextBlock", "text": event.text, "wrap": true},
            {"type": "FactSet", "facts": facts},
            {"type": "TextBlock", "text": footer(event), "isSubtle": true, "size": "Small", "wrap": true},
        ],
    });
    json!({
        "type": "message",
        "summary": event.text,
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": card,
        }],
    })
}

/// `text` cut to at most `max` characters (an ellipsis marks the cut).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> Event {
        Event {
            kind: "entitlement.threshold".into(),
            id: "evt_0123456789abcdef0123456789".into(),
            timestamp: "2026-11-25T05:30:02.114Z".into(),
            text: format!("{name} (organization 12) passed 80 % of its users entitlement"),
            data: json!({"as_of": "2026-11-25", "organization_name": name, "metric": "users",
                         "unit": "count", "used": 41.0, "limit": 50.0, "pct_used": 82.0,
                         "threshold": 80.0, "missing": "", "projected_exhaustion": null}),
        }
    }

    #[test]
    fn slack_escapes_the_fallback_and_keeps_blocks_plain() {
        let body: Value =
            serde_json::from_str(&Format::Slack.body(&event("<!channel> & Co"))).expect("json");
        let text = body["text"].as_str().expect("text");
        assert!(text.starts_with("&lt;!channel&gt; &amp; Co"), "{text}");
        let blocks = body["blocks"].as_array().expect("blocks");
        let fields = blocks[2]["fields"].as_array().expect("fields");
        assert!(
            fields.iter().all(|f| f["type"] == "plain_text"),
            "{fields:?}"
        );
        let shown: Vec<&str> = fields.iter().filter_map(|f| f["text"].as_str()).collect();
        assert!(
            shown.contains(&"Used: 41") && shown.contains(&"Limit: 50"),
            "{shown:?}"
        );
        assert!(
            !shown.iter().any(|f| f.starts_with("Missing data")),
            "{shown:?}"
        );
    }

    #[test]
    fn long_texts_are_clipped_to_slacks_limits() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        let body: Value =
            serde_json::from_str(&Format::Slack.body(&event(&"x".repeat(5000)))).expect("json");
        let section = body["blocks"][1]["text"]["text"].as_str().expect("section");
        assert_eq!(section.chars().count(), SLACK_SECTION_CHARS);
    }
}
