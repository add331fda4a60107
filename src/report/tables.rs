//! The built-in reports' finished tables as their readers see them: one typed
//! struct per report (a field per column the readers use), read once from the
//! report's frame. A column the report does not produce, or of another type, is an
//! error naming the report and the column, never a column of unknowns: renaming a
//! report column without its readers fails the build's tests (`tests` below reads
//! every struct from the tables the jobs build), not the alerts in production.
//!
//! The readers are the alerts, the rows that need action, the terminal summary, the
//! HTML page, the organization pages and the workbook; the report jobs read their
//! own extracts through [`Table`] as well.

use polars::prelude::*;

/// A column a reader asked for that the table does not have as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "report {report}: column {column} {problem}; the report's readers and its job disagree (reports/README.md lists its columns)"
)]
pub struct TableError {
    /// The report.
    pub report: String,
    /// The column.
    pub column: String,
    /// What is wrong: absent, or of which type.
    pub problem: String,
}

/// A finished frame of one report, read by column name and type.
#[derive(Clone, Copy)]
pub struct Table<'a> {
    report: &'a str,
    df: &'a DataFrame,
}

impl<'a> Table<'a> {
    /// `df`, the table of `report`.
    pub fn new(report: &'a str, df: &'a DataFrame) -> Self {
        Table { report, df }
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.df.height()
    }

    fn column(&self, name: &str) -> Result<&'a Column, TableError> {
        self.df
            .column(name)
            .map_err(|_| self.error(name, "is missing"))
    }

    fn error(&self, name: &str, problem: &str) -> TableError {
        TableError {
            report: self.report.to_string(),
            column: name.to_string(),
            problem: problem.to_string(),
        }
    }

    fn wrong(&self, name: &str, found: &DataType, wanted: &str) -> TableError {
        self.error(name, &format!("is {found}, not {wanted}"))
    }

    /// A text column's values.
    pub fn text(&self, name: &str) -> Result<Vec<Option<&'a str>>, TableError> {
        let column = self.column(name)?;
        match column.dtype() {
            DataType::String => Ok(column
                .str()
                .map_err(|_| self.error(name, "is not text"))?
                .iter()
                .collect()),
            DataType::Null => Ok(vec![None; self.height()]),
            other => Err(self.wrong(name, other, "text")),
        }
    }

    /// A numeric column's values as integers.
    pub fn int(&self, name: &str) -> Result<Vec<Option<i64>>, TableError> {
        let values = self.numeric(name, &DataType::Int64, "integers")?;
        Ok(values
            .i64()
            .map_err(|_| self.error(name, "is not integers"))?
            .iter()
            .collect())
    }

    /// A numeric column's values as floats.
    pub fn float(&self, name: &str) -> Result<Vec<Option<f64>>, TableError> {
        let values = self.numeric(name, &DataType::Float64, "numbers")?;
        Ok(values
            .f64()
            .map_err(|_| self.error(name, "is not numbers"))?
            .iter()
            .collect())
    }

    /// A boolean column's values.
    pub fn flag(&self, name: &str) -> Result<Vec<Option<bool>>, TableError> {
        let column = self.column(name)?;
        match column.dtype() {
            DataType::Boolean => Ok(column
                .bool()
                .map_err(|_| self.error(name, "is not booleans"))?
                .iter()
                .collect()),
            DataType::Null => Ok(vec![None; self.height()]),
            other => Err(self.wrong(name, other, "booleans")),
        }
    }

    /// A numeric (or all-null) column cast to `to`.
    fn numeric(&self, name: &str, to: &DataType, wanted: &str) -> Result<Column, TableError> {
        let column = self.column(name)?;
        let dtype = column.dtype();
        if !(dtype.is_primitive_numeric() || dtype.is_null()) {
            return Err(self.wrong(name, dtype, wanted));
        }
        column.cast(to).map_err(|_| self.wrong(name, dtype, wanted))
    }
}

/// The typed table of a report, declared in the report's module:
/// `Name = NAME { column: kind, … }`, each field the column's values (`text`,
/// `int`, `float` or `flag`) of the columns its readers use.
macro_rules! report_table {
    (@type text) => { Option<&'a str> };
    (@type int) => { Option<i64> };
    (@type float) => { Option<f64> };
    (@type flag) => { Option<bool> };
    ($(#[$doc:meta])* $name:ident = $report:path { $($column:ident: $kind:ident),* $(,)? }) => {
        $(#[$doc])*
        pub struct $name<'a> {
            $(pub $column: Vec<$crate::report::tables::report_table!(@type $kind)>,)*
            // Generated for every report; not every report's readers need the count.
            #[allow(dead_code)]
            rows: usize,
            _frame: std::marker::PhantomData<&'a polars::prelude::DataFrame>,
        }

        #[allow(dead_code)]
        impl<'a> $name<'a> {
            /// The report.
            pub const REPORT: $crate::report::declaration::ReportName = $report;
            /// The columns read.
            #[cfg(test)]
            pub const COLUMNS: &'static [&'static str] = &[$(stringify!($column)),*];

            /// Reads the report's table.
            pub fn read(
                df: &'a polars::prelude::DataFrame,
            ) -> Result<Self, $crate::report::tables::TableError> {
                let table = $crate::report::tables::Table::new($report.as_str(), df);
                Ok($name {
                    $($column: table.$kind(stringify!($column))?,)*
                    rows: df.height(),
                    _frame: std::marker::PhantomData,
                })
            }

            /// Rows.
            pub fn height(&self) -> usize {
                self.rows
            }
        }
    };
}
pub(crate) use report_table;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::changes::Changes;
    use crate::report::compute_trends::ComputeTrends;
    use crate::report::declaration::ReportName;
    use crate::report::entitlements::Entitlements;
    use crate::report::project_compute::ProjectCompute;
    use crate::report::testkit;
    use crate::report::trials::Trials;

    #[test]
    fn every_struct_reads_the_table_its_report_builds() {
        let frames = testkit::all_frames();
        let check = |report: ReportName,
                     columns: &[&str],
                     read: &dyn Fn(&DataFrame) -> Result<usize, TableError>| {
            let df = frames
                .get(report.as_str())
                .unwrap_or_else(|| panic!("the run builds {report}"));
            assert_eq!(read(df), Ok(df.height()), "{report}");
            assert!(!columns.is_empty());
        };
        check(Entitlements::REPORT, Entitlements::COLUMNS, &|df| {
            Entitlements::read(df).map(|t| t.height())
        });
        check(Trials::REPORT, Trials::COLUMNS, &|df| {
            Trials::read(df).map(|t| t.height())
        });
        check(ProjectCompute::REPORT, ProjectCompute::COLUMNS, &|df| {
            ProjectCompute::read(df).map(|t| t.height())
        });
        check(ComputeTrends::REPORT, ComputeTrends::COLUMNS, &|df| {
            ComputeTrends::read(df).map(|t| t.height())
        });
        check(Changes::REPORT, Changes::COLUMNS, &|df| {
            Changes::read(df).map(|t| t.height())
        });
    }

    #[test]
    fn a_missing_or_retyped_column_is_an_error_naming_it() {
        let frames = testkit::all_frames();
        let df = frames
            .get(Entitlements::REPORT.as_str())
            .expect("entitlements")
            .clone();
        let renamed = df
            .clone()
            .rename("pct_used", "pct".into())
            .map(|d| d.clone())
            .expect("rename");
        let err = Entitlements::read(&renamed)
            .err()
            .expect("pct_used is gone");
        assert_eq!(
            (err.report.as_str(), err.column.as_str()),
            ("entitlements", "pct_used")
        );
        assert!(err.to_string().contains("is missing"), "{err}");
        let mut retyped = df.clone();
        retyped
            .with_column(Column::new("pct_used".into(), vec!["80"; df.height()]))
            .expect("replace");
        let err = Entitlements::read(&retyped)
            .err()
            .expect("pct_used is text");
        assert!(err.to_string().contains("not numbers"), "{err}");
        let t = Table::new("entitlements", &df);
        assert!(t.text("no_such_column").is_err());
    }
}
