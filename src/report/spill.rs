//! A report table kept on disk for the rest of the run: its batches go to an
//! uncompressed Parquet file in the temporary folder (`TMPDIR`) as they go out, and
//! its readers take it back a slice at a time ([`Spill::for_each_batch`], through
//! [`crate::report::KeptTables`]). `project_compute` has a row per project of the
//! world: over `xxlarge` (168,365 rows) held whole it stood under every later step
//! of the run, 36 MB of its peak (docs/performance.md). The file goes when the
//! spill is dropped.

use crate::report::error::{ReportError, pl};
use polars::prelude::DataFrame;
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;
use polars_io::parquet::write::{BatchedWriter, ParquetCompression, ParquetWriter};
use std::fs::File;
use std::path::Path;

/// Rows read back at a time: the table's memory while it is read, whatever the
/// size of the world.
const SLICE_ROWS: usize = 32_768;

/// A report table on disk, written batch by batch, read back in slices.
pub struct Spill {
    report: String,
    /// None until the first batch (the file's schema is the first batch's).
    file: Option<tempfile::NamedTempFile>,
    /// Boxed: polars' writer is 700 bytes, the spill is moved once finished.
    writer: Option<Box<BatchedWriter<File>>>,
    rows: usize,
    slice_rows: usize,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("report", &self.report)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Spill {
    /// An empty spill for `report`'s rows.
    pub fn new(report: &str) -> Spill {
        Spill {
            report: report.to_string(),
            file: None,
            writer: None,
            rows: 0,
            slice_rows: SLICE_ROWS,
        }
    }

    /// Read back `rows` at a time (tests: slices smaller than a test world).
    #[cfg(test)]
    pub(crate) fn with_slice_rows(mut self, rows: usize) -> Spill {
        self.slice_rows = rows.max(1);
        self
    }

    /// Its rows.
    pub fn height(&self) -> usize {
        self.rows
    }

    /// Appends a batch.
    pub(crate) fn add(&mut self, batch: &DataFrame) -> Result<(), ReportError> {
        let batch = crate::output::parquet::typed(batch)
            .map_err(pl(&self.report, "preparing a batch to keep on disk"))?;
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.open(&batch)?,
        };
        writer
            .write_batch(&batch)
            .map_err(pl(&self.report, "keeping a batch on disk"))?;
        self.rows += batch.height();
        Ok(())
    }

    fn open(&mut self, first: &DataFrame) -> Result<&mut BatchedWriter<File>, ReportError> {
        let file = tempfile::Builder::new()
            .prefix("orgledger-spill-")
            .suffix(".parquet")
            .tempfile()
            .map_err(|cause| ReportError::Io {
                path: std::env::temp_dir(),
                cause,
            })?;
        let out = file.reopen().map_err(|cause| ReportError::Io {
            path: file.path().to_path_buf(),
            cause,
        })?;
        // Read back within the run: encoding speed over size.
        let writer = ParquetWriter::new(out)
            .with_compression(ParquetCompression::Uncompressed)
            .batched(first.schema())
            .map_err(pl(&self.report, "keeping a batch on disk"))?;
        self.file = Some(file);
        Ok(self.writer.insert(Box::new(writer)))
    }

    /// Writes the file's footer: the spill can be read from now on.
    pub(crate) fn finish(&mut self) -> Result<(), ReportError> {
        if let Some(writer) = self.writer.take() {
            writer
                .finish()
                .map_err(pl(&self.report, "keeping the table on disk"))?;
        }
        Ok(())
    }

    /// Hands every slice of the table to `each`, in table order: a table without
    /// rows is one empty slice with its columns, one without batches none.
    pub fn for_each_batch(
        &self,
        mut each: impl FnMut(&DataFrame) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        for offset in (0..self.rows.max(1)).step_by(self.slice_rows) {
            each(&self.slice(file.path(), offset)?)?;
        }
        Ok(())
    }

    fn slice(&self, path: &Path, offset: usize) -> Result<DataFrame, ReportError> {
        let file = File::open(path).map_err(|cause| ReportError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        ParquetReader::new(file)
            .with_slice(Some((offset, self.slice_rows)))
            .finish()
            .map_err(pl(&self.report, "reading the table kept on disk"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::KeptTables;
    use crate::report::batches::append;
    use crate::report::tables::Table;
    use polars::prelude::{Column, DataType};
    use std::collections::BTreeMap;

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

    /// The run's tables with `spill` as the report `test`, as its readers ask for it.
    fn kept(spill: Spill) -> KeptTables {
        KeptTables {
            spilled: BTreeMap::from([("test".to_string(), spill)]),
            ..KeptTables::default()
        }
    }

    fn whole(tables: &KeptTables) -> DataFrame {
        let table = tables.whole("test").expect("read back");
        table.expect("kept")
    }

    fn of_orgs(tables: &KeptTables, orgs: &[i64]) -> DataFrame {
        let table = tables.of_orgs("test", orgs).expect("range");
        table.expect("kept")
    }

    /// Three batches read back in slices of two rows: slices that cross batches,
    /// a last slice of one row, nulls and an untyped (all-null) column kept.
    fn three_batches() -> (Spill, DataFrame) {
        let parts = [
            batch(&[Some(1), Some(2)], &[Some("a"), None]),
            batch(
                &[Some(2), None, Some(3)],
                &[Some("c"), Some("d"), Some("é")],
            ),
            batch(&[Some(1), Some(2)], &[Some("f"), Some("g")]),
        ];
        let mut spill = Spill::new("test").with_slice_rows(2);
        let mut whole = DataFrame::empty();
        for part in parts {
            spill.add(&part).expect("kept");
            append("test", &mut whole, part).expect("appended");
        }
        spill.finish().expect("finished");
        (spill, whole)
    }

    #[test]
    fn a_spill_reads_back_every_row_in_table_order_slice_by_slice() {
        let (spill, all) = three_batches();
        assert_eq!(spill.height(), 7);
        let mut slices = Vec::new();
        spill
            .for_each_batch(|df| {
                slices.push(df.height());
                Ok(())
            })
            .expect("read");
        assert_eq!(slices, [2, 2, 2, 1]);
        let back = whole(&kept(spill));
        assert_eq!(names(&back), names(&all));
        let orgs = Table::new("test", &back)
            .int("organization_id")
            .expect("ids");
        assert_eq!(
            orgs,
            [Some(1), Some(2), Some(2), None, Some(3), Some(1), Some(2)]
        );
    }

    #[test]
    fn a_range_of_organizations_gets_their_rows_only_in_table_order() {
        let tables = kept(three_batches().0);
        let of = |orgs: &[i64]| names(&of_orgs(&tables, orgs));
        let text = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        assert_eq!(of(&[1]), text(&["a", "f"]));
        assert_eq!(of(&[3, 1]), text(&["a", "é", "f"]));
        assert_eq!(of(&[2]), [None, Some("c".into()), Some("g".into())]);
        assert_eq!(
            of(&[9]),
            Vec::<Option<String>>::new(),
            "an organization without rows"
        );
        assert!(tables.of_orgs("other", &[1]).expect("read").is_none());
    }

    #[test]
    fn an_all_null_column_reads_back_as_text_and_a_spill_without_batches_as_nothing() {
        let mut spill = Spill::new("test");
        let mut part = batch(&[Some(1)], &[Some("a")]);
        part.with_column(Column::full_null("missing".into(), 1, &DataType::Null))
            .expect("column");
        spill.add(&part).expect("kept");
        spill.finish().expect("finished");
        let back = whole(&kept(spill));
        assert_eq!(
            back.column("missing").expect("kept").dtype(),
            &DataType::String
        );
        let mut none = Spill::new("test");
        none.finish().expect("finished");
        let none = kept(none);
        assert_eq!(whole(&none).height(), 0);
        assert_eq!(of_orgs(&none, &[1]).height(), 0);
    }

    #[test]
    fn a_table_without_rows_reads_back_with_its_columns() {
        let mut spill = Spill::new("test");
        spill.add(&batch(&[], &[])).expect("kept");
        spill.finish().expect("finished");
        let tables = kept(spill);
        for df in [whole(&tables), of_orgs(&tables, &[1])] {
            assert_eq!(df.height(), 0);
            assert_eq!(names(&df), Vec::<Option<String>>::new());
            let ids = Table::new("test", &df).int("organization_id");
            assert_eq!(ids.expect("the column is there"), []);
        }
    }
}
