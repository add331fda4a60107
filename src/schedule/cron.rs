//! Cron expressions as users write them.
//!
//! The scheduler wants six fields (seconds first). People write the classic five;
//! a five-field expression gets `0` seconds prepended rather than being rejected.
//! The expression is validated up front so a typo fails at start-up, not at the
//! first tick.

/// Normalises and validates an expression; the error says which and why.
pub fn normalize(expr: &str, what: &str) -> Result<String, String> {
    let fields = expr.split_whitespace().count();
    let six = match fields {
        5 => format!("0 {}", expr.trim()),
        6 | 7 => expr.trim().to_string(),
        _ => {
            return Err(format!(
                "{what} schedule {expr:?} has {fields} fields; write `sec min hour day month weekday` (or the classic five without seconds)"
            ));
        }
    };
    if let Some(why) = wrong_field(&six) {
        return Err(format!("{what} schedule {expr:?}: {why}"));
    }
    tokio_cron_scheduler::Job::new_async(six.as_str(), |_, _| Box::pin(async {}))
        .map_err(|e| format!("{what} schedule {expr:?} is not a valid cron expression: {e}"))?;
    Ok(six)
}

/// The fields of a six-field expression, in order.
const FIELDS: [&str; 6] = [
    "second",
    "minute",
    "hour",
    "day of month",
    "month",
    "weekday",
];

/// The first field of `six` that is not valid, said as "the minute field `99` is
/// not valid (...)": each field is tried alone inside an expression whose other
/// fields are `*`, so the parser's complaint is pinned to one field.
fn wrong_field(six: &str) -> Option<String> {
    let parser = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Required)
        .build();
    let fields: Vec<&str> = six.split_whitespace().collect();
    for (i, field) in fields.iter().enumerate().take(FIELDS.len()) {
        let mut probe = ["*"; 6];
        probe[i] = field;
        if let Err(e) = parser.parse(&probe.join(" ")) {
            return Some(format!(
                "the {} field `{field}` is not valid ({e}); the fields are `second minute hour day-of-month month weekday`",
                FIELDS[i]
            ));
        }
    }
    None
}

/// When a (normalized, six-field) expression is next due after now, as a log
/// line says it (`2026-11-27 05:00:00 UTC`).
pub fn next_due(six: &str) -> Option<String> {
    let cron = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Required)
        .build()
        .parse(six)
        .ok()?;
    let next = cron.find_next_occurrence(&chrono::Utc::now(), false).ok()?;
    Some(next.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

/// The longest gap between consecutive runs of a (normalized, six-field)
/// expression over its next few runs: how long one period of the schedule can be.
pub fn period(six: &str) -> Option<std::time::Duration> {
    let cron = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Required)
        .build()
        .parse(six)
        .ok()?;
    let runs: Vec<_> = cron.iter_after(chrono::Utc::now()).take(16).collect();
    runs.windows(2)
        .filter_map(|w| (w[1] - w[0]).to_std().ok())
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_fields_get_seconds_and_garbage_is_refused() {
        assert_eq!(
            normalize("30 5 * * *", "sync").expect("five"),
            "0 30 5 * * *"
        );
        assert_eq!(
            normalize("*/5 * * * * *", "sync").expect("six"),
            "*/5 * * * * *"
        );
        let err = normalize("every day", "report").expect_err("two fields");
        assert!(err.contains("report schedule"), "{err}");
        let err = normalize("0 99 * * * *", "sync").expect_err("minute 99");
        assert!(err.contains("the minute field `99` is not valid"), "{err}");
        let err = normalize("0 0 5 * 13 *", "report").expect_err("month 13");
        assert!(err.contains("the month field `13`"), "{err}");
    }

    #[test]
    fn the_next_due_time_is_in_the_future_and_on_the_schedule() {
        let next = next_due("0 30 5 * * *").expect("a next time");
        assert!(next.ends_with(" 05:30:00 UTC"), "{next}");
        let now = chrono::Utc::now()
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string();
        assert!(next > now, "{next} after {now}");
    }

    #[test]
    fn the_period_is_the_longest_gap_between_runs() {
        use std::time::Duration;
        assert_eq!(period("*/2 * * * * *"), Some(Duration::from_secs(2)));
        assert_eq!(period("0 0 5 * * *"), Some(Duration::from_secs(86_400)));
        assert_eq!(
            period("0 0 5 * * 1-5"),
            Some(Duration::from_secs(3 * 86_400))
        );
    }
}
