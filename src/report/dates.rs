//! Calendar arithmetic on day numbers (days since 1970-01-01, UTC), the form dates
//! take inside the polars jobs (this build of polars has no date type).

use chrono::{Datelike, NaiveDate};

/// Day number of 1970-01-01 counted from 0001-01-01 (chrono's "days from CE").
const EPOCH_FROM_CE: i64 = 719_163;

/// Day number of a date.
pub fn day_of(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - EPOCH_FROM_CE
}

/// Date of a day number (None outside chrono's range).
pub fn date_of(day: i64) -> Option<NaiveDate> {
    let ce = i32::try_from(day + EPOCH_FROM_CE).ok()?;
    NaiveDate::from_num_days_from_ce_opt(ce)
}

/// `YYYY-MM-DD` of a day number.
pub fn day_text(day: i64) -> Option<String> {
    date_of(day).map(|d| d.format("%Y-%m-%d").to_string())
}

/// Calendar day (UTC) of a mirror timestamp or a plain date: reads the leading
/// `YYYY-MM-DD` (mirror timestamps are fixed-width UTC text). None if it is not one.
pub fn parse_day(text: &str) -> Option<i64> {
    parse_day_bytes(text.as_bytes())
}

/// [`parse_day`] on raw bytes (called once per value of large columns, so it reads
/// the digits itself and leaves only the calendar check to chrono).
pub fn parse_day_bytes(b: &[u8]) -> Option<i64> {
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let year = i32::try_from(num(0..4)?).ok()?;
    NaiveDate::from_ymd_opt(year, num(5..7)?, num(8..10)?).map(day_of)
}

/// Monday of the ISO week of a day (the day itself outside chrono's range of dates).
pub fn week_start(day: i64) -> i64 {
    date_of(day).map_or(day, |d| day - i64::from(d.weekday().num_days_from_monday()))
}

/// First day of the calendar month of a day.
pub fn month_start(day: i64) -> Option<i64> {
    let d = date_of(day)?;
    Some(day - i64::from(d.day0()))
}

/// First day of the month `months` months before the month of `day`.
pub fn months_back(day: i64, months: u32) -> Option<i64> {
    let d = date_of(day)?;
    let first = d.with_day(1)?;
    first
        .checked_sub_months(chrono::Months::new(months))
        .map(day_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_round_trip_and_weeks_start_on_monday() {
        assert_eq!(parse_day("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_day("1970-01-02"), Some(1));
        assert_eq!(parse_day("2024-03-01T23:59:59.999Z"), Some(19_783));
        assert_eq!(day_text(19_783).as_deref(), Some("2024-03-01"));
        assert_eq!(parse_day("2024-02-30"), None);
        assert_eq!(parse_day("yesterday"), None);
        assert_eq!(parse_day("2024-02-29"), Some(19_782));
        assert_eq!(parse_day("2023-02-29"), None);
        assert_eq!(parse_day("1969-12-31"), Some(-1));
        assert_eq!(
            parse_day("2000-03-01"),
            Some(day_of(NaiveDate::from_ymd_opt(2000, 3, 1).expect("date")))
        );
        for day in [-700_000, -1, 0, 59, 60, 10_956, 19_782, 2_932_896] {
            assert_eq!(parse_day(&day_text(day).expect("text")), Some(day), "{day}");
        }
        // 2024-03-01 is a Friday; its ISO week starts Monday 2024-02-26 = 19_779.
        assert_eq!(week_start(19_783), 19_779);
        assert_eq!(week_start(19_779), 19_779);
        // 2024-03-01 is itself a month start; 2024-03-15 belongs to it too.
        assert_eq!(month_start(19_783 + 14), Some(19_783));
        // Two months back from March 2024 is January 2024 (19_723 = 2024-01-01).
        assert_eq!(months_back(19_783 + 14, 2), Some(19_723));
    }
}
