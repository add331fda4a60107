//! The "Needs action" sheet: the counts of the HTML page's cards, then its action
//! tables (limits, trials, projects) and the rows with incomplete figures, all read
//! from the run's one [`Attention`] list, with typed cells.

use super::cells::{self, Unit, row_unit};
use super::formats::Formats;
use crate::report::attention::{
    Attention, Incomplete, LIMIT_TABLE, Limit, PROJECT_TABLE, Project, RunsOut, TRIAL_TABLE, Trial,
    named,
};
use crate::report::units::metric_label;
use chrono::NaiveDate;
use rust_xlsxwriter::{Format, Worksheet, XlsxError};

/// The sheet's name.
pub const SHEET: &str = "Needs action";

/// A cell of an action table.
enum Cell<'a> {
    Text(&'a str),
    Owned(String),
    /// A number in a unit.
    Number(Option<f64>, Unit),
    Int(Option<i64>),
    /// A `YYYY-MM-DD` day or a timestamp, shown as its day.
    Day(Option<&'a str>),
    /// Text coloured by its class.
    Status(&'a str),
}

/// Writes the sheet; returns how many action rows it holds (limits, trials and
/// projects, as the page's tables).
pub fn write(
    sheet: &mut Worksheet,
    attention: &Attention,
    as_of: NaiveDate,
    f: &Formats,
) -> Result<usize, XlsxError> {
    sheet.set_name(SHEET)?;
    super::print_across(sheet);
    let mut w = Writer {
        sheet,
        f,
        row: 0,
        widths: Vec::new(),
    };
    w.sheet
        .write_string_with_format(0, 0, format!("Needs action as of {as_of}"), &f.title)?;
    w.row = 2;
    w.cards(attention)?;
    let mut actions = 0;
    if let Some(limits) = &attention.limits {
        actions += w.limits(limits, as_of)?;
    }
    if let Some(trials) = &attention.trials {
        actions += w.trials(trials)?;
    }
    if let Some(projects) = &attention.projects {
        actions += w.projects(projects)?;
    }
    if let Some(incomplete) = attention.incomplete.as_deref().filter(|i| !i.is_empty()) {
        w.incomplete(incomplete)?;
    }
    for (c, width) in w.widths.iter().enumerate() {
        w.sheet
            .set_column_width(c as u16, (*width).clamp(8, 60) as f64)?;
    }
    Ok(actions)
}

struct Writer<'a> {
    sheet: &'a mut Worksheet,
    f: &'a Formats,
    row: u32,
    widths: Vec<usize>,
}

impl Writer<'_> {
    /// The limits table; returns its rows.
    fn limits(&mut self, limits: &[Limit], as_of: NaiveDate) -> Result<usize, XlsxError> {
        self.heading(LIMIT_TABLE)?;
        for l in limits {
            let unit = row_unit(Some(&l.unit));
            let runs_out = l
                .projected_exhaustion
                .as_deref()
                .map(|d| match RunsOut::of(d, as_of) {
                    RunsOut::On(day) => Cell::Day(Some(day)),
                    beyond => Cell::Owned(beyond.text()),
                });
            self.row_of(
                l.status.as_str(),
                vec![
                    Cell::Owned(named(&l.org_name, l.org_id)),
                    Cell::Text(metric_label(&l.metric)),
                    Cell::Number(l.used, unit),
                    Cell::Number(l.limit, unit),
                    Cell::Number(l.pct, Unit::Pct),
                    Cell::Number(l.remaining, unit),
                    Cell::Status(l.status.as_str()),
                    runs_out.unwrap_or(Cell::Day(None)),
                ],
            )?;
        }
        Ok(limits.len())
    }

    /// The trials table; returns its rows.
    fn trials(&mut self, trials: &[Trial]) -> Result<usize, XlsxError> {
        self.heading(TRIAL_TABLE)?;
        for t in trials {
            self.row_of(
                &t.status,
                vec![
                    Cell::Int(t.trial_id),
                    Cell::Text(&t.user),
                    Cell::Text(&t.org),
                    Cell::Status(&t.status),
                    Cell::Day(t.expiration_date.as_deref()),
                    Cell::Int(t.days_left),
                    Cell::Day(t.deletion_due.as_deref()),
                ],
            )?;
        }
        Ok(trials.len())
    }

    /// The flagged projects' table; returns its rows.
    fn projects(&mut self, projects: &[Project]) -> Result<usize, XlsxError> {
        self.heading(PROJECT_TABLE)?;
        for p in projects {
            self.row_of(
                p.class(),
                vec![
                    Cell::Owned(named(&p.project_name, p.project_id)),
                    Cell::Text(&p.org_name),
                    Cell::Number(p.used_ms, Unit::Ms),
                    Cell::Number(p.left_ms, Unit::Ms),
                    Cell::Number(p.pct, Unit::Pct),
                    Cell::Day(p.period_end.as_deref()),
                ],
            )?;
        }
        Ok(projects.len())
    }

    /// The rows with incomplete figures.
    fn incomplete(&mut self, incomplete: &[Incomplete]) -> Result<(), XlsxError> {
        self.heading((
            "Rows with incomplete figures",
            ["Report", "Rows about", "Missing", "Rows"],
        ))?;
        for i in incomplete {
            self.row_of(
                "",
                vec![
                    Cell::Text(&i.report),
                    Cell::Text(&i.what),
                    Cell::Text(&i.missing),
                    Cell::Number(Some(i.rows as f64), Unit::Plain),
                ],
            )?;
        }
        Ok(())
    }

    /// The cards' counts: a number, then what it counts (the page's words).
    fn cards(&mut self, attention: &Attention) -> Result<(), XlsxError> {
        let c = attention.counts();
        let mut cards: Vec<(usize, String)> = Vec::new();
        if attention.limits.is_some() {
            cards.push((
                c.limits,
                format!(
                    "limits at warning, at the limit or over, in {} organization(s) \
                     ({} exceeded, {} at the limit, {} warning)",
                    c.limit_orgs, c.exceeded, c.at_limit, c.warning
                ),
            ));
        }
        if attention.trials.is_some() {
            cards.push((
                c.trials,
                format!(
                    "trials expiring or expired ({} expired, {} expiring)",
                    c.trials_expired, c.trials_expiring
                ),
            ));
        }
        if attention.projects.is_some() {
            cards.push((c.projects, "projects over the budget flag".to_string()));
        }
        if attention.incomplete.is_some() {
            cards.push((
                c.incomplete,
                "rows with incomplete figures (see their missing column)".to_string(),
            ));
        }
        for (count, words) in cards {
            self.sheet
                .write_number_with_format(self.row, 0, count as f64, &self.f.bold)?;
            self.sheet.write_string(self.row, 1, words)?;
            self.row += 1;
        }
        Ok(())
    }

    /// A table's title and header row, after a blank row.
    fn heading<const N: usize>(
        &mut self,
        (title, headers): (&str, [&str; N]),
    ) -> Result<(), XlsxError> {
        self.row += 1;
        self.sheet
            .write_string_with_format(self.row, 0, title, &self.f.title)?;
        self.row += 1;
        for (c, h) in headers.iter().enumerate() {
            self.sheet
                .write_string_with_format(self.row, c as u16, *h, &self.f.header)?;
            self.fit(c, h.chars().count() + 2);
        }
        self.row += 1;
        Ok(())
    }

    /// A table row; its first cell carries the class's coloured edge, as on the page.
    fn row_of(&mut self, class: &str, cells: Vec<Cell<'_>>) -> Result<(), XlsxError> {
        let f = self.f;
        for (c, cell) in cells.into_iter().enumerate() {
            let edge = (c == 0).then(|| f.edge(class)).flatten();
            let (row, col) = (self.row, c as u16);
            let with = |format: &Format| edge.unwrap_or(format).clone();
            let width = match cell {
                Cell::Text(s) => {
                    self.sheet
                        .write_string_with_format(row, col, s, &with(&f.text))?;
                    s.chars().count()
                }
                Cell::Owned(s) => {
                    self.sheet
                        .write_string_with_format(row, col, &s, &with(&f.text))?;
                    s.chars().count()
                }
                Cell::Number(Some(v), unit) if v.is_finite() => {
                    let format = f.number(unit, v);
                    self.sheet.write_number_with_format(row, col, v, format)?;
                    super::sheet::number_width(v, unit)
                }
                Cell::Int(Some(n)) if cells::fits_excel(n) => {
                    let format = with(f.number(Unit::Id, n as f64));
                    self.sheet
                        .write_number_with_format(row, col, n as f64, &format)?;
                    n.to_string().len()
                }
                Cell::Int(Some(n)) => {
                    self.sheet
                        .write_string_with_format(row, col, n.to_string(), &with(&f.text))?;
                    n.to_string().len()
                }
                Cell::Day(Some(d)) => match cells::serial(d.get(..10).unwrap_or(d)) {
                    Some(day) => {
                        self.sheet
                            .write_number_with_format(row, col, day, &f.date)?;
                        10
                    }
                    None => {
                        self.sheet.write_string(row, col, d)?;
                        d.chars().count()
                    }
                },
                Cell::Status(s) => {
                    let format = f.status(s).unwrap_or(&f.text);
                    self.sheet.write_string_with_format(row, col, s, format)?;
                    s.chars().count() + 2
                }
                Cell::Number(..) | Cell::Int(None) | Cell::Day(None) => 0,
            };
            self.fit(c, width);
        }
        self.row += 1;
        Ok(())
    }

    fn fit(&mut self, c: usize, width: usize) {
        if self.widths.len() <= c {
            self.widths.resize(c + 1, 0);
        }
        self.widths[c] = self.widths[c].max(width);
    }
}
