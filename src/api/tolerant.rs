//! Lenient parsing for values a live service sends in more than one shape.
//!
//! The API promises integers and ISO 8601 timestamps (docs/api.md), but JSON producers
//! routinely emit `3.0` for an integer, drop the fractional seconds, or send a bare
//! date. Rejecting a whole project document over such a detail would stop a sync, so
//! these helpers accept every shape that means the same value and reject, with a
//! message naming the text, anything that would lose information (`3.5`, `"abc"`).
//!
//! Everything here is a serde `Visitor`: the largest response (thousands of users
//! with 365 daily-metrics records each) must not go through `serde_json::Value`.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, Utc};
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A point in time, parsed leniently and always written as fixed-width UTC text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

/// A timestamp text that none of the accepted ISO 8601 shapes matches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid timestamp {0:?}: expected ISO 8601 such as 2026-01-31T10:00:00Z, \
     2026-01-31T10:00:00.123+02:00, 2026-01-31T10:00:00 or 2026-01-31"
)]
pub struct TimestampParseError(pub String);

impl Timestamp {
    /// The text the mirror stores (`2026-01-31T10:00:00.000Z`): always UTC and always
    /// the same width, so comparing two texts orders them like the instants.
    pub fn as_text(&self) -> String {
        // Written digit by digit: two per daily-metrics row, 67 ns against 120 ns for
        // chrono's RFC 3339 writer (`docs/performance.md`), which would also write a
        // leap second as `:60` and a year past 9999 with a sign.
        use chrono::{Datelike, Timelike};
        // The naive UTC value: `DateTime<Utc>`'s own accessors add a zero offset
        // for each field.
        let t = self.0.naive_utc();
        let millis = (t.nanosecond() / 1_000_000).min(999);
        let Some(year) = u32::try_from(t.year()).ok().filter(|y| *y <= 9999) else {
            // Years outside 0..=9999 do not fit the four digits below.
            return format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{millis:03}Z",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            );
        };
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let fields = [
            (0..4, year),
            (5..7, t.month()),
            (8..10, t.day()),
            (11..13, t.hour()),
            (14..16, t.minute()),
            (17..19, t.second()),
            (20..23, millis),
        ];
        for (range, value) in fields {
            let mut n = value;
            for digit in text[range].iter_mut().rev() {
                *digit = b'0' + (n % 10) as u8;
                n /= 10;
            }
        }
        // Only ASCII digits and separators were written, so this never falls back.
        std::str::from_utf8(&text)
            .map(str::to_owned)
            .unwrap_or_default()
    }

    /// The UTC calendar day of this instant.
    pub fn date(&self) -> NaiveDate {
        self.0.date_naive()
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(value: DateTime<Utc>) -> Self {
        Timestamp(value)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        DatedTimestamp::from_str(text).map(|dated| dated.at)
    }
}

/// A timestamp that also keeps the offset it was written with, so the calendar day
/// its text names stays known: `2026-06-10T00:00:00+02:00` is the instant
/// `2026-06-09T22:00:00Z`, but the day the service meant is 2026-06-10. Daily
/// metrics are keyed by that day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DatedTimestamp {
    /// The instant.
    pub at: Timestamp,
    /// Seconds east of UTC of the text (0 for `Z` and for texts without an offset).
    pub offset_secs: i32,
}

impl DatedTimestamp {
    /// The calendar day written in the text (the date in its own offset).
    pub fn day(&self) -> NaiveDate {
        match FixedOffset::east_opt(self.offset_secs) {
            Some(offset) => self.at.0.with_timezone(&offset).date_naive(),
            None => self.at.date(),
        }
    }
}

impl FromStr for DatedTimestamp {
    type Err = TimestampParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let utc = |at: DateTime<Utc>| DatedTimestamp {
            at: Timestamp(at),
            offset_secs: 0,
        };
        if let Some(at) = parse_utc_fast(text) {
            return Ok(utc(at));
        }
        // Tried in order of how often the service sends each shape, so the common
        // case (RFC 3339 with an offset) costs a single parse.
        if let Ok(with_offset) = text.parse::<DateTime<FixedOffset>>() {
            return Ok(DatedTimestamp {
                at: Timestamp(with_offset.with_timezone(&Utc)),
                offset_secs: with_offset.offset().local_minus_utc(),
            });
        }
        // The API's timestamps are UTC (docs/api.md), so a value without an offset is
        // read as UTC.
        if let Ok(naive) = text.parse::<NaiveDateTime>() {
            return Ok(utc(naive.and_utc()));
        }
        if let Ok(day) = text.parse::<NaiveDate>() {
            return Ok(utc(day.and_time(chrono::NaiveTime::MIN).and_utc()));
        }
        Err(TimestampParseError(text.to_owned()))
    }
}

impl Serialize for DatedTimestamp {
    /// RFC 3339 in the offset it was read with, so the day survives a round trip.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match FixedOffset::east_opt(self.offset_secs).filter(|_| self.offset_secs != 0) {
            Some(offset) => serializer.serialize_str(
                &self
                    .at
                    .0
                    .with_timezone(&offset)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ),
            None => self.at.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for DatedTimestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(DatedTimestampVisitor)
    }
}

struct DatedTimestampVisitor;

impl Visitor<'_> for DatedTimestampVisitor {
    type Value = DatedTimestamp;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an ISO 8601 timestamp string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<DatedTimestamp, E> {
        text.parse().map_err(E::custom)
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the shape the service sends almost always,
/// read digit by digit (chrono still checks the calendar) instead of by chrono's
/// general parser: ~32 ns against ~186 ns a text (`timing` below), and two million of
/// these arrive in a large sync, ~3 % of its CPU (`docs/performance.md`). Anything
/// else, including leap seconds, returns `None` and goes through the general parsers.
fn parse_utc_fast(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    if b.len() < 20 || b.len() > 30 || b[b.len() - 1] != b'Z' {
        return None;
    }
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let nanos = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            let n = num(20..20 + digits.len())?;
            n * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(i32::try_from(num(0..4)?).ok()?, num(5..7)?, num(8..10)?)?;
    let time =
        chrono::NaiveTime::from_hms_nano_opt(num(11..13)?, num(14..16)?, num(17..19)?, nanos)?;
    Some(date.and_time(time).and_utc())
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_text())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_text())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        DatedTimestamp::deserialize(deserializer).map(|dated| dated.at)
    }
}

/// An `i64` that also accepts a float with no fractional part (`3.0`, `1e3`).
struct TolerantI64(i64);

impl<'de> Deserialize<'de> for TolerantI64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_i64(IntegerVisitor)
            .map(TolerantI64)
    }
}

struct IntegerVisitor;

/// 2^63: the first float above every `i64` (`i64::MAX as f64` rounds up to it).
const I64_FLOAT_LIMIT: f64 = 9_223_372_036_854_775_808.0;

impl Visitor<'_> for IntegerVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer (a number without fractional part)")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<i64, E> {
        Ok(value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<i64, E> {
        i64::try_from(value).map_err(|_| {
            E::custom(format_args!(
                "integer {value} is out of range for a 64-bit signed integer"
            ))
        })
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<i64, E> {
        if !value.is_finite() || value.fract() != 0.0 {
            return Err(E::invalid_value(Unexpected::Float(value), &self));
        }
        if !(-I64_FLOAT_LIMIT..I64_FLOAT_LIMIT).contains(&value) {
            return Err(E::custom(format_args!(
                "number {value} is out of range for a 64-bit signed integer"
            )));
        }
        // Exact: the value is integral and inside the i64 range checked above.
        Ok(value as i64)
    }
}

/// Any JSON number as `f64`; strings and booleans are rejected.
struct TolerantF64(f64);

impl<'de> Deserialize<'de> for TolerantF64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_f64(NumberVisitor).map(TolerantF64)
    }
}

struct NumberVisitor;

impl Visitor<'_> for NumberVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<f64, E> {
        Ok(value as f64)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<f64, E> {
        Ok(value as f64)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<f64, E> {
        Ok(value)
    }
}

/// For `#[serde(default, deserialize_with = "crate::api::tolerant::opt_i64")]` on an
/// `Option<i64>`: integers and integral floats parse, `null`/absent is `None`; `3.5`,
/// strings and values outside `i64` are errors.
pub fn opt_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    Option::<TolerantI64>::deserialize(deserializer).map(|value| value.map(|v| v.0))
}

/// For `#[serde(default, deserialize_with = "crate::api::tolerant::opt_f64")]` on an
/// `Option<f64>`: any JSON number parses, `null`/absent is `None`; strings and booleans
/// are errors.
pub fn opt_f64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    Option::<TolerantF64>::deserialize(deserializer).map(|value| value.map(|v| v.0))
}

/// A quantity sent as a JSON number, kept without loss: a whole number within `i64`
/// (`1152921504606846977`, or written `1e3`, `1000.0`) stays an integer, anything
/// else is a float. Limits are whole numbers that an `f64` would round above 2^53.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantity {
    /// A whole number.
    Whole(i64),
    /// A number with a fraction (or beyond `i64`).
    Fraction(f64),
}

impl Quantity {
    /// The value as a float (rounded above 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Quantity::Whole(n) => n as f64,
            Quantity::Fraction(f) => f,
        }
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Quantity::Whole(n) => serializer.serialize_i64(n),
            Quantity::Fraction(f) => serializer.serialize_f64(f),
        }
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Quantity, E> {
        Ok(Quantity::Whole(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Quantity, E> {
        Ok(i64::try_from(value).map_or(Quantity::Fraction(value as f64), Quantity::Whole))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Quantity, E> {
        let whole = value.is_finite()
            && value.fract() == 0.0
            && (-I64_FLOAT_LIMIT..I64_FLOAT_LIMIT).contains(&value);
        // Exact when whole: integral and inside the i64 range.
        Ok(if whole {
            Quantity::Whole(value as i64)
        } else {
            Quantity::Fraction(value)
        })
    }
}

/// For `#[serde(default, deserialize_with = "crate::api::tolerant::opt_quantity")]` on
/// an `Option<Quantity>`: any JSON number parses ([`Quantity`]), `null`/absent is
/// `None`; strings and booleans are errors.
pub fn opt_quantity<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Quantity>, D::Error> {
    Option::<Quantity>::deserialize(deserializer)
}

/// For `#[serde(default, deserialize_with = "crate::api::tolerant::nullable_vec")]` on a
/// `Vec<T>`: `null` or absent is an empty vector, so callers never tell the two apart.
pub fn nullable_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<Vec<T>>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// [`nullable_vec`] for the daily-metrics list: room for a year of days is reserved
/// up front. serde_json gives no length hint, and growing a vector of 365 records by
/// doubling copies about twice its size per user (a gigabyte over a large sync).
pub fn nullable_year_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<YearVec<T>>::deserialize(deserializer).map(|v| v.map_or_else(Vec::new, |y| y.0))
}

/// A list deserialized into a vector with a year of days reserved.
struct YearVec<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for YearVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(YearVisitor(std::marker::PhantomData))
    }
}

struct YearVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for YearVisitor<T> {
    type Value = YearVec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<YearVec<T>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(366).min(4096));
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(YearVec(out))
    }
}

/// [`nullable_vec`] for `Vec<i64>` whose elements follow the [`opt_i64`] rules, so a
/// list of user ids written as `[3.0]` parses like one written as `[3]`.
pub fn nullable_i64_vec<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i64>, D::Error> {
    let values = Option::<Vec<TolerantI64>>::deserialize(deserializer)?;
    Ok(values
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn fast_paths_agree_with_chrono() {
        let texts = [
            "2026-01-31T10:00:00Z",
            "2026-01-31T10:00:00.1Z",
            "2026-01-31T10:00:00.123Z",
            "2024-02-29T23:59:59.999999999Z",
            "1970-01-01T00:00:00.000000Z",
            "0001-01-01T00:00:00Z",
        ];
        for text in texts {
            let general = text.parse::<DateTime<FixedOffset>>().expect(text);
            let fast = parse_utc_fast(text).expect(text);
            assert_eq!(fast, general.with_timezone(&Utc), "{text}");
            assert_eq!(
                Timestamp(fast).as_text(),
                fast.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
            );
        }
        for other in [
            "2023-02-29T10:00:00Z",
            "2026-01-31T10:00:60Z",
            "2026-01-31T10:00:00.Z",
            "2026-01-31T10:00:00.1234567890Z",
            "2026-01-31 10:00:00Z",
            "2026-01-31T10:00:00+00:00",
            "2026-1-31T10:00:00Z",
        ] {
            assert_eq!(parse_utc_fast(other), None, "{other}");
        }
        // What the fast path declines still parses where chrono accepts it.
        let leap: Timestamp = "2016-12-31T23:59:60Z".parse().expect("leap second");
        assert_eq!(leap.as_text(), "2016-12-31T23:59:59.999Z");
        // Years past four digits are written whole, not clamped.
        let far = Timestamp(
            Utc.with_ymd_and_hms(10000, 1, 2, 3, 4, 5)
                .single()
                .expect("year 10000"),
        );
        assert_eq!(far.as_text(), "10000-01-02T03:04:05.000Z");
    }

    #[derive(Debug, Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "opt_i64")]
        int: Option<i64>,
        #[serde(default, deserialize_with = "opt_f64")]
        num: Option<f64>,
        #[serde(default, deserialize_with = "nullable_vec")]
        list: Vec<String>,
        #[serde(default, deserialize_with = "nullable_i64_vec")]
        ids: Vec<i64>,
        at: Option<Timestamp>,
    }

    fn probe(json: &str) -> Result<Probe, serde_json::Error> {
        serde_json::from_str(json)
    }

    fn ts(text: &str) -> Result<Timestamp, serde_json::Error> {
        serde_json::from_value(serde_json::Value::String(text.to_owned()))
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
            .single()
            .expect("valid date")
    }

    #[test]
    fn integer_accepts_integers_and_integral_floats() {
        assert_eq!(probe(r#"{"int": 3}"#).unwrap().int, Some(3));
        assert_eq!(probe(r#"{"int": -7}"#).unwrap().int, Some(-7));
        assert_eq!(probe(r#"{"int": 3.0}"#).unwrap().int, Some(3));
        assert_eq!(probe(r#"{"int": 1e3}"#).unwrap().int, Some(1000));
        assert_eq!(
            probe(r#"{"int": 9223372036854775807}"#).unwrap().int,
            Some(i64::MAX)
        );
        assert_eq!(
            probe(r#"{"int": -9223372036854775808}"#).unwrap().int,
            Some(i64::MIN)
        );
    }

    #[test]
    fn integer_null_or_absent_is_none() {
        assert_eq!(probe(r#"{"int": null}"#).unwrap().int, None);
        assert_eq!(probe("{}").unwrap().int, None);
    }

    #[test]
    fn integer_rejects_fractions_strings_and_overflow() {
        let fraction = probe(r#"{"int": 3.5}"#).unwrap_err().to_string();
        assert!(fraction.contains("3.5"), "{fraction}");
        assert!(fraction.contains("integer"), "{fraction}");

        let text = probe(r#"{"int": "3"}"#).unwrap_err().to_string();
        assert!(text.contains("invalid type: string"), "{text}");

        let too_big = probe(r#"{"int": 9223372036854775808}"#)
            .unwrap_err()
            .to_string();
        assert!(too_big.contains("out of range"), "{too_big}");

        let float_too_big = probe(r#"{"int": 1e19}"#).unwrap_err().to_string();
        assert!(float_too_big.contains("out of range"), "{float_too_big}");

        assert!(probe(r#"{"int": true}"#).is_err());
    }

    #[test]
    fn number_accepts_any_json_number() {
        assert_eq!(probe(r#"{"num": 2}"#).unwrap().num, Some(2.0));
        assert_eq!(probe(r#"{"num": -2.5}"#).unwrap().num, Some(-2.5));
        assert_eq!(probe(r#"{"num": 1.5e3}"#).unwrap().num, Some(1500.0));
        assert_eq!(probe(r#"{"num": null}"#).unwrap().num, None);
        assert_eq!(probe("{}").unwrap().num, None);
    }

    #[test]
    fn number_rejects_strings_and_booleans() {
        let text = probe(r#"{"num": "2.5"}"#).unwrap_err().to_string();
        assert!(text.contains("expected a number"), "{text}");
        let boolean = probe(r#"{"num": false}"#).unwrap_err().to_string();
        assert!(boolean.contains("invalid type: boolean"), "{boolean}");
    }

    #[test]
    fn nullable_vec_treats_null_and_absent_as_empty() {
        assert!(probe(r#"{"list": null}"#).unwrap().list.is_empty());
        assert!(probe("{}").unwrap().list.is_empty());
        assert_eq!(
            probe(r#"{"list": ["a", "b"]}"#).unwrap().list,
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert!(probe(r#"{"list": "a"}"#).is_err());
    }

    #[test]
    fn nullable_i64_vec_applies_integer_rules_to_elements() {
        assert_eq!(probe(r#"{"ids": [1, 2.0, 3]}"#).unwrap().ids, vec![1, 2, 3]);
        assert!(probe(r#"{"ids": null}"#).unwrap().ids.is_empty());
        assert!(probe("{}").unwrap().ids.is_empty());
        assert!(probe(r#"{"ids": [1.5]}"#).is_err());
    }

    #[test]
    fn timestamp_with_z_and_with_or_without_fraction() {
        let expected = utc(2026, 1, 31, 10, 0, 0);
        assert_eq!(ts("2026-01-31T10:00:00Z").unwrap().0, expected);
        assert_eq!(ts("2026-01-31T10:00:00.000Z").unwrap().0, expected);
        let fraction = ts("2026-01-31T10:00:00.123456Z").unwrap();
        assert_eq!(fraction.0.timestamp_subsec_micros(), 123_456);
    }

    #[test]
    fn timestamp_with_offset_is_converted_to_utc() {
        let expected = utc(2026, 1, 31, 8, 0, 0);
        assert_eq!(ts("2026-01-31T10:00:00+02:00").unwrap().0, expected);
        assert_eq!(
            ts("2026-01-31T10:00:00.5+02:00").unwrap().as_text(),
            "2026-01-31T08:00:00.500Z"
        );
        assert_eq!(ts("2026-01-31T10:00:00+0200").unwrap().0, expected);
        assert_eq!(
            ts("2026-01-31T03:00:00-05:00").unwrap().0,
            utc(2026, 1, 31, 8, 0, 0)
        );
    }

    #[test]
    fn timestamp_naive_and_bare_date_are_utc() {
        assert_eq!(
            ts("2026-01-31T10:00:00").unwrap().0,
            utc(2026, 1, 31, 10, 0, 0)
        );
        assert_eq!(
            ts("2026-01-31T10:00:00.25").unwrap().as_text(),
            "2026-01-31T10:00:00.250Z"
        );
        assert_eq!(ts("2026-01-31").unwrap().0, utc(2026, 1, 31, 0, 0, 0));
    }

    #[test]
    fn timestamp_error_quotes_the_text() {
        let message = ts("last tuesday").unwrap_err().to_string();
        assert!(message.contains("\"last tuesday\""), "{message}");
        assert!(ts("2026-02-30").is_err());
        assert!(ts("").is_err());
        let not_a_string = serde_json::from_str::<Timestamp>("1700000000").unwrap_err();
        assert!(not_a_string.to_string().contains("invalid type"));
    }

    #[test]
    fn timestamp_null_or_absent_is_none() {
        assert!(probe(r#"{"at": null}"#).unwrap().at.is_none());
        assert!(probe("{}").unwrap().at.is_none());
        assert!(probe(r#"{"at": "2026-01-31"}"#).unwrap().at.is_some());
    }

    #[test]
    fn timestamp_text_is_fixed_width_and_orders_like_time() {
        let early = ts("2026-01-31T10:00:00+02:00").unwrap();
        let late = ts("2026-01-31T09:00:00.5Z").unwrap();
        assert_eq!(early.as_text(), "2026-01-31T08:00:00.000Z");
        assert_eq!(late.as_text(), "2026-01-31T09:00:00.500Z");
        assert_eq!(early.as_text().len(), late.as_text().len());
        assert!(early < late);
        assert!(early.as_text() < late.as_text());
        assert_eq!(early.to_string(), early.as_text());
    }

    #[test]
    fn timestamp_serializes_as_text_and_round_trips() {
        let value = ts("2026-01-31T23:30:00-01:00").unwrap();
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(json, "\"2026-02-01T00:30:00.000Z\"");
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn dated_timestamp_day_is_the_date_written_in_its_own_offset() {
        let day = |text: &str| text.parse::<DatedTimestamp>().unwrap().day();
        let date = |d: u32| NaiveDate::from_ymd_opt(2026, 6, d).unwrap();
        // Midnight at +02:00 is 22:00 UTC the day before; the day meant is the 10th.
        let midnight = "2026-06-10T00:00:00+02:00"
            .parse::<DatedTimestamp>()
            .unwrap();
        assert_eq!(midnight.at.as_text(), "2026-06-09T22:00:00.000Z");
        assert_eq!(midnight.day(), date(10));
        // Late evening west of UTC is the next day in UTC; the day meant is the 10th.
        assert_eq!(day("2026-06-10T23:00:00-05:00"), date(10));
        assert_eq!(day("2026-06-10T00:00:00.000Z"), date(10));
        assert_eq!(day("2026-06-10T00:00:00"), date(10));
        assert_eq!(day("2026-06-10"), date(10));
    }

    #[test]
    fn dated_timestamp_round_trips_with_its_offset() {
        for text in [
            "\"2026-06-10T00:00:00.000+02:00\"",
            "\"2026-06-10T23:00:00.500-05:00\"",
            "\"2026-06-10T00:00:00.000Z\"",
        ] {
            let value: DatedTimestamp = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        }
    }

    #[test]
    fn timestamp_date_is_the_utc_day() {
        let value = ts("2026-01-31T23:30:00-01:00").unwrap();
        assert_eq!(value.date(), NaiveDate::from_ymd_opt(2026, 2, 1).unwrap());
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use std::hint::black_box;
    use std::time::Instant;

    /// The figures behind `parse_utc_fast`; run with
    /// `cargo test --release --lib tolerant::timing -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn fast_utc_parse_against_chronos_general_parser() {
        let Some(base) = parse_utc_fast("2026-01-31T10:00:00.123Z").map(Timestamp) else {
            panic!("the fast parser rejects its own shape");
        };
        let texts: Vec<String> = (0..1_000_000i64)
            .map(|i| Timestamp(base.0 + chrono::Duration::seconds(i * 37)).as_text())
            .collect();
        let per = |start: Instant| start.elapsed().as_nanos() as f64 / texts.len() as f64;
        let start = Instant::now();
        for t in &texts {
            black_box(parse_utc_fast(t));
        }
        println!("parse_utc_fast: {:.1} ns", per(start));
        let start = Instant::now();
        for t in &texts {
            black_box(t.parse::<DateTime<FixedOffset>>().ok());
        }
        println!("chrono DateTime<FixedOffset> parse: {:.1} ns", per(start));
    }
}
