//! The tables a run keeps for the readers after its files (the alerts, the
//! attention list, the pages): most in memory, the ones the size of the projects
//! on disk ([`crate::report::spill`]). A reader asks by report name and takes the
//! rows batch by batch or a range of organizations at a time, wherever they are.

use crate::report::ReportError;
use crate::report::batches::append;
use crate::report::error::pl;
use crate::report::spill::Spill;
use crate::report::tables::Table;
use polars::prelude::{BooleanChunked, DataFrame, NewChunkedArray};
use std::collections::{BTreeMap, HashSet};

/// The tables a run keeps, by report name (pseudonymized when `redact_pii`).
#[derive(Debug, Default)]
pub struct KeptTables {
    /// The tables in memory: every report but `compute_trends` (its digest) and
    /// those on disk.
    pub frames: BTreeMap<String, DataFrame>,
    /// The tables on disk.
    pub spilled: BTreeMap<String, Spill>,
}

impl KeptTables {
    /// `report`'s table in memory, if the run kept it there.
    pub fn frame(&self, report: &str) -> Option<&DataFrame> {
        self.frames.get(report)
    }

    /// Whether the run kept `report`, in memory or on disk.
    pub fn has(&self, report: &str) -> bool {
        self.frames.contains_key(report) || self.spilled.contains_key(report)
    }

    /// Hands `report`'s rows to `each` in table order, batch by batch (a table in
    /// memory is one batch); false when the run did not keep it.
    pub fn for_each_batch(
        &self,
        report: &str,
        mut each: impl FnMut(&DataFrame) -> Result<(), ReportError>,
    ) -> Result<bool, ReportError> {
        if let Some(df) = self.frames.get(report) {
            each(df)?;
            return Ok(true);
        }
        match self.spilled.get(report) {
            Some(spill) => spill.for_each_batch(each).map(|()| true),
            None => Ok(false),
        }
    }

    /// `report`'s whole table, wherever it is kept (empty without batches), for
    /// readers that want every row at once (tests); None when the run did not keep
    /// it.
    pub fn whole(&self, report: &str) -> Result<Option<DataFrame>, ReportError> {
        let mut out = DataFrame::empty();
        let kept = self.for_each_batch(report, |df| append(report, &mut out, df.clone()))?;
        Ok(kept.then_some(out))
    }

    /// The rows of the organizations `orgs` in `report`'s table, in table order;
    /// None when the run did not keep it. One pass over the table: a table on disk
    /// is read again for each range.
    pub fn of_orgs(&self, report: &str, orgs: &[i64]) -> Result<Option<DataFrame>, ReportError> {
        let orgs: HashSet<i64> = orgs.iter().copied().collect();
        let mut out = DataFrame::empty();
        let kept = self.for_each_batch(report, |df| {
            let ids = Table::new(report, df).int("organization_id")?;
            let mask: Vec<bool> = ids
                .into_iter()
                .map(|id| id.is_some_and(|id| orgs.contains(&id)))
                .collect();
            let rows = df
                .filter(&BooleanChunked::from_slice("in range".into(), &mask))
                .map_err(pl(report, "taking the organizations' rows"))?;
            append(report, &mut out, rows)
        })?;
        Ok(kept.then_some(out))
    }

    /// How many tables the run kept.
    pub fn len(&self) -> usize {
        self.frames.len() + self.spilled.len()
    }

    /// Whether it kept none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
