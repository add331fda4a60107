//! What a report message carries: the workbook and the CSV files zipped, read from
//! the files the run wrote (the workbook attached is that file, byte for byte).
//! With an organization filter only those organizations' CSV rows go, and a file
//! without an `organization_id` column stays out (the subscription's check refuses
//! the workbook, which holds every organization). Attachments are kept while their
//! total stays within the subscription's limit; one that would pass it is replaced
//! by a sentence and, with `report.base_url`, a link. Everything is built in
//! memory, never more than the limit: no report data is left in a temporary file.

use crate::email::EmailError;
use crate::email::message::Attachment;
use crate::email::subscription::{Attach, RunView, Subscription};
use crate::render::WrittenFile;
use crate::report::Format;
use std::collections::BTreeSet;
use std::io::{Cursor, Seek, SeekFrom, Write};
use std::path::Path;

/// The workbook's content type.
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// The attachments of a message and what was left out, in sentences.
#[derive(Debug, Default)]
pub struct Attached {
    pub files: Vec<Attachment>,
    /// One sentence per file left out (with its link when there is one).
    pub left_out: Vec<String>,
}

/// Where the report folder of the run is served, if anywhere.
#[derive(Debug, Clone)]
pub struct Links {
    /// `report.base_url` without its trailing `/`.
    pub base: Option<String>,
    /// The as-of date: the folder's name.
    pub as_of: String,
    /// The folder on this machine, named when there is no link.
    pub dir: String,
}

impl Links {
    /// The link to `file` of the folder (`""`: the folder).
    pub fn to(&self, file: &str) -> Option<String> {
        self.base
            .as_ref()
            .map(|base| format!("{base}/{}/{file}", self.as_of))
    }

    /// Where a file left out can be found, in words.
    fn where_is(&self, file: &str) -> String {
        match self.to(file) {
            Some(link) => format!("it is at {link}"),
            None => format!(
                "it is in the report folder {} on the orgledger host",
                self.dir
            ),
        }
    }
}

/// The subscription's attachments for the run.
pub fn attachments(
    view: &RunView,
    sub: &Subscription,
    links: &Links,
) -> Result<Attached, EmailError> {
    let mut out = Attached::default();
    let mut budget = sub.max_attachment_bytes;
    let too_big = |name: &str, bytes: Option<u64>, out: &mut Attached| {
        let shown = bytes.map(|b| format!(" ({})", size(b))).unwrap_or_default();
        out.left_out.push(format!(
            "{name}{shown} is not attached: this subscription's attachments stay under {}; {}.",
            size(sub.max_attachment_bytes),
            links.where_is(name)
        ));
    };
    for what in &sub.attach {
        match what {
            Attach::Workbook => {
                let Some(book) = view.files.iter().find(|f| f.format == Format::Xlsx) else {
                    continue;
                };
                let name = file_name(&book.path);
                if book.bytes > budget {
                    too_big(&name, Some(book.bytes), &mut out);
                    continue;
                }
                let bytes = std::fs::read(&book.path).map_err(|cause| EmailError::Io {
                    path: book.path.clone(),
                    cause,
                })?;
                budget -= bytes.len() as u64;
                out.files.push(Attachment {
                    name,
                    content_type: XLSX,
                    bytes,
                });
            }
            Attach::Csv => {
                let name = format!("orgledger-{}-csv.zip", links.as_of);
                let csvs: Vec<&WrittenFile> = view
                    .files
                    .iter()
                    .filter(|f| f.format == Format::Csv)
                    .collect();
                match zipped(&csvs, sub.organizations.as_ref(), budget)? {
                    Zipped::Done { bytes, without } => {
                        budget -= bytes.len() as u64;
                        out.files.push(Attachment {
                            name,
                            content_type: "application/zip",
                            bytes,
                        });
                        if !without.is_empty() {
                            out.left_out.push(format!(
                                "Not in {}: {} (no organization_id column to keep this subscription's organizations' rows by).",
                                links.as_of,
                                without.join(", ")
                            ));
                        }
                    }
                    Zipped::TooBig => too_big(&name, None, &mut out),
                }
            }
        }
    }
    Ok(out)
}

/// A size as a person reads it ("19.2 kB", "1.20 MB"), as the reports show bytes.
pub fn size(bytes: u64) -> String {
    crate::report::units::human(Some(bytes as f64), "bytes")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

enum Zipped {
    /// The archive, and the files left out by the organization filter.
    Done {
        bytes: Vec<u8>,
        without: Vec<String>,
    },
    /// The archive passed the budget.
    TooBig,
}

/// The CSV files as one zip (deflate), filtered to `orgs`' rows when given,
/// stopped as soon as it passes `budget` bytes.
fn zipped(
    files: &[&WrittenFile],
    orgs: Option<&BTreeSet<i64>>,
    budget: u64,
) -> Result<Zipped, EmailError> {
    let mut zip = zip::ZipWriter::new(Capped::new(budget));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut without = Vec::new();
    for file in files {
        let name = file_name(&file.path);
        let io = |cause| EmailError::Io {
            path: file.path.clone(),
            cause,
        };
        let written = match orgs {
            None => {
                let mut source = std::fs::File::open(&file.path).map_err(io)?;
                zip.start_file(name.as_str(), options)
                    .and_then(|()| std::io::copy(&mut source, &mut zip).map_err(Into::into))
                    .map(|_| true)
            }
            Some(orgs) => match organization_column(&file.path)? {
                None => {
                    without.push(name.clone());
                    continue;
                }
                Some(at) => zip
                    .start_file(name.as_str(), options)
                    .and_then(|()| rows_of(&file.path, at, orgs, &mut zip).map_err(Into::into))
                    .map(|()| true),
            },
        };
        match written {
            Ok(_) => {}
            Err(e) if Capped::passed(&e) => return Ok(Zipped::TooBig),
            Err(e) => {
                return Err(EmailError::Io {
                    path: file.path.clone(),
                    cause: std::io::Error::other(e.to_string()),
                });
            }
        }
    }
    match zip.finish() {
        Ok(capped) => Ok(Zipped::Done {
            bytes: capped.inner.into_inner(),
            without,
        }),
        Err(e) if Capped::passed(&e) => Ok(Zipped::TooBig),
        Err(e) => Err(EmailError::Io {
            path: files.first().map(|f| f.path.clone()).unwrap_or_default(),
            cause: std::io::Error::other(e.to_string()),
        }),
    }
}

/// Where a CSV file's `organization_id` column is, if it has one.
fn organization_column(path: &Path) -> Result<Option<usize>, EmailError> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| csv_error(path, e))?;
    let headers = reader.headers().map_err(|e| csv_error(path, e))?;
    Ok(headers.iter().position(|h| h == "organization_id"))
}

/// The header and the rows of `orgs`, written to `out`.
fn rows_of(
    path: &Path,
    at: usize,
    orgs: &BTreeSet<i64>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut reader = csv::Reader::from_path(path).map_err(std::io::Error::other)?;
    let mut writer = csv::Writer::from_writer(out);
    writer
        .write_record(reader.headers().map_err(std::io::Error::other)?)
        .map_err(std::io::Error::other)?;
    for record in reader.records() {
        let record = record.map_err(std::io::Error::other)?;
        let org = record.get(at).and_then(|v| v.parse::<i64>().ok());
        if org.is_some_and(|o| orgs.contains(&o)) {
            writer
                .write_record(&record)
                .map_err(std::io::Error::other)?;
        }
    }
    writer.flush()
}

fn csv_error(path: &Path, e: csv::Error) -> EmailError {
    EmailError::Io {
        path: path.to_path_buf(),
        cause: std::io::Error::other(e.to_string()),
    }
}

/// A buffer in memory that refuses to grow past its cap: the zip being built
/// stops there instead of holding a large report in memory.
struct Capped {
    inner: Cursor<Vec<u8>>,
    cap: u64,
}

/// The text of the refusal, by which it is known again through the zip's errors.
const PASSED: &str = "the attachment passed its size limit";

impl Capped {
    fn new(cap: u64) -> Capped {
        Capped {
            inner: Cursor::new(Vec::new()),
            cap,
        }
    }

    /// Whether an error of the zip writer is this buffer's refusal.
    fn passed(e: &dyn std::error::Error) -> bool {
        e.to_string().contains(PASSED)
    }
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.inner.position() + buf.len() as u64 > self.cap {
            return Err(std::io::Error::other(PASSED));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for Capped {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn written(dir: &Path, name: &str, text: &str) -> WrittenFile {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        WrittenFile {
            report: name.trim_end_matches(".csv").to_string(),
            format: Format::Csv,
            path,
            rows: text.lines().count().saturating_sub(1),
            holds: crate::render::Holds::Rows(text.lines().count().saturating_sub(1)),
            bytes: text.len() as u64,
            sha256: String::new(),
        }
    }

    fn entries(bytes: Vec<u8>) -> Vec<(String, String)> {
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("zip");
        (0..archive.len())
            .map(|i| {
                let mut file = archive.by_index(i).expect("entry");
                assert_eq!(file.compression(), zip::CompressionMethod::Deflated);
                let mut text = String::new();
                file.read_to_string(&mut text).expect("read");
                (file.name().expect("entry name").to_string(), text)
            })
            .collect()
    }

    #[test]
    fn the_csv_files_zip_whole_or_filtered_and_a_zip_past_the_limit_is_given_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trials = written(
            dir.path(),
            "trials.csv",
            "trial_id,organization_id,user_name\n1,12,\"Ann, B\"\n2,31,Bo\n3,12,Cy\n",
        );
        let trends = written(
            dir.path(),
            "compute_trends.csv",
            "entity_type,entity_id\nuser,5\n",
        );
        let Zipped::Done { bytes, without } =
            zipped(&[&trials, &trends], None, 1_000_000).expect("zip")
        else {
            panic!("within the limit");
        };
        assert!(without.is_empty());
        let all = entries(bytes);
        assert_eq!(
            all[0],
            (
                "trials.csv".to_string(),
                std::fs::read_to_string(&trials.path).expect("csv")
            )
        );
        assert_eq!(all.len(), 2);

        let orgs = BTreeSet::from([12]);
        let Zipped::Done { bytes, without } =
            zipped(&[&trials, &trends], Some(&orgs), 1_000_000).expect("zip")
        else {
            panic!("within the limit");
        };
        assert_eq!(without, ["compute_trends.csv"]);
        let only = entries(bytes);
        assert_eq!(only.len(), 1);
        assert_eq!(
            only[0].1,
            "trial_id,organization_id,user_name\n1,12,\"Ann, B\"\n3,12,Cy\n"
        );

        assert!(matches!(
            zipped(&[&trials], None, 100).expect("zip"),
            Zipped::TooBig
        ));
    }
}
