//! What a report column becomes in the workbook: the kind of its text cells (dates
//! and UTC timestamps become Excel dates), the unit its numbers are shown in, and
//! the integers Excel cannot hold as numbers.

use crate::calendar::{parse_day, parse_timestamp};

/// Excel keeps 15 significant digits of a number; an integer with more would be
/// shown (and stored, once edited) rounded.
const EXCEL_DIGITS: u32 = 15;

/// Excel's serial number of 1970-01-01 (day 0 of [`crate::calendar`]).
const EPOCH_SERIAL: i64 = 25_569;

/// Serials below 61 (before 1900-03-01) count Excel's phantom 1900-02-29, so they
/// name other days than the calendar's; such values stay text.
const FIRST_SAFE_SERIAL: f64 = 61.0;

/// How a text column is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Every value is a `YYYY-MM-DD` day: date cells.
    Date,
    /// Every value is a UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`): date-time cells.
    Timestamp,
    /// Anything else: text cells.
    Text,
}

/// The kind of a text column, from all of its values (an empty column is text).
pub fn text_kind<'a>(values: impl Iterator<Item = Option<&'a str>>) -> TextKind {
    let mut kind = None;
    for v in values.flatten() {
        let this = match serial(v) {
            Some(_) if v.len() == 10 => TextKind::Date,
            Some(_) => TextKind::Timestamp,
            None => return TextKind::Text,
        };
        if kind.is_some_and(|k| k != this) {
            return TextKind::Text;
        }
        kind = Some(this);
    }
    kind.unwrap_or(TextKind::Text)
}

/// Excel's serial number (days since 1899-12-30, the time of day as the fraction)
/// of a `YYYY-MM-DD` day or a UTC timestamp; None for other text.
pub fn serial(text: &str) -> Option<f64> {
    let (day, seconds) = match text.len() {
        10 => (parse_day(text)?, 0.0),
        _ => {
            let (day, nanos) = parse_timestamp(text.as_bytes())?;
            (day, nanos as f64 / 1e9)
        }
    };
    let serial = (day + EPOCH_SERIAL) as f64 + seconds / 86_400.0;
    (serial >= FIRST_SAFE_SERIAL).then_some(serial)
}

/// Whether an integer is kept exactly as an Excel number: it converts to a double
/// without change and has at most 15 significant digits.
pub fn fits_excel(n: i64) -> bool {
    let mut m = n.unsigned_abs();
    if m < 10u64.pow(EXCEL_DIGITS) {
        return true;
    }
    while m.is_multiple_of(10) {
        m /= 10;
    }
    m < 10u64.pow(EXCEL_DIGITS) && n as f64 as i64 == n && (n as f64) < 9.2e18
}

/// The digits the CSV writes for a whole float that Excel cannot keep as a number
/// (None: the float is a number cell).
pub fn float_as_text(f: f64) -> Option<String> {
    if f.fract() != 0.0 || !f.is_finite() {
        return None;
    }
    match crate::render::files::integral(f) {
        Some(n) if fits_excel(n) => None,
        Some(n) => Some(n.to_string()),
        None => Some(format!("{f}")),
    }
}

/// The unit a numeric column is shown in (the cell keeps the exact value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Thousands separators.
    Plain,
    /// Identifiers: plain digits.
    Id,
    /// kB, MB, GB, TB (powers of 1000), as `units::human` writes them.
    Bytes,
    Seconds,
    Ms,
    /// A percentage (the value is the percentage itself, 85.5 for 85.5 %).
    Pct,
    /// The row's `unit` column says (`entitlements`' `used`, `limit`, `remaining`,
    /// `daily_rate`).
    PerRow,
}

/// A column's unit from its name (the data dictionary's naming): `*_bytes`,
/// `*_seconds` and `rolling_*` (seconds), `*_ms`, `pct_*`/`*_pct`, `id`/`*_id`;
/// `has_unit_column`: the frame has a `unit` column for its amounts.
pub fn unit_of(name: &str, has_unit_column: bool) -> Unit {
    match name {
        "id" => Unit::Id,
        "used" | "limit" | "remaining" | "daily_rate" if has_unit_column => Unit::PerRow,
        _ if name.ends_with("_id") => Unit::Id,
        _ if name.ends_with("_bytes") => Unit::Bytes,
        _ if name.ends_with("_seconds") || name.starts_with("rolling_") => Unit::Seconds,
        _ if name.ends_with("_ms") => Unit::Ms,
        _ if name.starts_with("pct_") || name.ends_with("_pct") => Unit::Pct,
        _ => Unit::Plain,
    }
}

/// The unit of a row's amounts from its `unit` text.
pub fn row_unit(unit: Option<&str>) -> Unit {
    match unit {
        Some("bytes") => Unit::Bytes,
        Some("seconds") => Unit::Seconds,
        Some("ms") => Unit::Ms,
        _ => Unit::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_utc_timestamps_become_serials() {
        assert_eq!(serial("1970-01-01"), Some(25_569.0));
        assert_eq!(serial("2026-11-27"), Some(46_353.0));
        assert_eq!(serial("2026-11-27T12:00:00.000Z"), Some(46_353.5));
        assert_eq!(serial("2026-11-27T06:00:00Z"), Some(46_353.25));
        assert_eq!(serial("2026-11-27T06:00:00+01:00"), None);
        assert_eq!(serial("2026-11-27 06:00:00"), None);
        assert_eq!(serial("1900-01-01"), None);
        assert_eq!(serial("organization"), None);
        let kind = |v: &[Option<&str>]| text_kind(v.iter().copied());
        assert_eq!(kind(&[Some("2026-01-02"), None]), TextKind::Date);
        assert_eq!(
            kind(&[Some("2026-01-02T00:00:00.000Z")]),
            TextKind::Timestamp
        );
        assert_eq!(kind(&[Some("2026-01-02"), Some("x")]), TextKind::Text);
        assert_eq!(
            kind(&[Some("2026-01-02"), Some("2026-01-02T00:00:00Z")]),
            TextKind::Text
        );
        assert_eq!(kind(&[None]), TextKind::Text);
    }

    #[test]
    fn integers_beyond_fifteen_digits_are_text() {
        assert!(fits_excel(999_999_999_999_999));
        assert!(fits_excel(-999_999_999_999_999));
        assert!(fits_excel(10_000_000_000_000_000));
        assert!(!fits_excel(1_000_000_000_000_001));
        assert!(!fits_excel(1 << 60));
        assert!(!fits_excel(i64::MAX));
        assert!(!fits_excel(i64::MIN));
        assert_eq!(float_as_text(2.5), None);
        assert_eq!(float_as_text(1e16), None);
        assert_eq!(
            float_as_text(1_152_921_504_606_846_976.0).as_deref(),
            Some("1152921504606846976")
        );
        assert_eq!(
            float_as_text(18_446_744_073_709_551_616.0).as_deref(),
            Some("18446744073709552000")
        );
    }

    #[test]
    fn units_follow_the_column_names() {
        assert_eq!(unit_of("storage_growth_bytes", false), Unit::Bytes);
        assert_eq!(unit_of("rolling_7d", false), Unit::Seconds);
        assert_eq!(unit_of("time_used_ms", false), Unit::Ms);
        assert_eq!(unit_of("pct_used", false), Unit::Pct);
        assert_eq!(unit_of("change_pct", false), Unit::Pct);
        assert_eq!(unit_of("organization_id", false), Unit::Id);
        assert_eq!(unit_of("used", true), Unit::PerRow);
        assert_eq!(unit_of("used", false), Unit::Plain);
        assert_eq!(row_unit(Some("bytes")), Unit::Bytes);
        assert_eq!(row_unit(Some("count")), Unit::Plain);
    }
}
