//! The charts, drawn with plotters' SVG backend into strings (axes, labels and
//! legends are plotters'), then given a `<title>`, a `<desc>` and `role="img"` so a
//! screen reader has a text alternative.

use super::data::{LABEL, Trend, TrendSeries, Trials, Usage, WHOLE, day_label, trial_label};
use crate::report::ReportError;
use crate::report::status::Status;
use crate::report::units::hours;
use maud::html;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;

pub(super) type Drawn = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Width of every chart (fits the 1100 px page column).
pub(super) const WIDTH: u32 = 1060;
pub(super) const FONT: &str = "sans-serif";

/// Status colours; the same in the page's CSS.
pub fn status_color(status: &str) -> RGBColor {
    match status {
        "exceeded" | "expired" => RGBColor(198, 40, 40),
        "at_limit" => RGBColor(123, 31, 162),
        "warning" | "expiring" => RGBColor(230, 138, 0),
        "ok" => RGBColor(46, 125, 50),
        _ => RGBColor(120, 120, 120),
    }
}

/// Line colours for the users of a trend chart (distinct, print-safe).
const USER_COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Draws into an SVG string of the given size and adds the text alternative.
pub(super) fn svg(
    chart: &'static str,
    size: (u32, u32),
    title: &str,
    desc: &str,
    draw: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Drawn,
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        draw(root).map_err(|e| ReportError::Chart {
            chart,
            message: e.to_string(),
        })?;
    }
    Ok(accessible(&buf, chart, title, desc))
}

/// Adds `role="img"`, `aria-labelledby` and `<title>`/`<desc>` to plotters' SVG.
fn accessible(svg: &str, id: &str, title: &str, desc: &str) -> String {
    let Some(rest) = svg.strip_prefix("<svg ") else {
        return svg.to_string();
    };
    let Some(end) = rest.find('>') else {
        return svg.to_string();
    };
    let (attrs, body) = rest.split_at(end);
    let body = &body[1..];
    let text = html! {
        title id={ (id) "-title" } { (title) } "\n"
        desc id={ (id) "-desc" } { (desc) } "\n"
    };
    format!(
        "<svg role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" class=\"chart\" {attrs}>\n{}{body}",
        text.into_string()
    )
}

/// A legend entry's mark.
#[derive(Clone, Copy)]
enum Mark {
    /// A filled square (bars).
    Swatch(RGBColor),
    /// A short horizontal line (line series).
    Line(RGBColor),
    /// A short vertical line (a marker across the chart).
    Rule(RGBColor),
}

/// Legends are drawn in a strip of their own above the chart, so they never cover
/// data, and wrap onto more rows when the strip is too narrow.
struct Legend {
    entries: Vec<(Mark, String)>,
    width: u32,
}

const LEGEND_FONT: u32 = 13;
const LEGEND_ROW: u32 = 22;
/// Width of a legend character, estimated (no font metrics in an SVG string).
const LEGEND_CHAR_PX: u32 = 7;
const LEGEND_PAD: i32 = 12;

impl Legend {
    fn entry_width(text: &str) -> u32 {
        22 + LEGEND_CHAR_PX * text.chars().count() as u32 + 20
    }

    /// The entries of each row.
    fn rows(&self) -> Vec<Vec<(Mark, &str)>> {
        let mut rows: Vec<Vec<(Mark, &str)>> = vec![Vec::new()];
        let mut used = LEGEND_PAD as u32;
        for (mark, text) in &self.entries {
            let w = Self::entry_width(text);
            if used + w > self.width && rows.last().is_some_and(|r| !r.is_empty()) {
                rows.push(Vec::new());
                used = LEGEND_PAD as u32;
            }
            used += w;
            if let Some(row) = rows.last_mut() {
                row.push((*mark, text.as_str()));
            }
        }
        rows
    }

    fn height(&self) -> u32 {
        if self.entries.is_empty() {
            0
        } else {
            self.rows().len() as u32 * LEGEND_ROW + 10
        }
    }

    fn draw(&self, area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Drawn {
        let style = TextStyle::from((FONT, LEGEND_FONT).into_font())
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (k, row) in self.rows().iter().enumerate() {
            let y = 6 + LEGEND_ROW as i32 * k as i32 + LEGEND_ROW as i32 / 2;
            let mut x = LEGEND_PAD;
            for (mark, text) in row {
                match *mark {
                    Mark::Swatch(c) => {
                        area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()))?
                    }
                    Mark::Line(c) => {
                        area.draw(&PathElement::new([(x, y), (x + 16, y)], c.stroke_width(3)))?
                    }
                    Mark::Rule(c) => area.draw(&PathElement::new(
                        [(x + 6, y - 8), (x + 6, y + 8)],
                        c.stroke_width(2),
                    ))?,
                }
                area.draw(&Text::new(text.to_string(), (x + 22, y), style.clone()))?;
                x += Self::entry_width(text) as i32;
            }
        }
        Ok(())
    }
}

/// Width of a label at the bar charts' label size, estimated (no font metrics in
/// an SVG string): a little over the average of sans-serif faces at 13 px.
const LABEL_CHAR_PX: u32 = 7;

/// The width of a bar chart's label area: room for its longest label (at most
/// [`LABEL`] characters), never under 120 px.
fn label_area(labels: &[String]) -> u32 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let longest = u32::try_from(longest.min(LABEL)).unwrap_or(0);
    (longest * LABEL_CHAR_PX + 20).max(120)
}

/// A percentage as a person writes it: no decimals when whole.
fn pct_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p} %")
    }
}

/// What each status colour of the usage chart means.
fn status_meaning(status: Status, warning_pct: f64, exceeded_pct: f64) -> String {
    let (w, x) = (pct_label(warning_pct), pct_label(exceeded_pct));
    match status {
        Status::Exceeded => format!("exceeded: over the limit (over {x})"),
        Status::AtLimit => format!("at the limit (exactly {x})"),
        Status::Warning => format!("warning: {w} to under {x}"),
        Status::Ok => format!("ok: under {w}"),
        other => other.as_str().to_string(),
    }
}

/// A continuous axis whose only ticks are the given points (the centres of bars), so
/// every tick has a bar and none sits above or beside them.
struct Centers {
    range: RangedCoordf64,
    points: Vec<f64>,
}

impl Centers {
    fn new(len: f64, points: Vec<f64>) -> Self {
        Centers {
            range: (0f64..len).into(),
            points,
        }
    }
}

impl Ranged for Centers {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // No light grid lines between the bars.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.points.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// Horizontal bar rows: row 0 (the first, most urgent bar) at the top. The y axis is
/// continuous with one key point at each row's centre, so every tick has a bar.
struct Rows {
    n: usize,
}

impl Rows {
    fn axis(&self) -> Centers {
        let n = self.n.max(1);
        Centers::new(n as f64, (0..n).map(|i| i as f64 + 0.5).collect())
    }

    /// The bottom and top of row `k`'s bar.
    fn band(&self, k: usize) -> (f64, f64) {
        let top = (self.n.max(1) - k) as f64;
        (top - 0.85, top - 0.15)
    }

    /// The row whose centre is at `y`.
    fn at(&self, y: f64) -> Option<usize> {
        let from_bottom = y.floor();
        if from_bottom < 0.0 {
            return None;
        }
        self.n.checked_sub(from_bottom as usize + 1)
    }

    fn label(&self, labels: &[String], y: f64) -> String {
        self.at(y)
            .and_then(|k| labels.get(k))
            .cloned()
            .unwrap_or_default()
    }
}

/// Entitlement usage: one horizontal bar per (organization, metric), most urgent at
/// the top, coloured by status, with the warning and exceeded thresholds marked.
pub fn usage(u: &Usage, warning_pct: f64, exceeded_pct: f64) -> Result<String, ReportError> {
    let n = u.bars.len();
    let title = "Entitlement usage per organization (% of limit)";
    let desc = format!(
        "Horizontal bar chart of {n} of {} organization limits, most urgent first; \
         bar length is the percentage of the limit used, colour is the status. The \
         numbers are in the table below the chart.",
        u.total
    );
    let max = nice_top(u.bars.iter().map(|b| b.pct).fold(exceeded_pct, f64::max));
    let mut statuses: Vec<Status> = u.bars.iter().map(|b| b.row.status).collect();
    statuses.sort();
    statuses.dedup();
    let mut entries: Vec<(Mark, String)> = statuses
        .iter()
        .map(|s| {
            (
                Mark::Swatch(status_color(s.as_str())),
                status_meaning(*s, warning_pct, exceeded_pct),
            )
        })
        .collect();
    entries.push((
        Mark::Rule(status_color("warning")),
        format!("warning threshold ({})", pct_label(warning_pct)),
    ));
    entries.push((
        Mark::Rule(status_color("exceeded")),
        format!("limit ({})", pct_label(exceeded_pct)),
    ));
    let legend = Legend {
        entries,
        width: WIDTH,
    };
    let height = legend.height() + 80 + 24 * n.max(1) as u32;
    let rows = Rows { n };
    let labels: Vec<String> = u.bars.iter().map(|b| b.label(LABEL)).collect();
    let tips = Tooltips::new(&labels, u.bars.iter().map(|b| b.label(WHOLE)));
    let label_area = label_area(&labels);
    let drawn = svg("chart-usage", (WIDTH, height), title, &desc, |root| {
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(legend.height());
        legend.draw(&top)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            // Room for the last x label, centred on the axis' end.
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0f64..max, rows.axis())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(2)
            .y_label_formatter(&|y| rows.label(&labels, *y))
            .x_label_formatter(&|x| format!("{x:.0} %"))
            .x_desc("share of the limit used (%)")
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        chart.draw_series(u.bars.iter().enumerate().map(|(k, b)| {
            let (lo, hi) = rows.band(k);
            Rectangle::new(
                [(0.0, lo), (b.pct.max(0.0), hi)],
                status_color(b.row.status.as_str()).filled(),
            )
        }))?;
        let rows_top = n.max(1) as f64;
        for (pct, name) in [(warning_pct, "warning"), (exceeded_pct, "exceeded")] {
            chart.draw_series(LineSeries::new(
                [(pct, 0.0), (pct, rows_top)],
                status_color(name).stroke_width(1),
            ))?;
        }
        root.present()?;
        Ok(())
    })?;
    Ok(tips.apply(drawn))
}

/// The whole text of the axis labels that were cut to fit, shown as their tooltip
/// (an SVG `<title>` inside the label's `<text>`). A cut text that stands for two
/// different whole ones gets none rather than a wrong one.
struct Tooltips(BTreeMap<String, Option<String>>);

impl Tooltips {
    fn new(cut: &[String], whole: impl Iterator<Item = String>) -> Self {
        let mut tips: BTreeMap<String, Option<String>> = BTreeMap::new();
        for (short, full) in cut.iter().zip(whole).filter(|(s, f)| *s != f) {
            let entry = tips
                .entry(short.clone())
                .or_insert_with(|| Some(full.clone()));
            if entry.as_deref() != Some(full.as_str()) {
                *entry = None;
            }
        }
        Tooltips(tips)
    }

    /// `svg` with the tooltips added to the labels plotters drew (`>\nTEXT\n</text>`,
    /// the text escaped as plotters escapes it).
    fn apply(&self, svg: String) -> String {
        self.0
            .iter()
            .filter_map(|(short, full)| Some((short, full.as_ref()?)))
            .fold(svg, |svg, (short, full)| {
                let short = xml_text(short);
                svg.replace(
                    &format!(">\n{short}\n</text>"),
                    &format!(">\n<title>{}</title>{short}\n</text>", xml_text(full)),
                )
            })
    }
}

/// Text escaped for XML as plotters' SVG backend escapes it.
fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            other => out.push(other),
        }
    }
    out
}

/// How many users of a trend chart get a colour of their own; the others are grey.
pub const HIGHLIGHTED_USERS: usize = 3;
const OTHER_USERS: RGBColor = RGBColor(185, 185, 185);

/// One trend window: the white label total as bars (left) and the top users as
/// lines (right), in hours; the three users with the most compute time in colour,
/// the rest in grey.
pub fn trend(t: &Trend, index: usize) -> Result<String, ReportError> {
    const IDS: [&str; 3] = ["chart-trend-day", "chart-trend-week", "chart-trend-month"];
    let id = IDS.get(index).copied().unwrap_or("chart-trend");
    let title = format!("Compute time in hours, {}", t.window);
    let highlighted = t.users.len().min(HIGHLIGHTED_USERS);
    let desc = format!(
        "Left: bar chart of the white label's total compute time per {p}. Right: line \
         chart of the {} users with the most compute time in the window, one line per \
         user; the top {highlighted} in colour, the others in grey. The numbers are in \
         the table below the chart.",
        t.users.len(),
        p = t.period
    );
    let split = WIDTH * 2 / 5;
    let legend = trend_legend(t, highlighted, WIDTH - split);
    let head = legend.height().max(LEGEND_ROW + 10);
    svg(id, (WIDTH, 400 + head), &title, &desc, |root| {
        root.fill(&WHITE)?;
        let (header, body) = root.split_vertically(head);
        let (_, legend_area) = header.split_horizontally(split);
        legend.draw(&legend_area)?;
        let (left, right) = body.split_horizontally(split);
        whitelabel_bars(&left, t)?;
        user_lines(&right, t, highlighted)?;
        root.present()?;
        Ok(())
    })
}

/// The x label of period `i`: days and weeks without the year (the title says
/// which 30 days or 13 weeks), months without the day.
fn period_label(t: &Trend, i: usize) -> String {
    let s = t.starts.get(i).map(String::as_str).unwrap_or("");
    match t.period {
        "day" | "week" => s.get(5..).unwrap_or(s).to_string(),
        "month" => s.get(..7).unwrap_or(s).to_string(),
        _ => s.to_string(),
    }
}

/// The highlighted users by rank, then one grey entry for the others.
fn trend_legend(t: &Trend, highlighted: usize, width: u32) -> Legend {
    let mut entries: Vec<(Mark, String)> = t
        .users
        .iter()
        .take(highlighted)
        .enumerate()
        .map(|(k, s)| {
            (
                Mark::Line(USER_COLORS[k % USER_COLORS.len()]),
                format!("{}. {}", k + 1, super::data::shorten(&s.name, 24)),
            )
        })
        .collect();
    if t.users.len() > highlighted {
        entries.push((
            Mark::Line(OTHER_USERS),
            format!("{} more users", t.users.len() - highlighted),
        ));
    }
    Legend { entries, width }
}

/// The white label total, one bar per period.
fn whitelabel_bars(area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, t: &Trend) -> Drawn {
    let n = t.starts.len().max(1);
    // Bars on a continuous axis with a key point at each shown bar's centre (about 8
    // labels), so no tick sits outside the bars.
    let step = n.div_ceil(8).max(1);
    let centers: Vec<f64> = (0..n).step_by(step).map(|i| i as f64 + 0.5).collect();
    let wl: Option<&TrendSeries> = t.whitelabels.first();
    let top = wl
        .map(|s| s.points.iter().map(|(_, v)| hours(*v)).fold(0.0, f64::max))
        .unwrap_or(0.0);
    let mut bars = ChartBuilder::on(area)
        .caption(
            format!(
                "White label total{}",
                wl.map(|s| format!(": {}", s.name)).unwrap_or_default()
            ),
            (FONT, 15),
        )
        .margin(10)
        // Room for the last x label, centred on the last bar.
        .margin_right(24)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(Centers::new(n as f64, centers), 0f64..nice_top(top))?;
    bars.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| period_label(t, x.floor().max(0.0) as usize))
        .x_desc(format!("{} starting", t.period))
        .y_desc("hours")
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()?;
    if let Some(s) = wl {
        bars.draw_series(s.points.iter().map(|(i, v)| {
            let x = *i as f64;
            Rectangle::new(
                [(x + 0.1, 0.0), (x + 0.9, hours(*v))],
                RGBColor(55, 71, 79).filled(),
            )
        }))?;
    }
    Ok(())
}

/// One line per top user; the `highlighted` first in colour.
fn user_lines(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    t: &Trend,
    highlighted: usize,
) -> Drawn {
    let n = t.starts.len().max(1);
    let top = t
        .users
        .iter()
        .flat_map(|s| s.points.iter().map(|(_, v)| hours(*v)))
        .fold(0.0, f64::max);
    let last = n.saturating_sub(1).max(1);
    let mut lines = ChartBuilder::on(area)
        .caption(
            format!("Top {} users by compute time", t.users.len()),
            (FONT, 15),
        )
        .margin(10)
        // Room for the last x label, centred on the axis' end.
        .margin_right(30)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(0..last, 0f64..nice_top(top))?;
    lines
        .configure_mesh()
        .x_labels(n.min(10))
        .x_label_formatter(&|i| period_label(t, *i))
        .x_desc(format!("{} starting", t.period))
        .y_desc("hours")
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()?;
    // The grey lines first, so the highlighted ones are drawn over them.
    for (k, s) in t.users.iter().enumerate().rev() {
        let style = if k < highlighted {
            USER_COLORS[k % USER_COLORS.len()].stroke_width(3)
        } else {
            OTHER_USERS.stroke_width(1)
        };
        lines.draw_series(LineSeries::new(
            s.points.iter().map(|(i, v)| (*i, hours(*v))),
            style,
        ))?;
    }
    Ok(())
}

/// The trials timeline: expired trials from expiry to deletion, expiring ones from
/// today to expiry, with a line at today.
pub fn trials(t: &Trials, today: i64) -> Result<String, ReportError> {
    let n = t.bars.len();
    let title = "Trials timeline: expiring and expired trials";
    let desc = format!(
        "Timeline of {n} of {} trials that need attention. Orange bars run from today \
         to the trial's expiration; red bars run from the expiry to the date the \
         organization is due for deletion. A vertical line marks today ({}). The dates \
         are in the table below the chart.",
        t.total,
        day_label(today)
    );
    let spans: Vec<(i64, i64)> = t.bars.iter().filter_map(|b| b.span).collect();
    let lo = spans.iter().map(|s| s.0).fold(today, i64::min) - 2;
    let hi = spans.iter().map(|s| s.1).fold(today, i64::max) + 2;
    let legend = Legend {
        entries: vec![
            (
                Mark::Swatch(status_color("expired")),
                "expired: expiry → deletion due".to_string(),
            ),
            (
                Mark::Swatch(status_color("expiring")),
                "expiring: today → expiration".to_string(),
            ),
            (Mark::Rule(BLACK), format!("today ({})", day_label(today))),
        ],
        width: WIDTH,
    };
    let height = legend.height() + 80 + 24 * n.max(1) as u32;
    let rows = Rows { n };
    let labels: Vec<String> = t.bars.iter().map(|b| trial_label(b, LABEL)).collect();
    let tips = Tooltips::new(&labels, t.bars.iter().map(|b| trial_label(b, WHOLE)));
    let label_area = label_area(&labels);
    let drawn = svg("chart-trials", (WIDTH, height), title, &desc, |root| {
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(legend.height());
        legend.draw(&top)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            // Room for the last x label, centred on the axis' end.
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(label_area)
            .build_cartesian_2d(lo..hi, rows.axis())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(2)
            .y_label_formatter(&|y| rows.label(&labels, *y))
            .x_labels(10)
            .x_label_formatter(&|d| day_label(*d))
            .x_desc("date")
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        chart.draw_series(t.bars.iter().enumerate().filter_map(|(k, b)| {
            let (from, to) = b.span?;
            let (bottom, top) = rows.band(k);
            Some(Rectangle::new(
                [(from, bottom), (to.max(from + 1), top)],
                status_color(&b.status).filled(),
            ))
        }))?;
        chart.draw_series(LineSeries::new(
            [(today, 0.0), (today, n.max(1) as f64)],
            BLACK.stroke_width(2),
        ))?;
        root.present()?;
        Ok(())
    })?;
    Ok(tips.apply(drawn))
}

/// A round upper bound for an axis (1 without data): the first of a fine set of round
/// steps 5 % above the data, so the axis ends close above it (within 30 %).
pub(super) fn nice_top(max: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let wanted = max * 1.05;
    let magnitude = 10f64.powf(max.log10().floor());
    const STEPS: [f64; 12] = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0];
    [magnitude, 10.0 * magnitude]
        .iter()
        .flat_map(|m| STEPS.iter().map(move |s| s * m))
        .find(|top| *top >= wanted)
        .unwrap_or(100.0 * magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_top(0.0), 1.0);
        assert_eq!(nice_top(9.0), 10.0);
        assert_eq!(nice_top(11.0), 12.0);
        assert_eq!(nice_top(230.0), 250.0);
        assert_eq!(nice_top(0.42), 0.5);
        // Never more than 1.3 × the data's top.
        for max in [
            1.0, 1.1, 1.3, 1.9, 2.9, 3.5, 4.9, 5.9, 7.9, 9.6, 99.0, 123.0,
        ] {
            let top = nice_top(max);
            assert!(top >= max * 1.05 && top <= max * 1.3, "{max} → {top}");
        }
    }

    #[test]
    fn svg_gets_a_text_alternative() {
        let s = accessible(
            "<svg width=\"1\" height=\"1\">\n<rect/>\n</svg>\n",
            "c",
            "A & B",
            "d",
        );
        assert!(s.starts_with("<svg role=\"img\" aria-labelledby=\"c-title c-desc\""));
        assert!(s.contains("<title id=\"c-title\">A &amp; B</title>"));
        assert!(s.contains("<rect/>"));
    }

    #[test]
    fn cut_labels_get_their_whole_text_as_a_tooltip() {
        let cut = vec![
            "Smith & Jo… · storage".to_string(),
            "Same… · users".to_string(),
            "Same… · users".to_string(),
            "Short · users".to_string(),
        ];
        let whole = [
            "Smith & Jones Vision · storage",
            "Same name one · users",
            "Same name two · users",
            "Short · users",
        ];
        let tips = Tooltips::new(&cut, whole.iter().map(|w| w.to_string()));
        let svg = "<text x=\"1\">\nSmith &amp; Jo… · storage\n</text><text>\nSame… · users\n</text><text>\nShort · users\n</text>";
        let with = tips.apply(svg.to_string());
        assert!(with.contains(">\n<title>Smith &amp; Jones Vision · storage</title>Smith &amp; Jo… · storage\n</text>"), "{with}");
        assert_eq!(
            with.matches("<title>").count(),
            1,
            "an ambiguous or whole label gets none: {with}"
        );
    }
}
