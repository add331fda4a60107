//! The SQL extracts: the built-in reports' (`queries/<name>.sql`, compiled into the
//! binary, so the tool works from any directory and a report's figures are defined
//! by the build alone), and the custom reports found in `<queries>/custom/*.sql`.
//!
//! An extract file holds one or more SELECT statements. A line `-- part: NAME` starts a
//! named section; text before the first marker is the section `main`. A report's job
//! asks for its sections by name.

use crate::report::declaration::Report;
use crate::report::error::ReportError;
use std::path::{Path, PathBuf};

/// One report's SQL, split into sections.
#[derive(Debug, Clone)]
pub struct Extract {
    /// The report it belongs to.
    pub report: String,
    /// Where the text came from, for messages: a path, or `embedded queries/<name>.sql`.
    pub origin: String,
    /// `(section name, SQL)` in file order.
    pub parts: Vec<(String, String)>,
}

impl Extract {
    /// Splits a file's text into its sections.
    pub fn parse(report: &str, origin: String, text: &str) -> Extract {
        let mut parts: Vec<(String, String)> = Vec::new();
        let mut name = String::from("main");
        let mut body = String::new();
        for line in text.lines() {
            if let Some(next) = part_marker(line) {
                push_part(&mut parts, &name, &body);
                name = next.to_string();
                body.clear();
            } else {
                body.push_str(line);
                body.push('\n');
            }
        }
        push_part(&mut parts, &name, &body);
        Extract {
            report: report.to_string(),
            origin,
            parts,
        }
    }

    /// The SQL of a section.
    pub fn part(&self, name: &str) -> Result<&str, ReportError> {
        self.parts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, sql)| sql.as_str())
            .ok_or_else(|| ReportError::MissingPart {
                report: self.report.clone(),
                file: self.origin.clone(),
                part: name.to_string(),
            })
    }
}

/// `-- part: NAME` → NAME.
fn part_marker(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("--")?.trim_start();
    let name = rest.strip_prefix("part:")?.trim();
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// Keeps a section unless it holds only comments and blanks; drops a trailing `;`.
fn push_part(parts: &mut Vec<(String, String)>, name: &str, body: &str) {
    let has_sql = body.lines().any(|l| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with("--")
    });
    if has_sql {
        let sql = body.trim_end().trim_end_matches(';').to_string();
        parts.push((name.to_string(), sql));
    }
}

/// The extract of a built-in report: its shipped SQL, compiled into the binary.
pub fn builtin(report: &Report) -> Extract {
    Extract::parse(
        report.name.as_str(),
        format!("embedded queries/{}.sql", report.name),
        report.sql,
    )
}

/// Reads an extract from a file.
pub fn read(report: &str, path: &Path) -> Result<Extract, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::ReadSql {
        report: report.to_string(),
        path: path.to_path_buf(),
        cause: source,
    })?;
    Ok(Extract::parse(report, path.display().to_string(), &text))
}

/// The custom reports of a queries folder: `(name, path)` of each `custom/*.sql`,
/// sorted by name. A missing `custom/` folder means none.
pub fn custom_reports(queries_dir: Option<&Path>) -> Result<Vec<(String, PathBuf)>, ReportError> {
    let Some(dir) = queries_dir.map(|d| d.join("custom")) else {
        return Ok(Vec::new());
    };
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&dir).map_err(|source| ReportError::ListCustom {
        path: dir.clone(),
        cause: source,
    })?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|source| ReportError::ListCustom {
                path: dir.clone(),
                cause: source,
            })?
            .path();
        if path.extension().and_then(|e| e.to_str()) != Some("sql") || !path.is_file() {
            continue;
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| valid_name(s))
            .ok_or_else(|| ReportError::BadCustomName { path: path.clone() })?
            .to_string();
        out.push((name, path));
    }
    out.sort();
    Ok(out)
}

/// A name usable as a report and file name.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_on_part_markers() {
        let text = "-- a comment only\n-- part: one\nSELECT 1;\n\n-- part: two\n-- why\nSELECT 2\n";
        let e = Extract::parse("r", "x.sql".into(), text);
        let names: Vec<&str> = e.parts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(e.part("one").expect("one"), "SELECT 1");
        assert!(e.part("two").expect("two").ends_with("SELECT 2"));
        assert!(matches!(
            e.part("three"),
            Err(ReportError::MissingPart { .. })
        ));
        let plain = Extract::parse("r", "y.sql".into(), "SELECT 3");
        assert_eq!(plain.part("main").expect("main"), "SELECT 3");
    }

    #[test]
    fn every_builtin_extract_has_sql() {
        for report in crate::report::registry::BUILTIN {
            assert!(!builtin(report).parts.is_empty(), "{}", report.name);
        }
    }
}
