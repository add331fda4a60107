//! Taking one person's personal data out of text: free-text cells and the JSON of
//! raw documents. Used by `forget` (`crate::mirror::forget`) over what the mirror
//! holds, and by the writer for the documents of people erased while still on the
//! service.

use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;
use std::collections::HashSet;

/// What erased text is replaced by.
pub const ERASED: &str = "[erased]";

/// The shortest name or username looked for in free text: shorter ones ("Al", "jo")
/// are parts of too many words to be told from them.
const SHORTEST_NAME: usize = 4;

/// The texts that identify a person, as matchers over text.
#[derive(Debug, Clone, Default)]
pub struct Texts {
    /// Their e-mail addresses: looked for everywhere.
    emails: Option<Regex>,
    /// Their addresses, names and usernames: looked for in free text.
    all: Option<Regex>,
}

impl Texts {
    /// Matchers for `emails` and `names` (names and usernames). Case does not
    /// matter; a name matches as a whole word only.
    pub fn new<'a>(
        emails: impl IntoIterator<Item = &'a str>,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Texts {
        let emails: Vec<String> = distinct(emails, 3)
            .into_iter()
            .map(|e| regex::escape(&e))
            .collect();
        let names: Vec<String> = distinct(names, SHORTEST_NAME)
            .into_iter()
            .map(|n| whole_word(&n))
            .collect();
        let all: Vec<String> = emails.iter().chain(&names).cloned().collect();
        Texts {
            emails: matcher(&emails),
            all: matcher(&all),
        }
    }

    /// Whether nothing is looked for.
    pub fn is_empty(&self) -> bool {
        self.all.is_none()
    }

    fn pick(&self, names_too: bool) -> Option<&Regex> {
        match names_too {
            true => self.all.as_ref(),
            false => self.emails.as_ref(),
        }
    }

    /// Whether `text` holds one of the texts (`names_too`: names as well as addresses).
    pub fn hit(&self, text: &[u8], names_too: bool) -> bool {
        self.pick(names_too).is_some_and(|re| re.is_match(text))
    }

    /// `text` with every one of them replaced by [`ERASED`].
    pub fn scrub(&self, text: &str, names_too: bool) -> String {
        match self.pick(names_too) {
            Some(re) => {
                let out = re.replace_all(text.as_bytes(), ERASED.as_bytes());
                // Whole matches of valid UTF-8 replaced by ASCII stay valid UTF-8.
                String::from_utf8_lossy(&out).into_owned()
            }
            None => text.to_string(),
        }
    }
}

/// Trimmed, lower-case, distinct, at least `shortest` characters long.
fn distinct<'a>(texts: impl IntoIterator<Item = &'a str>, shortest: usize) -> Vec<String> {
    let mut seen: Vec<String> = texts
        .into_iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| t.chars().count() >= shortest)
        .collect();
    // Longest first: a name inside a longer one is replaced with it.
    seen.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    seen.dedup();
    seen
}

/// A pattern for `name` as a whole word: bounded where it begins or ends with a
/// word character (a boundary next to `.` or `@` would never match).
fn whole_word(name: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let (start, end) = (word(name.chars().next()), word(name.chars().last()));
    format!(
        "{}{}{}",
        if start { r"\b" } else { "" },
        regex::escape(name),
        if end { r"\b" } else { "" }
    )
}

fn matcher(patterns: &[String]) -> Option<Regex> {
    if patterns.is_empty() {
        return None;
    }
    RegexBuilder::new(&patterns.join("|"))
        .case_insensitive(true)
        .size_limit(64 << 20)
        .build()
        .ok()
}

/// The fields of a user object in the service's JSON that say who the person is.
const PERSON_KEYS: &[&str] = &[
    "username",
    "name",
    "email",
    "photo",
    "jobTitle",
    "companyName",
    "paymentCustomerId",
];

/// The fields of a project that name its owner, and the ones that hold the owner's id.
const OWNER_KEYS: &[&str] = &["owner", "ownerAvatar"];
const OWNER_IDS: &[&str] = &["ownerUserId", "developerProfileUserId"];

/// One raw document with the personal data of `people` taken out: their user
/// objects (an object with their `id` and an `email` or `username`) lose the fields
/// that say who they are, projects they own lose the owner's name, and every string
/// loses the addresses and names of `texts` and of those user objects. None when the
/// document holds nothing of theirs (it is then left as it is).
pub fn document(body: &[u8], people: &HashSet<i64>, texts: &Texts) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let mut found = Found::default();
    blank_people(&mut value, people, &mut found);
    let extra = Texts::new(
        found.emails.iter().map(String::as_str),
        found.names.iter().map(String::as_str),
    );
    let mut changed = found.objects > 0;
    for t in [texts, &extra] {
        if !t.is_empty() {
            changed |= scrub_strings(&mut value, t);
        }
    }
    if !changed {
        return None;
    }
    serde_json::to_vec(&value).ok()
}

/// The person objects blanked and the texts they held.
#[derive(Default)]
struct Found {
    objects: usize,
    emails: Vec<String>,
    names: Vec<String>,
}

fn id_in(object: &serde_json::Map<String, Value>, key: &str, people: &HashSet<i64>) -> bool {
    object
        .get(key)
        .and_then(Value::as_i64)
        .is_some_and(|id| people.contains(&id))
}

fn blank_people(value: &mut Value, people: &HashSet<i64>, found: &mut Found) {
    match value {
        Value::Object(object) => {
            let is_user = object.contains_key("email") || object.contains_key("username");
            if is_user && id_in(object, "id", people) {
                found.objects += 1;
                for key in PERSON_KEYS {
                    if let Some(slot) = object.get_mut(*key) {
                        if let Value::String(text) = slot {
                            match *key {
                                "email" => found.emails.push(text.clone()),
                                "name" | "username" => found.names.push(text.clone()),
                                _ => {}
                            }
                        }
                        *slot = Value::Null;
                    }
                }
                if let Some(Value::Object(staff)) = object.get_mut("staffInfo")
                    && let Some(slot) = staff.get_mut("companyName")
                {
                    *slot = Value::Null;
                }
            }
            if OWNER_IDS.iter().any(|key| id_in(object, key, people)) {
                for key in OWNER_KEYS {
                    if let Some(slot) = object.get_mut(*key) {
                        if let Value::String(text) = slot {
                            found.names.push(text.clone());
                        }
                        *slot = Value::Null;
                        found.objects += 1;
                    }
                }
            }
            for child in object.values_mut() {
                blank_people(child, people, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                blank_people(item, people, found);
            }
        }
        _ => {}
    }
}

/// Replaces the texts in every string of `value`; whether any was.
fn scrub_strings(value: &mut Value, texts: &Texts) -> bool {
    match value {
        Value::String(s) if texts.hit(s.as_bytes(), true) => {
            *s = texts.scrub(s, true);
            true
        }
        Value::Object(object) => object
            .values_mut()
            .fold(false, |any, v| scrub_strings(v, texts) | any),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, v| scrub_strings(v, texts) | any),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_match_anywhere_and_names_as_whole_words() {
        let t = Texts::new(["Ada@Example.com"], ["Ada Lovelace", "ada", "Al"]);
        assert!(t.hit(b"write to ADA@example.COM today", false));
        assert!(!t.hit(b"Ada Lovelace", false), "names only with names_too");
        assert!(t.hit(b"Ada Lovelace", true));
        assert!(!t.hit(b"Adam and Canada", true), "not inside a word");
        assert!(!t.hit(b"Al", true), "too short to look for");
        assert_eq!(
            t.scrub("ask ada@example.com (Ada Lovelace).", true),
            "ask [erased] ([erased])."
        );
        assert!(Texts::new([], []).is_empty());
    }

    #[test]
    fn a_document_loses_the_person_and_keeps_everyone_else() {
        let body = br#"{"organization":{"id":3,"name":"Org","users":[
            {"id":7,"username":"ada","name":"Ada Lovelace","email":"ada@example.com","photo":"p.png","staffInfo":{"isStaff":true,"companyName":"Analytical"},"projectCount":4},
            {"id":8,"username":"bob","name":"Bob","email":"bob@example.com"}],
            "notes":"ask ada@example.com","projects":[{"id":1,"owner":"Ada L.","ownerUserId":7}]}}"#;
        let people = HashSet::from([7]);
        let out = document(body, &people, &Texts::default()).expect("changed");
        let text = String::from_utf8(out).expect("utf-8");
        for gone in [
            "ada@example.com",
            "Ada Lovelace",
            "p.png",
            "Analytical",
            "Ada L.",
        ] {
            assert!(!text.contains(gone), "{gone}: {text}");
        }
        for kept in [
            "bob@example.com",
            "\"projectCount\":4",
            "\"id\":7",
            "\"isStaff\":true",
        ] {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        assert!(
            document(
                br#"{"id":8,"email":"bob@example.com"}"#,
                &people,
                &Texts::default()
            )
            .is_none()
        );
    }
}
