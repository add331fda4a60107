//! Calendar arithmetic on day numbers (days since 1970-01-01, UTC), the form dates
//! take inside the polars jobs (this build of polars has no date type).

use chrono::{Datelike, NaiveDate};

/// Day number of 1970-01-01 counted from 0001-01-01 (chrono's "days from CE").
const EPOCH_FROM_CE: i64 = 719_163;

/// A day as the user writes it on the command line (`--as-of`, `--since`), with
/// one message for every command: chrono's own ("input is out of range") does not
/// say what a valid value looks like.
pub fn parse_calendar_day(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
        format!("`{text}` is not a calendar date; give it as YYYY-MM-DD, such as 2026-01-31")
    })
}

/// Whether `text` has the shape of `YYYY-MM-DD` (digits and dashes in place),
/// calendar date or not.
pub fn looks_like_day(text: &str) -> bool {
    let b = text.trim().as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

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

/// [`parse_day`] on raw bytes. Called once per value of large columns (1.3 M daily
/// metrics days in one report over a large mirror), so it reads the digits and counts
/// the days itself: through chrono's `NaiveDate` the same took three times as long.
pub fn parse_day_bytes(b: &[u8]) -> Option<i64> {
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    (day >= 1 && day <= month_length(year, month)?).then(|| days_from_civil(year, month, day))
}

/// A UTC timestamp `YYYY-MM-DDTHH:MM:SS[.f…]Z` (mirror timestamps are
/// `YYYY-MM-DDTHH:MM:SS.sssZ`) as its day number and the nanoseconds into that day;
/// None for any other text. The one timestamp reader of the reports and the export
/// (the Parquet export reads millions of them, the workbook every timestamp cell).
/// Read by hand: over 2 million mirror timestamps it took 22-27 ns each, chrono's
/// `DateTime::parse_from_rfc3339` 38-49 ns (1.6-2.2 times as long), both release
/// builds on the same 2-core machine.
pub fn parse_timestamp(b: &[u8]) -> Option<(i64, i64)> {
    let (date, clock, rest) = (b.get(..10)?, b.get(10..19)?, b.get(19..)?);
    if clock[0] != b'T' || clock[3] != b':' || clock[6] != b':' {
        return None;
    }
    let two = |at: usize| -> Option<i64> {
        let (hi, lo) = (clock[at], clock[at + 1]);
        (hi.is_ascii_digit() && lo.is_ascii_digit())
            .then(|| i64::from(hi - b'0') * 10 + i64::from(lo - b'0'))
    };
    let (h, m, s) = (two(1)?, two(4)?, two(7)?);
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let (nanos, zone) = match rest.split_first() {
        Some((b'.', digits)) => {
            let end = digits.iter().position(|c| !c.is_ascii_digit())?;
            if end == 0 {
                return None;
            }
            // Digits past the ninth are below a nanosecond.
            let nanos = digits[..end]
                .iter()
                .chain(std::iter::repeat(&b'0'))
                .take(9)
                .fold(0i64, |n, &c| n * 10 + i64::from(c - b'0'));
            (nanos, &digits[end..])
        }
        _ => (0, rest),
    };
    if zone != b"Z" {
        return None;
    }
    let day = parse_day_bytes(date)?;
    Some((day, ((h * 60 + m) * 60 + s) * 1_000_000_000 + nanos))
}

/// How much of a moment a person reads: its day, or its day and time to the minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Day,
    Minute,
}

/// A mirror day (`YYYY-MM-DD`) or UTC timestamp as a person reads it: the day, or
/// with [`Shown::Minute`] a timestamp's day and time with its zone (`2026-11-15
/// 12:00 UTC`); None for any other text. The one form of a date or time on the
/// pages and in the workbook's text; the files keep the exact text.
pub fn for_a_person(text: &str, shown: Shown) -> Option<String> {
    if text.len() == 10 {
        return parse_day(text).and_then(day_text);
    }
    let (day, nanos) = parse_timestamp(text.as_bytes())?;
    let day_text = day_text(day)?;
    Some(match shown {
        Shown::Day => day_text,
        Shown::Minute => {
            let minutes = nanos / 60_000_000_000;
            format!("{day_text} {:02}:{:02} UTC", minutes / 60, minutes % 60)
        }
    })
}

/// Days in `month` of `year` (proleptic Gregorian), None for no such month.
fn month_length(year: u32, month: u32) -> Option<u32> {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    Some(match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    })
}

/// Day number of a valid date of years 0-9999 (Howard Hinnant's `days_from_civil`:
/// years counted from March, so the leap day ends a year).
fn days_from_civil(year: u32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
    fn a_day_of_the_right_shape_that_is_no_date_says_so() {
        assert!(parse_calendar_day("2026-02-28").is_ok());
        let error = parse_calendar_day("2026-11-31").expect_err("no 31 November");
        assert!(
            error.contains("`2026-11-31` is not a calendar date"),
            "{error}"
        );
        assert!(looks_like_day("2026-11-31") && !looks_like_day("2026-1-31"));
        assert!(!looks_like_day("yesterday"));
    }

    #[test]
    fn utc_timestamps_read_as_chrono_reads_them() {
        for text in [
            "1970-01-01T00:00:00.000Z",
            "2026-11-25T04:38:53.125Z",
            "2026-11-27T06:00:00Z",
            "2024-02-29T23:59:59.999999999Z",
            "1969-12-31T12:30:15.5Z",
        ] {
            let t = chrono::DateTime::parse_from_rfc3339(text).expect("rfc3339");
            let (day, nanos) = parse_timestamp(text.as_bytes()).expect(text);
            let expected = t.timestamp() * 1_000_000_000 + i64::from(t.timestamp_subsec_nanos());
            assert_eq!(day * 86_400_000_000_000 + nanos, expected, "{text}");
        }
        for bad in [
            "2026-11-25",
            "2026-11-25T24:00:00.000Z",
            "2026-02-30T00:00:00.000Z",
            "2026-11-27T06:00:00+01:00",
            "2026-11-27 06:00:00Z",
            "2026-11-27T06:00:00.Z",
        ] {
            assert_eq!(parse_timestamp(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn a_person_reads_a_day_or_a_day_and_time_in_utc_and_nothing_else_is_taken_for_one() {
        let minute = |t| for_a_person(t, Shown::Minute);
        let day = |t| for_a_person(t, Shown::Day);
        assert_eq!(
            minute("2026-11-15T12:00:00.000Z").as_deref(),
            Some("2026-11-15 12:00 UTC")
        );
        assert_eq!(
            minute("2026-11-15T23:59:59.999Z").as_deref(),
            Some("2026-11-15 23:59 UTC")
        );
        assert_eq!(
            minute("2026-11-15T00:07:00Z").as_deref(),
            Some("2026-11-15 00:07 UTC")
        );
        assert_eq!(
            day("2026-11-15T12:00:00.000Z").as_deref(),
            Some("2026-11-15")
        );
        assert_eq!(minute("2026-11-15").as_deref(), Some("2026-11-15"));
        for other in [
            "2026-11-31",
            "2026-11-15T12:00:00+01:00",
            "20261115",
            "member",
            "",
            "1000000",
        ] {
            assert_eq!(minute(other), None, "{other}");
        }
    }

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

    #[test]
    fn every_date_of_years_0_to_9999_reads_as_chrono_counts_it() {
        let (first, last) = (
            NaiveDate::from_ymd_opt(0, 1, 1).expect("first"),
            NaiveDate::from_ymd_opt(9999, 12, 31).expect("last"),
        );
        for date in first.iter_days().take_while(|d| *d <= last) {
            let text = date.format("%Y-%m-%d").to_string();
            assert_eq!(parse_day(&text), Some(day_of(date)), "{text}");
        }
        for bad in [
            "2023-00-10",
            "2023-13-01",
            "2023-04-31",
            "2023-01-00",
            "1900-02-29",
        ] {
            assert_eq!(parse_day(bad), None, "{bad}");
        }
        assert_eq!(parse_day("2000-02-29"), Some(11_016));
    }
}
