//! The tables a run keeps for the steps after its files (the attention list, the
//! pages, the workbook's action sheet, the alerts): a report's declaration says
//! whether it is read back (`Report::kept`), and its size where it waits. A table
//! stays in memory while it is small and moves to disk ([`crate::report::spill`])
//! once it passes [`MEMORY_PER_TABLE`]; its readers take it the same way wherever
//! it is: batch by batch, the rows of a range of organizations, or whole.

use crate::report::ReportError;
use crate::report::batches::append;
use crate::report::error::pl;
use crate::report::spill::Spill;
use crate::report::tables::Table;
use polars::prelude::{BooleanChunked, DataFrame, NewChunkedArray};
use std::collections::{BTreeMap, HashSet};

/// The estimated size past which a kept table moves to disk. A table the size of
/// the organizations stays in memory (entitlements over `xxlarge`, 45,005 rows:
/// about 6 MB); one a row per project goes to disk over the large worlds
/// (project_compute over `xxlarge`, 168,365 rows: 36 MB, which held in memory
/// stood under every later step of the run).
pub const MEMORY_PER_TABLE: usize = 8 << 20;

/// One table the run keeps.
#[derive(Debug)]
pub struct KeptTable {
    report: String,
    place: Place,
    rows: usize,
    limit: usize,
}

#[derive(Debug)]
enum Place {
    Memory(DataFrame),
    Disk(Spill),
}

impl KeptTable {
    /// An empty table of `report`, moved to disk past `limit` bytes.
    pub(crate) fn new(report: &str, limit: usize) -> KeptTable {
        KeptTable {
            report: report.to_string(),
            place: Place::Memory(DataFrame::empty()),
            rows: 0,
            limit,
        }
    }

    /// A table kept on disk from its first batch, read back `rows` at a time
    /// (tests: slices smaller than a test world).
    #[cfg(test)]
    pub(crate) fn on_disk_in_slices(report: &str, rows: usize) -> KeptTable {
        KeptTable {
            report: report.to_string(),
            place: Place::Disk(Spill::new(report).with_slice_rows(rows)),
            rows: 0,
            limit: 0,
        }
    }

    /// Appends a batch (the rows as they went to the files).
    pub(crate) fn add(&mut self, batch: DataFrame) -> Result<(), ReportError> {
        self.rows += batch.height();
        match &mut self.place {
            Place::Memory(df) => {
                append(&self.report, df, batch)?;
                if df.estimated_size() > self.limit {
                    tracing::debug!(report = %self.report, rows = self.rows, "table kept on disk");
                    let mut spill = Spill::new(&self.report);
                    spill.add(df)?;
                    self.place = Place::Disk(spill);
                }
            }
            Place::Disk(spill) => spill.add(&batch)?,
        }
        Ok(())
    }

    /// Once the last batch is in: a table on disk becomes readable.
    pub(crate) fn finish(&mut self) -> Result<(), ReportError> {
        match &mut self.place {
            Place::Disk(spill) => spill.finish(),
            Place::Memory(_) => Ok(()),
        }
    }

    /// The report.
    pub fn report(&self) -> &str {
        &self.report
    }

    /// Its rows.
    pub fn height(&self) -> usize {
        self.rows
    }

    /// Whether it waits on disk (what the run's memory does not hold).
    pub fn on_disk(&self) -> bool {
        matches!(self.place, Place::Disk(_))
    }

    /// Hands its rows to `each` in table order, batch by batch: a table in memory is
    /// one batch, one on disk a slice at a time. A table without rows is one empty
    /// batch with its columns (none when the job handed over no batch at all).
    pub fn for_each_batch(
        &self,
        mut each: impl FnMut(&DataFrame) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        match &self.place {
            Place::Memory(df) if df.width() == 0 => Ok(()),
            Place::Memory(df) => each(df),
            Place::Disk(spill) => spill.for_each_batch(each),
        }
    }

    /// The whole table (empty without batches), for readers that want every row at
    /// once: the tables the size of the organizations, and tests.
    pub fn whole(&self) -> Result<DataFrame, ReportError> {
        if let Place::Memory(df) = &self.place {
            return Ok(df.clone());
        }
        let mut out = DataFrame::empty();
        self.for_each_batch(|df| append(&self.report, &mut out, df.clone()))?;
        Ok(out)
    }

    /// The rows of the organizations `orgs`, in table order: one pass over the
    /// table (a table on disk is read again for each range).
    pub fn of_orgs(&self, orgs: &[i64]) -> Result<DataFrame, ReportError> {
        self.rows_of("organization_id", orgs)
    }

    /// The rows whose `column` holds one of `ids`, in table order (see
    /// [`KeptTable::of_orgs`]).
    pub fn rows_of(&self, column: &str, ids: &[i64]) -> Result<DataFrame, ReportError> {
        let ids: HashSet<i64> = ids.iter().copied().collect();
        let mut out = DataFrame::empty();
        self.for_each_batch(|df| {
            let values = Table::new(&self.report, df).int(column)?;
            let mask: Vec<bool> = values
                .into_iter()
                .map(|id| id.is_some_and(|id| ids.contains(&id)))
                .collect();
            let rows = df
                .filter(&BooleanChunked::from_slice("in range".into(), &mask))
                .map_err(pl(&self.report, "taking the organizations' rows"))?;
            append(&self.report, &mut out, rows)
        })?;
        Ok(out)
    }
}

/// The tables a run keeps, by report name (pseudonymized when `redact_pii`).
#[derive(Debug, Default)]
pub struct KeptTables(BTreeMap<String, KeptTable>);

impl KeptTables {
    /// `report`'s table, when the run built and kept it.
    pub fn get(&self, report: impl AsRef<str>) -> Option<&KeptTable> {
        self.0.get(report.as_ref())
    }

    /// Adds a finished table.
    pub(crate) fn insert(&mut self, table: KeptTable) {
        self.0.insert(table.report.clone(), table);
    }

    /// The tables, by report name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// How many tables the run kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it kept none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Extend<KeptTable> for KeptTables {
    fn extend<I: IntoIterator<Item = KeptTable>>(&mut self, tables: I) {
        for table in tables {
            self.insert(table);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::{Column, DataType};

    fn batch(orgs: &[Option<i64>], names: &[Option<&str>]) -> DataFrame {
        let names: Vec<Option<String>> = names.iter().map(|n| n.map(str::to_string)).collect();
        DataFrame::new_infer_height(vec![
            Column::new("organization_id".into(), orgs.to_vec()),
            Column::new("project_name".into(), names),
        ])
        .expect("batch")
    }

    fn names(df: &DataFrame) -> Vec<Option<String>> {
        let t = Table::new("test", df);
        let names = t.text("project_name").expect("names");
        names.into_iter().map(|n| n.map(str::to_string)).collect()
    }

    /// The same batches kept in memory and on disk, the latter read back in slices
    /// of two rows (slices that cross batches).
    fn both(parts: &[DataFrame]) -> [KeptTable; 2] {
        let mut tables = [
            KeptTable::new("test", usize::MAX),
            KeptTable::on_disk_in_slices("test", 2),
        ];
        for table in &mut tables {
            for part in parts {
                table.add(part.clone()).expect("kept");
            }
            table.finish().expect("finished");
        }
        assert!(!tables[0].on_disk() && tables[1].on_disk());
        tables
    }

    /// Three batches: nulls, a non-ASCII text, an organization in several batches.
    fn three_batches() -> Vec<DataFrame> {
        vec![
            batch(&[Some(1), Some(2)], &[Some("a"), None]),
            batch(
                &[Some(2), None, Some(3)],
                &[Some("c"), Some("d"), Some("é")],
            ),
            batch(&[Some(1), Some(2)], &[Some("f"), Some("g")]),
        ]
    }

    #[test]
    fn a_kept_table_reads_back_every_row_in_table_order_wherever_it_is() {
        let [memory, disk] = both(&three_batches());
        let mut slices = Vec::new();
        disk.for_each_batch(|df| {
            slices.push(df.height());
            Ok(())
        })
        .expect("read");
        assert_eq!(
            slices,
            [2, 2, 2, 1],
            "a table on disk comes back a slice at a time"
        );
        for table in [memory, disk] {
            assert_eq!(table.height(), 7);
            let back = table.whole().expect("read back");
            let orgs = Table::new("test", &back).int("organization_id");
            assert_eq!(
                orgs.expect("ids"),
                [Some(1), Some(2), Some(2), None, Some(3), Some(1), Some(2)]
            );
            assert_eq!(names(&back)[5].as_deref(), Some("f"));
        }
    }

    #[test]
    fn a_range_of_organizations_gets_their_rows_only_in_table_order() {
        for table in both(&three_batches()) {
            let of = |orgs: &[i64]| names(&table.of_orgs(orgs).expect("range"));
            let text = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
            assert_eq!(of(&[1]), text(&["a", "f"]));
            assert_eq!(of(&[3, 1]), text(&["a", "é", "f"]));
            assert_eq!(of(&[2]), [None, Some("c".into()), Some("g".into())]);
            assert!(of(&[9]).is_empty(), "an organization without rows");
        }
    }

    #[test]
    fn a_table_moves_to_disk_once_past_its_size_and_keeps_every_row() {
        let parts = three_batches();
        let limit = parts[0].estimated_size() + 1;
        let mut table = KeptTable::new("test", limit);
        table.add(parts[0].clone()).expect("kept");
        assert!(!table.on_disk(), "within its size it stays in memory");
        table.add(parts[1].clone()).expect("kept");
        assert!(table.on_disk(), "past its size it waits on disk");
        table.add(parts[2].clone()).expect("kept");
        table.finish().expect("finished");
        let back = table.whole().expect("read back");
        assert_eq!(back.height(), 7);
        assert_eq!(names(&back)[4].as_deref(), Some("é"));
    }

    #[test]
    fn an_all_null_column_reads_back_and_a_table_without_batches_as_nothing() {
        let mut part = batch(&[Some(1)], &[Some("a")]);
        part.with_column(Column::full_null("missing".into(), 1, &DataType::Null))
            .expect("column");
        let [_, disk] = both(&[part]);
        let back = disk.whole().expect("read back");
        assert_eq!(
            back.column("missing").expect("kept").dtype(),
            &DataType::String
        );
        for table in both(&[]) {
            assert_eq!(table.whole().expect("read").height(), 0);
            assert_eq!(table.of_orgs(&[1]).expect("range").height(), 0);
        }
    }

    #[test]
    fn a_table_without_rows_reads_back_with_its_columns() {
        for table in both(&[batch(&[], &[])]) {
            for df in [
                table.whole().expect("whole"),
                table.of_orgs(&[1]).expect("range"),
            ] {
                assert_eq!(df.height(), 0);
                assert_eq!(names(&df), Vec::<Option<String>>::new());
                let ids = Table::new("test", &df).int("organization_id");
                assert_eq!(ids.expect("the column is there"), []);
            }
        }
    }

    #[test]
    fn a_table_on_disk_has_no_name_in_the_file_system() {
        let [_, disk] = both(&three_batches());
        let Place::Disk(spill) = &disk.place else {
            panic!("on disk");
        };
        let target = spill.file_target().expect("the spill's file");
        assert!(
            target.ends_with(" (deleted)") || target.contains("/#"),
            "an anonymous file, not {target}"
        );
    }
}
