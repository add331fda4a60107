//! Taking one person's personal data out of text: free-text cells and the JSON of
//! raw documents. Used by `forget` (`crate::mirror::forget`) over what the mirror
//! holds, and by the writer for the documents of people erased while still on the
//! service.

use crate::mirror::privacy;
use crate::mirror::spec::{Identifies, PersonalField, Whose};
use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;
use std::collections::HashSet;

/// What erased text is replaced by.
pub const ERASED: &str = "[erased]";

/// The shortest name or username looked for in free text: shorter ones ("Al", "jo")
/// are parts of too many words to be told from them.
const SHORTEST_NAME: usize = 4;

/// The compiled size one matcher may take. A person's texts that need more are
/// split over several matchers; it takes megabytes of names to need a second one.
const MATCHER_SIZE: usize = 64 << 20;

/// The texts that identify a person, as matchers over text.
#[derive(Debug, Clone, Default)]
pub struct Texts {
    /// Their e-mail addresses: looked for everywhere.
    emails: Vec<Regex>,
    /// Their addresses, names and usernames: looked for in free text.
    all: Vec<Regex>,
    /// The lengths of texts no matcher can hold on its own (never the texts: they
    /// are personal).
    too_long: Vec<usize>,
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
        let mut texts = Texts::default();
        // Every address is in `all` too: a pattern too long is counted once.
        matchers(&emails, &mut texts.emails, &mut Vec::new());
        matchers(&all, &mut texts.all, &mut texts.too_long);
        texts
    }

    /// Whether nothing is looked for.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The lengths of the texts that cannot be looked for: a single one needs more
    /// than a matcher holds.
    pub fn too_long(&self) -> &[usize] {
        &self.too_long
    }

    fn pick(&self, names_too: bool) -> &[Regex] {
        match names_too {
            true => &self.all,
            false => &self.emails,
        }
    }

    /// Whether `text` holds one of the texts (`names_too`: names as well as addresses).
    pub fn hit(&self, text: &[u8], names_too: bool) -> bool {
        self.pick(names_too).iter().any(|re| re.is_match(text))
    }

    /// `text` with every one of them replaced by [`ERASED`].
    pub fn scrub(&self, text: &str, names_too: bool) -> String {
        String::from_utf8_lossy(&self.scrub_bytes(text.as_bytes(), names_too)).into_owned()
    }

    /// Bytes with every one of them replaced by [`ERASED`]. Whole matches of valid
    /// UTF-8 replaced by ASCII leave valid UTF-8 valid.
    pub fn scrub_bytes(&self, text: &[u8], names_too: bool) -> Vec<u8> {
        // In the matchers' order, longest texts first: a name inside a longer one
        // goes with it.
        self.pick(names_too).iter().fold(text.to_vec(), |text, re| {
            re.replace_all(&text, ERASED.as_bytes()).into_owned()
        })
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

/// Matchers for `patterns`, in their order, into `out`: all in one while they fit
/// [`MATCHER_SIZE`], else each half on its own. A single pattern that does not fit
/// has its length put in `too_long`.
fn matchers(patterns: &[String], out: &mut Vec<Regex>, too_long: &mut Vec<usize>) {
    if patterns.is_empty() {
        return;
    }
    let built = RegexBuilder::new(&patterns.join("|"))
        .case_insensitive(true)
        .size_limit(MATCHER_SIZE)
        .build();
    match built {
        Ok(re) => out.push(re),
        Err(_) if patterns.len() > 1 => {
            let (first, second) = patterns.split_at(patterns.len() / 2);
            matchers(first, out, too_long);
            matchers(second, out, too_long);
        }
        // Escaped text is always a valid pattern: only its size can fail.
        Err(_) => too_long.extend(patterns.iter().map(String::len)),
    }
}

/// Why a raw document could not be looked through.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// Its body is not JSON.
    #[error("its body is not JSON ({0})")]
    NotJson(serde_json::Error),
    /// The texts found in it cannot be looked for.
    #[error("{} of the texts found in it are too long to look for", .0.len())]
    TooLong(Vec<usize>),
    /// Its cleaned JSON could not be written.
    #[error("its cleaned body cannot be written ({0})")]
    Unwritable(serde_json::Error),
}

/// Where the service's JSON holds a kind of person's id and fields, as the table
/// specs declare them (`crate::mirror::spec::Person`).
struct JsonPerson {
    /// The key that holds their id: `id` in their own record.
    id_key: &'static str,
    /// Whether the object is their own record (else another that names them).
    own: bool,
    /// Their fields.
    fields: Vec<&'static PersonalField>,
}

/// Every kind of person the specs declare, by where the JSON holds their id; a
/// field declared by several tables (members, collaborators and users share the
/// user record's) once.
fn json_people() -> Vec<JsonPerson> {
    let mut out: Vec<JsonPerson> = Vec::new();
    for (_, person) in privacy::people() {
        let (id_key, own) = match person.whose {
            Whose::Own(_) => ("id", true),
            Whose::Named { json, .. } => (json, false),
        };
        let at = match out.iter().position(|p| p.id_key == id_key && p.own == own) {
            Some(at) => at,
            None => {
                out.push(JsonPerson {
                    id_key,
                    own,
                    fields: Vec::new(),
                });
                out.len() - 1
            }
        };
        for field in person.fields {
            if !out[at].fields.iter().any(|f| f.json == field.json) {
                out[at].fields.push(field);
            }
        }
    }
    out
}

/// A pattern that finds `user_id` under a key that holds a person's id in the
/// service's JSON, as the specs declare them (the cheap test of whether a
/// document may hold that person).
pub fn id_pattern(user_id: i64) -> Regex {
    let keys: Vec<String> = json_people()
        .iter()
        .map(|p| regex::escape(p.id_key))
        .collect();
    Regex::new(&format!(
        r#""(?:{})"\s*:\s*{user_id}(?:[^0-9.eE]|$)"#,
        keys.join("|")
    ))
    .expect("escaped keys and an integer make a valid pattern")
}

/// One raw document with the personal data of `people` taken out: their user
/// objects (an object with their `id` and an address or a login name) lose the
/// fields that say who they are, objects that name them (a project's owner) lose
/// those fields, and every string loses the addresses and names of `texts` and of
/// those objects. `None` when the document holds nothing of theirs (it is then
/// left as it is).
pub fn document(
    body: &[u8],
    people: &HashSet<i64>,
    texts: &Texts,
) -> Result<Option<Vec<u8>>, Unreadable> {
    let mut value: Value = serde_json::from_slice(body).map_err(Unreadable::NotJson)?;
    let mut found = Found::default();
    blank_people(&mut value, people, &json_people(), &mut found);
    let extra = Texts::new(
        found.emails.iter().map(String::as_str),
        found.names.iter().map(String::as_str),
    );
    if !extra.too_long().is_empty() {
        return Err(Unreadable::TooLong(extra.too_long().to_vec()));
    }
    let mut changed = found.objects > 0;
    for t in [texts, &extra] {
        if !t.is_empty() {
            changed |= scrub_strings(&mut value, t);
        }
    }
    if !changed {
        return Ok(None);
    }
    serde_json::to_vec(&value)
        .map(Some)
        .map_err(Unreadable::Unwritable)
}

/// The person objects blanked and the texts they held.
#[derive(Default)]
struct Found {
    objects: usize,
    emails: Vec<String>,
    names: Vec<String>,
}

impl Found {
    fn text(&mut self, identifies: Identifies, text: &str) {
        match identifies {
            Identifies::Address => self.emails.push(text.to_string()),
            Identifies::Handle | Identifies::Name => self.names.push(text.to_string()),
            Identifies::Other => {}
        }
    }
}

fn id_in(object: &serde_json::Map<String, Value>, key: &str, people: &HashSet<i64>) -> bool {
    object
        .get(key)
        .and_then(Value::as_i64)
        .is_some_and(|id| people.contains(&id))
}

/// Whether `object` is one of `people`'s as `person` says: it holds their id, and
/// if it is to be their own record, an address or a login name too (another kind
/// of object may have the same `id`).
fn is_theirs(
    object: &serde_json::Map<String, Value>,
    person: &JsonPerson,
    people: &HashSet<i64>,
) -> bool {
    id_in(object, person.id_key, people)
        && (!person.own
            || person.fields.iter().any(|f| {
                matches!(f.identifies, Identifies::Address | Identifies::Handle)
                    && object.contains_key(f.json[0])
            }))
}

/// Empties one field (at its path below `object`); whether it was there.
fn blank(
    object: &mut serde_json::Map<String, Value>,
    field: &PersonalField,
    found: &mut Found,
) -> bool {
    let Some((last, parents)) = field.json.split_last() else {
        return false;
    };
    let mut at = object;
    for key in parents {
        match at.get_mut(*key) {
            Some(Value::Object(inner)) => at = inner,
            _ => return false,
        }
    }
    let Some(slot) = at.get_mut(*last) else {
        return false;
    };
    if let Value::String(text) = slot {
        found.text(field.identifies, text);
    }
    *slot = Value::Null;
    true
}

fn blank_people(value: &mut Value, people: &HashSet<i64>, kinds: &[JsonPerson], found: &mut Found) {
    match value {
        Value::Object(object) => {
            for person in kinds {
                if !is_theirs(object, person, people) {
                    continue;
                }
                let blanked = person
                    .fields
                    .iter()
                    .filter(|field| blank(object, field, found))
                    .count();
                found.objects += if person.own { 1 } else { blanked };
            }
            for child in object.values_mut() {
                blank_people(child, people, kinds, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                blank_people(item, people, kinds, found);
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
        let out = document(body, &people, &Texts::default())
            .expect("JSON")
            .expect("changed");
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
            .expect("JSON")
            .is_none()
        );
        // A project whose id is the person's is not their record.
        assert!(
            document(
                br#"{"id":7,"name":"Ada's project"}"#,
                &people,
                &Texts::default()
            )
            .expect("JSON")
            .is_none()
        );
        assert!(matches!(
            document(b"{\"id\": 7, <html>", &people, &Texts::default()),
            Err(Unreadable::NotJson(_))
        ));
    }

    #[test]
    fn texts_beyond_one_matcher_are_split_over_several_and_each_is_found() {
        // A thousand mathematical letters each take a matcher a hundred times the
        // space of a plain letter: 700 such names need more than one.
        let names: Vec<String> = (0..700)
            .map(|i| format!("{}{i}", "\u{1d538}".repeat(1000)))
            .collect();
        let t = Texts::new(["ada@example.com"], names.iter().map(String::as_str));
        assert!(t.all.len() > 1, "{} matchers", t.all.len());
        assert!(t.too_long().is_empty());
        for name in [&names[0], &names[350], &names[699]] {
            let text = format!("thanks to {name} and ada@example.com.");
            assert!(t.hit(text.as_bytes(), true));
            assert_eq!(t.scrub(&text, true), "thanks to [erased] and [erased].");
        }
    }
}
