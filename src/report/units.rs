//! Values in the units a person reads: bytes as kB/MB/GB/TB (powers of 1000, as the
//! platform counts storage), seconds and milliseconds as hours, counts as whole
//! numbers, with thousands separators ("166.9 GB", "7,886 h", "14"). The report files
//! keep the exact machine units; these texts sit next to them (`*_human` columns) and
//! on the HTML page.

/// A value in a person's unit; empty when unknown.
pub fn human(value: Option<f64>, unit: &str) -> String {
    human_with(value, unit, 0)
}

/// Two values of one unit (used and limit), with more decimals when the usual ones
/// would print two different values alike ("167.0 GB" of "167.0 GB" while the
/// usage is below the limit).
pub fn human_pair(a: Option<f64>, b: Option<f64>, unit: &str) -> (String, String) {
    let mut extra = 0;
    loop {
        let (x, y) = (human_with(a, unit, extra), human_with(b, unit, extra));
        let alike = x == y && a != b;
        if !alike || extra >= MAX_EXTRA_DECIMALS {
            return (x, y);
        }
        extra += 1;
    }
}

/// Seconds as hours, the unit compute time is shown in everywhere.
pub fn hours(seconds: f64) -> f64 {
    seconds / SECONDS_PER_HOUR
}

const SECONDS_PER_HOUR: f64 = 3600.0;

/// A metric's name as a person says it.
pub fn metric_label(metric: &str) -> &str {
    match metric {
        "storage_bytes" => "storage",
        "compute_seconds" => "compute time",
        "gpu_compute_seconds" => "GPU time",
        other => other,
    }
}

/// Decimals added at most to tell two values apart.
const MAX_EXTRA_DECIMALS: usize = 6;

fn human_with(value: Option<f64>, unit: &str, extra: usize) -> String {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return String::new();
    };
    match unit {
        "bytes" => match byte_scale(v) {
            (0, _) => format!("{} B", grouped(v, extra)),
            (prefix, scaled) => format!("{} {}", number(scaled, extra), BYTE_PREFIXES[prefix]),
        },
        "seconds" => format!("{} h", number(hours(v), extra)),
        "ms" => format!("{} h", number(v / 3.6e6, extra)),
        _ => grouped(v, extra),
    }
}

/// Byte values are shown in these units, powers of 1000 apart.
pub const BYTE_PREFIXES: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];

/// The unit a byte value is shown in (an index into [`BYTE_PREFIXES`]) and the
/// value in it; the workbook's number formats scale by the same unit.
pub fn byte_scale(v: f64) -> (usize, f64) {
    let mut scaled = v;
    let mut prefix = 0;
    while scaled.abs() >= 1000.0 && prefix + 1 < BYTE_PREFIXES.len() {
        scaled /= 1000.0;
        prefix += 1;
    }
    (prefix, scaled)
}

/// Decimals for three significant digits: two below 10, one below 1,000, none
/// from there up (or for 0).
pub fn significant_decimals(v: f64) -> usize {
    if v == 0.0 || v.abs() >= 1000.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    }
}

/// [`significant_decimals`] plus `extra`.
fn number(v: f64, extra: usize) -> String {
    grouped(v, significant_decimals(v) + extra)
}

/// `v` with `decimals` decimals and a comma between groups of three digits.
fn grouped(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text.as_str(), None),
    };
    let mut out = String::with_capacity(text.len() + whole.len() / 3 + 1);
    // "-0" is not a number a person writes.
    if v < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = fraction {
        out.push('.');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_a_person_reads() {
        assert_eq!(human(Some(166.9e9), "bytes"), "166.9 GB");
        assert_eq!(human(Some(2.5e9), "bytes"), "2.50 GB");
        assert_eq!(human(Some(1.25e12), "bytes"), "1.25 TB");
        assert_eq!(human(Some(512.0), "bytes"), "512 B");
        assert_eq!(human(Some(0.0), "bytes"), "0 B");
        assert_eq!(human(Some(7886.0 * 3600.0), "seconds"), "7,886 h");
        assert_eq!(human(Some(7200.0), "seconds"), "2.00 h");
        assert_eq!(human(Some(36_000_000.0), "ms"), "10.0 h");
        assert_eq!(human(Some(0.0), "ms"), "0 h");
        assert_eq!(human(Some(14.0), "count"), "14");
        assert_eq!(human(Some(1_234_567.0), "count"), "1,234,567");
        assert_eq!(human(Some(-1.0), "count"), "-1");
        assert_eq!(human(Some(-0.2), "count"), "0");
        assert_eq!(human(None, "bytes"), "");
        assert_eq!(human(Some(f64::NAN), "bytes"), "");
    }

    #[test]
    fn a_pair_of_different_values_never_prints_alike() {
        assert_eq!(
            human_pair(Some(166.96e9), Some(167.0e9), "bytes"),
            ("166.96 GB".to_string(), "167.00 GB".to_string())
        );
        // Equal values print alike; a usual pair keeps the usual decimals.
        assert_eq!(
            human_pair(Some(14.0), Some(14.0), "count"),
            ("14".to_string(), "14".to_string())
        );
        assert_eq!(
            human_pair(Some(3600.0), Some(36_000.0), "seconds"),
            ("1.00 h".to_string(), "10.0 h".to_string())
        );
    }
}
