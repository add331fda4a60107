//! A report's rows on their way out, one batch at a time in output order: a job
//! hands each batch to an [`Emit`]; the batch is cut to the report's declared
//! columns, gets its completeness columns and pseudonyms, goes to the renderer's
//! [`Sink`] (its files, and whatever a later step gathers as the rows pass, such as
//! `compute_trends`' digest) and, for a report the later steps read back, to its
//! [`KeptTable`]. A report as large as the users times their periods
//! (`compute_trends`: 2.2 M rows over xlarge) is never held whole: memory follows
//! the batch, not the world.

use crate::report::attention::IncompleteRows;
use crate::report::completeness::Completeness;
use crate::report::declaration::Report;
use crate::report::error::{ReportError, pl};
use crate::report::kept::KeptTable;
use crate::report::pii::Pseudonyms;
use polars::prelude::DataFrame;
use std::sync::OnceLock;

/// Where a job hands its rows, batch by batch in output order.
pub(crate) type Emit<'e> = dyn FnMut(DataFrame) -> Result<(), ReportError> + 'e;

/// Where a report's finished rows go (completeness columns and pseudonyms
/// attached), batch by batch in output order: a renderer's files, and what a
/// step gathers from the rows as they pass.
pub trait Sink {
    /// Takes one batch.
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError>;
}

/// A sink that takes nothing: the run keeps what it keeps and no more.
impl Sink for () {
    fn rows(&mut self, _: &DataFrame) -> Result<(), ReportError> {
        Ok(())
    }
}

/// Both sinks, each batch to the first, then the second.
impl<A: Sink, B: Sink> Sink for (A, B) {
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        self.0.rows(batch)?;
        self.1.rows(batch)
    }
}

/// A sink a step attaches to some reports only.
impl<S: Sink> Sink for Option<S> {
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        match self {
            Some(sink) => sink.rows(batch),
            None => Ok(()),
        }
    }
}

/// Appends a batch to a table kept whole (the empty frame takes the first batch as
/// it is, columns and all).
pub(crate) fn append(
    report: &str,
    table: &mut DataFrame,
    batch: DataFrame,
) -> Result<(), ReportError> {
    if table.width() == 0 {
        *table = batch;
        return Ok(());
    }
    table
        .vstack_mut_owned(batch)
        .map_err(pl(report, "keeping the table"))?;
    Ok(())
}

/// The completeness every built-in report's rows take, read on a thread of its own
/// while the jobs start: a job's first batch waits for it. None when reading it
/// failed (the run then reports that error, not the jobs').
pub(crate) type Shared = OnceLock<Option<Completeness>>;

/// The finishing of one report's batches: its columns, the completeness columns,
/// pseudonyms, the sink, and what is kept.
pub(crate) struct Finisher<'a, S> {
    pub report: &'a str,
    /// The built-in report's declaration; None for a custom report (its rows as
    /// its query returns them).
    pub declared: Option<&'static Report>,
    pub complete: &'a Shared,
    pub names: Option<(Pseudonyms, bool)>,
    pub sink: S,
    pub kept: Option<KeptTable>,
    pub rows: usize,
    /// The incomplete rows, for a report that carries `complete`.
    pub incomplete: Option<IncompleteRows>,
}

impl<'a, S: Sink> Finisher<'a, S> {
    pub(crate) fn new(
        report: &'a str,
        declared: Option<&'static Report>,
        complete: &'a Shared,
        names: Option<(Pseudonyms, bool)>,
        sink: S,
    ) -> Self {
        Finisher {
            report,
            declared,
            complete,
            names,
            sink,
            kept: None,
            rows: 0,
            incomplete: declared
                .and_then(|d| d.complete)
                .map(|c| IncompleteRows::new(report, c.describe)),
        }
    }

    /// Keeps the rows for the steps after the files, in memory up to `limit`
    /// bytes, then on disk.
    pub(crate) fn keeping(mut self, limit: usize) -> Self {
        self.kept = Some(KeptTable::new(self.report, limit));
        self
    }

    /// One batch through to the sink and the kept table.
    pub(crate) fn batch(&mut self, mut df: DataFrame) -> Result<(), ReportError> {
        if let Some(declared) = self.declared {
            df = df
                .select(declared.columns.iter().copied())
                .map_err(pl(self.report, "selecting the report's columns"))?;
        }
        if let Some(complete) = self.declared.and_then(|d| d.complete) {
            let Some(read) = self.complete.wait() else {
                return Err(ReportError::NoCompleteness {
                    report: self.report.to_string(),
                });
            };
            df = read.attach(self.report, complete.sources, df)?;
        }
        if let Some((names, custom)) = &self.names {
            df = crate::report::pii::redact(names, self.report, df, *custom)?;
        }
        self.rows += df.height();
        if let Some(incomplete) = &mut self.incomplete {
            incomplete.add(&df)?;
        }
        self.sink.rows(&df)?;
        match &mut self.kept {
            Some(kept) => kept.add(df),
            None => Ok(()),
        }
    }

    /// Once the last batch is in: the kept table readable.
    pub(crate) fn finish(&mut self) -> Result<Option<KeptTable>, ReportError> {
        let mut kept = self.kept.take();
        if let Some(kept) = &mut kept {
            kept.finish()?;
        }
        Ok(kept)
    }
}
