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
    tokio_cron_scheduler::Job::new_async(six.as_str(), |_, _| Box::pin(async {}))
        .map_err(|e| format!("{what} schedule {expr:?} is not a valid cron expression: {e}"))?;
    Ok(six)
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
        assert!(normalize("0 99 * * * *", "sync").is_err());
    }
}
