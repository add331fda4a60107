//! Dates and times on the pages as a person reads them: a mirror day or UTC
//! timestamp in the form [`crate::calendar::for_a_person`] gives, inside a
//! `<time>` whose `datetime` holds the exact text and whose `title` shows it on
//! hover; any other text as it is. Every table cell of both pages goes through
//! [`cell`], so no timestamp reaches a page as the API wrote it.

use crate::calendar::{Shown, for_a_person};
use maud::{Markup, PreEscaped, html};

/// `text` as a person reads it, to the day or to the minute.
pub fn moment(text: &str, shown: Shown) -> Markup {
    match for_a_person(text, shown) {
        Some(person) if person == text => html! { time datetime=(text) { (text) } },
        Some(person) => html! { time datetime=(text) title=(text) { (person) } },
        None => html! { (text) },
    }
}

/// A table cell's text, each mirror day or UTC timestamp in it (a cell of its own,
/// or inside words such as "upgraded on 2026-11-01T12:00:00.000Z") by its day with
/// the exact text on hover, the rest as it is.
pub fn cell(text: &str) -> Markup {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let (before, found, after) = next_moment(rest);
        out.push_str(&html! { (before) }.into_string());
        if let Some(found) = found {
            out.push_str(&moment(found, Shown::Day).into_string());
        }
        rest = after;
    }
    PreEscaped(out)
}

/// `text` cut at its first day or timestamp: the text before it, the moment, and
/// the text after (all of `text` before when it holds none). A moment starts at a
/// digit that follows no letter or digit and runs over the characters a
/// timestamp is written with, less a sentence's closing stop.
fn next_moment(text: &str) -> (&str, Option<&str>, &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let boundary = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if boundary && bytes[start].is_ascii_digit() {
            let len = bytes[start..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || b"-:.TZ".contains(b)))
                .unwrap_or(bytes.len() - start);
            let token = text[start..start + len].trim_end_matches(['.', ':', '-']);
            if for_a_person(token, Shown::Day).is_some() {
                let end = start + token.len();
                return (&text[..start], Some(token), &text[end..]);
            }
        }
        start += 1;
    }
    (text, None, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_reads_as_its_day_with_the_exact_text_on_hover_other_text_as_is() {
        assert_eq!(
            cell("2026-11-15T12:00:00.000Z").into_string(),
            "<time datetime=\"2026-11-15T12:00:00.000Z\" title=\"2026-11-15T12:00:00.000Z\">2026-11-15</time>"
        );
        assert_eq!(
            moment("2026-11-15T12:00:00.000Z", Shown::Minute).into_string(),
            "<time datetime=\"2026-11-15T12:00:00.000Z\" title=\"2026-11-15T12:00:00.000Z\">2026-11-15 12:00 UTC</time>"
        );
        assert_eq!(
            cell("2026-11-15").into_string(),
            "<time datetime=\"2026-11-15\">2026-11-15</time>"
        );
        assert_eq!(
            cell("Tom & <Jerry>").into_string(),
            "Tom &amp; &lt;Jerry&gt;"
        );
        assert_eq!(cell("").into_string(), "");
    }

    #[test]
    fn moments_inside_words_are_read_and_numbers_and_ids_are_left_alone() {
        assert_eq!(
            cell("upgraded on 2026-11-01T12:00:00.000Z.").into_string(),
            "upgraded on <time datetime=\"2026-11-01T12:00:00.000Z\" \
             title=\"2026-11-01T12:00:00.000Z\">2026-11-01</time>."
        );
        assert_eq!(
            cell("from 2026-10-30 to 2026-11-29").into_string(),
            "from <time datetime=\"2026-10-30\">2026-10-30</time> to \
             <time datetime=\"2026-11-29\">2026-11-29</time>"
        );
        for plain in [
            "1009/20104",
            "12.5 GB",
            "v2026-11-01",
            "2026-13-01",
            "20.0 %",
        ] {
            assert_eq!(cell(plain).into_string(), plain, "{plain}");
        }
    }
}
