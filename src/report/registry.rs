//! The built-in reports: the modules' declarations, in the order they are listed
//! and written. The run, `--help`, the daemon's config and the benchmark read
//! [`BUILTIN`]; everything about a report is in its module
//! (`crate::report::declaration`).

use crate::report::declaration::Report;

/// The built-in reports, in the order they are listed and written.
pub const BUILTIN: &[&Report] = &[
    &super::entitlements::REPORT,
    &super::trials::REPORT,
    &super::project_compute::REPORT,
    &super::compute_trends::REPORT,
    &super::usage_summary::REPORT,
    &super::storage_trends::REPORT,
    &super::changes::REPORT,
];

/// The built-in report called `name`.
pub fn find(name: &str) -> Option<&'static Report> {
    BUILTIN.iter().copied().find(|b| b.name == *name)
}

/// The built-in reports as `--help` lists them, a line each.
pub fn help() -> String {
    let width = BUILTIN
        .iter()
        .map(|b| b.name.as_str().len())
        .max()
        .unwrap_or(0);
    BUILTIN
        .iter()
        .map(|b| format!("  {:width$}  {}", b.name.as_str(), b.about))
        .collect::<Vec<_>>()
        .join("\n")
}
