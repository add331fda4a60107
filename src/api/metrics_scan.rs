//! A fast reader for get-whitelabel-user's daily metrics, the bulk of a sync's bytes.
//!
//! A white label user answer is almost all `dailyMetrics`: a year of flat records of
//! integers and two timestamps, over a million records in a large sync, and through
//! serde_json's generic machinery that list costs a fifth of a large sync's CPU; the
//! scanner brings all daily-metrics parsing to ~4 % of it (`perf`,
//! docs/performance.md). Here it is read by a scanner that knows the
//! record's fields and expects them in the order the service writes them; the rest
//! of the answer still goes through serde.
//!
//! The scanner accepts only input whose meaning is certain: plain integers, `null`,
//! timestamps the shared [`Timestamp`] parser accepts, strings without escapes, known
//! keys, each once. On anything else (a float, an unknown key, an escape, a syntax
//! error) it gives up and the whole body is parsed by serde alone, which then gives
//! the answer, or the error, it always gave. So the fast path never changes a
//! result: tests compare the two on generated input.

use crate::api::models::{DailyMetrics, WhitelabelUserResponse};
use crate::api::tolerant::{DatedTimestamp, Timestamp};

/// Parses a get-whitelabel-user body (see the module documentation).
pub fn parse_whitelabel_user(text: &str) -> Result<WhitelabelUserResponse, serde_json::Error> {
    if let Some(fast) = parse_fast(text) {
        return Ok(fast);
    }
    serde_json::from_str(text)
}

/// The daily metrics by the scanner, the rest of the body by serde with an empty
/// list in their place; `None` when either declines.
fn parse_fast(text: &str) -> Option<WhitelabelUserResponse> {
    let start = member_value(text.as_bytes(), &[b"user", b"dailyMetrics"])?;
    let (metrics, end) = scan_list(text.as_bytes(), start)?;
    let mut rest = String::with_capacity(text.len() - (end - start) + 2);
    rest.push_str(text.get(..start)?);
    rest.push_str("[]");
    rest.push_str(text.get(end..)?);
    let mut value: WhitelabelUserResponse = serde_json::from_str(&rest).ok()?;
    value.user.as_mut()?.daily_metrics = metrics;
    Some(value)
}

/// Where a daily-metrics field goes.
#[derive(Clone, Copy)]
enum Slot {
    /// A timestamp whose written day matters (the record's `date`); parsed like
    /// serde parses it, offset kept.
    Dated(fn(&mut DailyMetrics) -> &mut Option<DatedTimestamp>),
    Time(fn(&mut DailyMetrics) -> &mut Option<Timestamp>),
    Int(fn(&mut DailyMetrics) -> &mut Option<i64>),
}

/// The record's fields as the service names them, in the order it writes them.
const FIELDS: [(&str, Slot); 20] = [
    ("date", Slot::Dated(|m| &mut m.date)),
    ("totalUsers", Slot::Int(|m| &mut m.total_users)),
    ("totalStaffUsers", Slot::Int(|m| &mut m.total_staff_users)),
    ("totalProjects", Slot::Int(|m| &mut m.total_projects)),
    (
        "totalCurrentContractCpuComputeTimeSeconds",
        Slot::Int(|m| &mut m.total_current_contract_cpu_compute_time_seconds),
    ),
    (
        "totalCurrentContractGpuComputeTimeSeconds",
        Slot::Int(|m| &mut m.total_current_contract_gpu_compute_time_seconds),
    ),
    (
        "totalCurrentContractComputeTimeSeconds",
        Slot::Int(|m| &mut m.total_current_contract_compute_time_seconds),
    ),
    (
        "totalStorageSizeBytes",
        Slot::Int(|m| &mut m.total_storage_size_bytes),
    ),
    ("usersAdded", Slot::Int(|m| &mut m.users_added)),
    ("usersDeleted", Slot::Int(|m| &mut m.users_deleted)),
    ("projectsAdded", Slot::Int(|m| &mut m.projects_added)),
    ("projectsDeleted", Slot::Int(|m| &mut m.projects_deleted)),
    (
        "cpuComputeTimeSeconds",
        Slot::Int(|m| &mut m.cpu_compute_time_seconds),
    ),
    (
        "gpuComputeTimeSeconds",
        Slot::Int(|m| &mut m.gpu_compute_time_seconds),
    ),
    (
        "computeTimeSeconds",
        Slot::Int(|m| &mut m.compute_time_seconds),
    ),
    (
        "storageBytesAdded",
        Slot::Int(|m| &mut m.storage_bytes_added),
    ),
    (
        "storageBytesDeleted",
        Slot::Int(|m| &mut m.storage_bytes_deleted),
    ),
    ("staffUsersAdded", Slot::Int(|m| &mut m.staff_users_added)),
    (
        "staffUsersDeleted",
        Slot::Int(|m| &mut m.staff_users_deleted),
    ),
    (
        "computeTimeCalculatedSince",
        Slot::Time(|m| &mut m.compute_time_calculated_since),
    ),
];

/// A cursor over the body's bytes.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn skip_ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string without escapes (`None` for one with escapes or control bytes),
    /// as raw bytes between the quotes.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = self.b.get(self.i..)?;
        let n = memchr::memchr2(b'"', b'\\', rest)?;
        let body = &rest[..n];
        if rest[n] != b'"' || body.iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i += n + 1;
        Some(body)
    }

    /// Skips any string, escapes included (no validation: serde reads it later).
    fn skip_string(&mut self) -> Option<()> {
        self.i = crate::api::secret_scrub::string_end(self.b, self.i)? + 1;
        Some(())
    }

    /// Skips one value of any kind (no validation: serde reads it later).
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => self.skip_string()?,
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.i += 1;
                }
                b',' | b':' if depth > 0 => self.i += 1,
                _ => {
                    let n = self.b[self.i..]
                        .iter()
                        .position(|c| {
                            matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                        })
                        .unwrap_or(self.b.len() - self.i);
                    if n == 0 {
                        return None;
                    }
                    self.i += n;
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// A plain JSON integer: `None` for a fraction or exponent, a leading zero,
    /// `-0`, or a value outside `i64` (serde decides what those mean).
    fn integer(&mut self) -> Option<i64> {
        let negative = self.b.get(self.i) == Some(&b'-');
        let start = self.i + usize::from(negative);
        let digits = self.b.get(start..)?;
        let len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        if len == 0 || (digits[0] == b'0' && (len > 1 || negative)) {
            return None;
        }
        if matches!(digits.get(len), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut n: i64 = 0;
        for &c in &digits[..len] {
            n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
        }
        self.i = start + len;
        Some(if negative { -n } else { n })
    }

    /// Consumes `"key":` if it comes next.
    fn expect_key(&mut self, key: &str) -> bool {
        let key = key.as_bytes();
        let at = self.i;
        let end = at + key.len() + 2;
        let matched = self.b.get(at) == Some(&b'"')
            && self.b.get(at + 1..end - 1) == Some(key)
            && self.b.get(end - 1) == Some(&b'"');
        if matched {
            self.i = end;
            if self.eat(b':').is_some() {
                return true;
            }
        }
        self.i = at;
        false
    }
}

/// Offset of the value at `path` (object members, outermost first), found by
/// walking the structure without parsing what it passes. Keys are compared as raw
/// bytes, so a key written with escapes is not found (and serde reads the list).
fn member_value(b: &[u8], path: &[&[u8]]) -> Option<usize> {
    let mut c = Cursor { b, i: 0 };
    let mut path = path.iter();
    let mut want = path.next()?;
    c.eat(b'{')?;
    loop {
        let key = c.plain_string()?;
        c.eat(b':')?;
        if key == *want {
            let Some(next) = path.next() else {
                c.skip_ws();
                return Some(c.i);
            };
            want = next;
            c.eat(b'{')?;
            continue;
        }
        c.skip_value()?;
        match c.peek()? {
            b',' => c.i += 1,
            _ => return None,
        }
    }
}

/// Reads the list starting at `start`; returns the records and the offset after
/// the closing bracket.
fn scan_list(b: &[u8], start: usize) -> Option<(Vec<DailyMetrics>, usize)> {
    let mut c = Cursor { b, i: start };
    c.eat(b'[')?;
    let mut out = Vec::with_capacity(366);
    if c.peek()? == b']' {
        return Some((out, c.i + 1));
    }
    let mut memo = Memo::default();
    loop {
        out.push(scan_record(&mut c, &mut memo)?);
        match c.peek()? {
            b',' => c.i += 1,
            b']' => return Some((out, c.i + 1)),
            _ => return None,
        }
    }
}

/// The last text and value of each timestamp field: consecutive records mostly
/// repeat `computeTimeCalculatedSince`, which is then not parsed again.
type Memo<'a> = [Option<(&'a [u8], Timestamp)>; FIELDS.len()];

fn scan_record<'a>(c: &mut Cursor<'a>, memo: &mut Memo<'a>) -> Option<DailyMetrics> {
    c.eat(b'{')?;
    let mut record = DailyMetrics::default();
    if c.peek()? == b'}' {
        c.i += 1;
        return Some(record);
    }
    let mut seen = 0u32;
    let mut next = 0;
    loop {
        c.skip_ws();
        let field = match FIELDS.get(next) {
            Some((key, _)) if c.expect_key(key) => next,
            _ => {
                let key = c.plain_string()?;
                c.eat(b':')?;
                FIELDS.iter().position(|(name, _)| name.as_bytes() == key)?
            }
        };
        if seen & (1 << field) != 0 {
            return None;
        }
        seen |= 1 << field;
        next = field + 1;
        scan_field(c, FIELDS[field].1, &mut record, &mut memo[field])?;
        match c.peek()? {
            b',' => c.i += 1,
            b'}' => {
                c.i += 1;
                return Some(record);
            }
            _ => return None,
        }
    }
}

fn scan_field<'a>(
    c: &mut Cursor<'a>,
    slot: Slot,
    record: &mut DailyMetrics,
    memo: &mut Option<(&'a [u8], Timestamp)>,
) -> Option<()> {
    if c.peek()? == b'n' {
        return (c.b.get(c.i..c.i + 4) == Some(b"null")).then(|| c.i += 4);
    }
    match slot {
        Slot::Int(field) => *field(record) = Some(c.integer()?),
        // Dates differ from record to record: nothing to remember.
        Slot::Dated(field) => {
            let text = c.plain_string()?;
            *field(record) = Some(std::str::from_utf8(text).ok()?.parse().ok()?);
        }
        Slot::Time(field) => {
            let text = c.plain_string()?;
            let value = match memo {
                Some((last, value)) if *last == text => *value,
                _ => std::str::from_utf8(text).ok()?.parse().ok()?,
            };
            *memo = Some((text, value));
            *field(record) = Some(value);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The fast path and serde alone agree: same value, or both an error.
    fn agree(text: &str) -> bool {
        let fast = parse_whitelabel_user(text).map(|v| serde_json::to_string(&v).ok());
        let slow = serde_json::from_str::<WhitelabelUserResponse>(text)
            .map(|v| serde_json::to_string(&v).ok());
        match (fast, slow) {
            (Ok(a), Ok(b)) => a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        }
    }

    fn body(user_head: &str, metrics: &str, user_tail: &str) -> String {
        format!(
            r#"{{"success":true,"user":{{"id":7,"name":"Zoë \"Z\" Ü"{user_head},"dailyMetrics":{metrics}{user_tail}}}}}"#
        )
    }

    const DAY: &str = r#"{"date":"2025-11-24T00:00:00.000Z","totalUsers":1,"totalStaffUsers":0,"totalProjects":0,"totalCurrentContractCpuComputeTimeSeconds":68631,"totalCurrentContractGpuComputeTimeSeconds":0,"totalCurrentContractComputeTimeSeconds":68631,"totalStorageSizeBytes":72253173,"usersAdded":0,"usersDeleted":0,"projectsAdded":0,"projectsDeleted":0,"cpuComputeTimeSeconds":26,"gpuComputeTimeSeconds":0,"computeTimeSeconds":26,"storageBytesAdded":593064,"storageBytesDeleted":0,"staffUsersAdded":0,"staffUsersDeleted":0,"computeTimeCalculatedSince":"2022-10-15T00:00:00.000Z"}"#;

    /// The user of a body the fast path takes and serde agrees on.
    fn fast_user(text: &str) -> crate::api::models::WhitelabelUser {
        assert!(parse_fast(text).is_some(), "fast path declined");
        assert!(agree(text));
        parse_whitelabel_user(text)
            .expect("parses")
            .user
            .expect("user")
    }

    #[test]
    fn the_service_shape_takes_the_fast_path_and_matches_serde() {
        let text = body(
            r#","projects":[{"id":1,"name":"a]}\"b"}]"#,
            &format!("[{DAY},{DAY}]"),
            r#","evaluation":true"#,
        );
        let user = fast_user(&text);
        assert_eq!(user.daily_metrics.len(), 2);
        assert_eq!(user.daily_metrics[1].storage_bytes_added, Some(593_064));
        assert_eq!(user.evaluation, Some(true));
        assert_eq!(user.projects[0].name.as_deref(), Some("a]}\"b"));
    }

    #[test]
    fn every_field_is_read_into_its_own_slot() {
        for (i, (key, slot)) in FIELDS.iter().enumerate() {
            let value = match slot {
                Slot::Int(_) => format!("{}", 1000 + i),
                Slot::Time(_) | Slot::Dated(_) => {
                    format!("\"2024-02-{:02}T10:00:00Z\"", i + 1)
                }
            };
            let text = body("", &format!(r#"[{{"{key}":{value}}}]"#), "");
            assert!(parse_fast(&text).is_some(), "{key}: fast path declined");
            assert!(agree(&text), "{key}");
        }
    }

    #[test]
    fn a_date_with_an_offset_keeps_its_written_day_on_both_paths() {
        let text = body(
            "",
            r#"[{"date":"2026-06-10T00:00:00+02:00","totalUsers":1},{"date":"2026-06-10T23:30:00.000-05:00"}]"#,
            "",
        );
        let days: Vec<String> = fast_user(&text)
            .daily_metrics
            .iter()
            .filter_map(|m| m.date.map(|d| d.day().to_string()))
            .collect();
        assert_eq!(days, ["2026-06-10", "2026-06-10"]);
    }

    #[test]
    fn odd_input_falls_back_to_serde() {
        for metrics in [
            r#"[{"totalUsers":3.0}]"#,
            r#"[{"totalUsers":2.5}]"#,
            r#"[{"totalUsers":1e3}]"#,
            r#"[{"totalUsers":-0}]"#,
            r#"[{"totalUsers":007}]"#,
            r#"[{"totalUsers":99999999999999999999}]"#,
            r#"[{"totalUsers":-9223372036854775808}]"#,
            r#"[{"totalUsers":"3"}]"#,
            r#"[{"date":"gestern"}]"#,
            r#"[{"date":"2025-01-01"}]"#,
            r#"[{"date":"2025-01-01T00:00:00\u002e000Z"}]"#,
            r#"[{"totalUsers":1,"totalUsers":2}]"#,
            r#"[{"newField":{"a":[1,2]},"totalUsers":1}]"#,
            r#"[{"total\u0055sers":1}]"#,
            r#"[null]"#,
            r#"null"#,
            r#"[{"totalUsers":1},]"#,
            r#"[{"totalUsers":1}"#,
            r#"[{"totalUsers":tru}]"#,
            r#"[ { "totalUsers" : 1 , "date" : null } , {} ]"#,
            r#"[{"date""totalUsers":1}]"#,
        ] {
            let text = body(r#","trials":[]"#, metrics, r#","ambassador":false"#);
            assert!(agree(&text), "{metrics}");
        }
    }

    #[test]
    fn a_broken_rest_of_the_body_is_serdes_error() {
        let text = body(r#","suspended":"yes""#, &format!("[{DAY}]"), "");
        let fast = parse_whitelabel_user(&text).expect_err("bad suspended");
        let slow = serde_json::from_str::<WhitelabelUserResponse>(&text).expect_err("bad");
        assert_eq!(fast.to_string(), slow.to_string());
        let twice = body(&format!(r#","dailyMetrics":[{DAY}]"#), "[]", "");
        assert!(parse_whitelabel_user(&twice).is_err(), "duplicate field");
        assert!(agree(&twice));
    }

    /// Mostly values of the slot's own type, sometimes one the scanner declines.
    fn field_value(slot: Slot) -> impl Strategy<Value = String> {
        let typed = match slot {
            Slot::Int(_) => prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                (0i64..100_000).prop_map(|n| n.to_string()),
            ]
            .boxed(),
            Slot::Time(_) | Slot::Dated(_) => prop_oneof![
                Just("\"2025-03-04T05:06:07.890Z\"".to_string()),
                Just("\"2025-03-04T05:06:07+02:00\"".to_string()),
                Just("\"2025-03-04T00:00:00.000+02:00\"".to_string()),
                Just("\"2025-03-04T23:00:00-05:00\"".to_string()),
            ]
            .boxed(),
        };
        prop_oneof![
            16 => typed,
            2 => Just("null".to_string()),
            1 => prop_oneof![
                Just("1.0".to_string()),
                Just("true".to_string()),
                Just("12".to_string()),
                Just("\"2025-02-30T00:00:00Z\"".to_string()),
            ],
        ]
    }

    /// A record in the service's field order, with some fields left out.
    fn record() -> impl Strategy<Value = String> {
        let cells: Vec<_> = FIELDS
            .iter()
            .map(|(key, slot)| {
                (prop::bool::weighted(0.9), field_value(*slot))
                    .prop_map(move |(keep, v)| keep.then(|| format!("\"{key}\":{v}")))
            })
            .collect();
        (cells, prop::bool::ANY, prop::bool::weighted(0.1)).prop_map(|(cells, spaced, shuffled)| {
            let mut cells: Vec<String> = cells.into_iter().flatten().collect();
            if shuffled {
                cells.reverse();
            }
            let sep = if spaced { " , " } else { "," };
            format!("{{{}}}", cells.join(sep))
        })
    }

    #[test]
    fn generated_lists_exercise_both_paths() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = prop::collection::vec(record(), 1..4);
        let (mut fast, mut declined) = (0, 0);
        for _ in 0..300 {
            let records = strategy.new_tree(&mut runner).expect("tree").current();
            let text = body("", &format!("[{}]", records.join(",")), "");
            match parse_fast(&text) {
                Some(_) => fast += 1,
                None => declined += 1,
            }
        }
        assert!(
            fast >= 30 && declined >= 30,
            "fast {fast}, declined {declined}"
        );
    }

    proptest! {
        #[test]
        fn fast_and_serde_agree_on_generated_lists(
            records in prop::collection::vec(record(), 0..6),
            odd in prop::option::weighted(0.1, prop_oneof![
                Just(r#""unknown":1"#),
                Just(r#""totalUsers":1"#),
                Just(r#""date":"2025-01-01T00:00:00\u005a""#),
            ]),
        ) {
            let mut records = records;
            if let (Some(odd), Some(first)) = (odd, records.first_mut()) {
                first.insert_str(1, &format!("{odd},"));
            }
            let text = body("", &format!("[{}]", records.join(",")), "");
            prop_assert!(agree(&text), "{}", text);
        }
    }
}
