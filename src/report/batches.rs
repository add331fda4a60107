//! A report's rows on their way out, one batch at a time in output order: a job
//! hands each batch to an [`Emit`]; the batch gets its completeness columns and
//! pseudonyms, goes to the renderer's [`Sink`] (its files), and leaves behind what
//! the run keeps of the report ([`Kept`]). A report as large as the users times
//! their periods (`compute_trends`: 2.2 M rows over xlarge) is never held whole:
//! memory follows the batch, not the world.

use crate::report::attention::IncompleteRows;
use crate::report::completeness::Completeness;
use crate::report::compute_trends::Digest;
use crate::report::error::{ReportError, pl};
use crate::report::pii::Pseudonyms;
use crate::report::registry::Build;
use crate::report::spill::Spill;
use polars::prelude::DataFrame;
use std::sync::OnceLock;

/// Where a job hands its rows, batch by batch in output order.
pub(crate) type Emit<'e> = dyn FnMut(DataFrame) -> Result<(), ReportError> + 'e;

/// Where a report's finished rows go (completeness columns and pseudonyms
/// attached), batch by batch in output order: a renderer's files.
pub trait Sink {
    /// Writes one batch.
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError>;
}

/// A sink that writes nothing: the run keeps what it keeps ([`Kept`]) and no more.
impl Sink for () {
    fn rows(&mut self, _: &DataFrame) -> Result<(), ReportError> {
        Ok(())
    }
}

/// What the run keeps of a report once its rows have gone to the sink.
pub enum Kept {
    /// The whole table: reports the size of the organizations, trials or changes,
    /// which the alerts, the attention list and the pages read by field.
    Table(DataFrame),
    /// The table on disk: a report the size of the projects, which the attention
    /// list and the pages read a slice or a range of organizations at a time.
    Spilled(Spill),
    /// The digest of a report built in batches: what the page and the summary
    /// show of `compute_trends`.
    Trends(Box<Digest>),
}

impl Kept {
    /// Nothing yet, for `report` built the way `build` says.
    fn empty(report: &str, build: Option<&Build>) -> Kept {
        match build {
            Some(Build::Digested(_)) => Kept::Trends(Box::default()),
            Some(Build::Spilled(_)) => Kept::Spilled(Spill::new(report)),
            _ => Kept::Table(DataFrame::empty()),
        }
    }

    fn add(&mut self, report: &str, batch: DataFrame) -> Result<(), ReportError> {
        match self {
            Kept::Table(df) => append(report, df, batch)?,
            Kept::Spilled(spill) => spill.add(&batch)?,
            Kept::Trends(digest) => digest.add(&batch)?,
        }
        Ok(())
    }

    /// Once the last batch is in: a spill's file becomes readable.
    pub(crate) fn finish(mut self) -> Result<Kept, ReportError> {
        if let Kept::Spilled(spill) = &mut self {
            spill.finish()?;
        }
        Ok(self)
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

/// The finishing of one report's batches: completeness columns, pseudonyms, the
/// sink, and what is kept.
pub(crate) struct Finisher<'a, S> {
    pub report: &'a str,
    pub sources: Option<crate::report::completeness::RowSources>,
    pub complete: &'a Shared,
    pub names: Option<(Pseudonyms, bool)>,
    pub sink: S,
    pub kept: Kept,
    pub rows: usize,
    /// The incomplete rows, for a report that carries `complete`.
    pub incomplete: Option<IncompleteRows>,
}

impl<'a, S: Sink> Finisher<'a, S> {
    pub(crate) fn new(
        report: &'a str,
        build: Option<&Build>,
        complete: &'a Shared,
        names: Option<(Pseudonyms, bool)>,
        sink: S,
    ) -> Self {
        Finisher {
            report,
            sources: None,
            complete,
            names,
            sink,
            kept: Kept::empty(report, build),
            rows: 0,
            incomplete: None,
        }
    }

    /// Attaches the completeness columns to every batch, by `sources`.
    pub(crate) fn with_completeness(
        mut self,
        sources: Option<crate::report::completeness::RowSources>,
    ) -> Self {
        self.sources = sources;
        self.incomplete = sources.map(|_| IncompleteRows::new(self.report));
        self
    }

    /// One batch through to the sink and the kept part.
    pub(crate) fn batch(&mut self, mut df: DataFrame) -> Result<(), ReportError> {
        if let Some(sources) = self.sources {
            let Some(complete) = self.complete.wait() else {
                return Err(ReportError::NoCompleteness {
                    report: self.report.to_string(),
                });
            };
            df = complete.attach(self.report, sources, df)?;
        }
        if let Some((names, custom)) = &self.names {
            df = crate::report::pii::redact(names, self.report, df, *custom)?;
        }
        self.rows += df.height();
        if let Some(incomplete) = &mut self.incomplete {
            incomplete.add(&df)?;
        }
        self.sink.rows(&df)?;
        self.kept.add(self.report, df)
    }
}

/// A sink that keeps the whole table, for the readers that want every row
/// ([`crate::report::frames`]: alerts, tests).
pub(crate) struct Whole {
    report: String,
    table: DataFrame,
}

impl Whole {
    pub(crate) fn new(report: &str) -> Whole {
        Whole {
            report: report.to_string(),
            table: DataFrame::empty(),
        }
    }

    pub(crate) fn into_table(self) -> DataFrame {
        self.table
    }
}

impl Sink for Whole {
    fn rows(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        append(&self.report, &mut self.table, batch.clone())
    }
}
