//! One metric's use over the organization's last 90 days: the entitlements report's
//! `used` on each sampled day, the limit as a line across, and the projected
//! exhaustion in the text alternative.

use super::super::charts::{Drawn, FONT, nice_top, status_color, svg};
use super::super::data::day_label;
use crate::report::ReportError;
use crate::report::units::human;
use plotters::prelude::*;

/// Width of a metric's chart: two fit side by side in the page column.
const WIDTH: u32 = 520;
const HEIGHT: u32 = 230;

/// A figure's history on one organization's page.
pub struct History<'a> {
    /// What it is (`storage`, `compute time`).
    pub label: &'a str,
    /// The days it covers, as the title says them (`the last 90 days`).
    pub over: &'a str,
    pub unit: &'a str,
    /// (day number, used), oldest first.
    pub points: &'a [(i64, f64)],
    pub limit: Option<f64>,
    pub exhaustion: Option<&'a str>,
}

pub fn history(h: &History<'_>, id: &str) -> Result<String, ReportError> {
    let label = h.label;
    let (first, last) = match (h.points.first(), h.points.last()) {
        (Some(f), Some(l)) => (f.0, l.0),
        _ => return Ok(String::new()),
    };
    let top = h
        .points
        .iter()
        .map(|p| p.1)
        .chain(h.limit)
        .fold(0.0, f64::max);
    let title = format!("{label}: use over {}", h.over);
    let desc = description(h, label, (first, last));
    let chart_id: &'static str = "chart-org-metric";
    let drawn = svg(chart_id, (WIDTH, HEIGHT), &title, &desc, |root| {
        draw(root, h, (first.min(last - 1), last), nice_top(top))
    })?;
    // Every chart of a page shares the plotters id; the page tells them apart.
    Ok(drawn.replace(chart_id, id))
}

/// The chart's caption: the metric, its limit and when the limit is reached.
pub fn caption(h: &History<'_>) -> String {
    let limit = match h.limit {
        Some(l) => format!("limit {} (red line)", human(Some(l), h.unit)),
        None => "no limit".to_string(),
    };
    match h.exhaustion {
        Some(day) => format!("{}: {limit}; reached on {day} at the recent rate", h.label),
        None => format!("{}: {limit}", h.label),
    }
}

fn description(h: &History<'_>, label: &str, (first, last): (i64, i64)) -> String {
    let used = h
        .points
        .last()
        .map(|p| human(Some(p.1), h.unit))
        .unwrap_or_default();
    let limit = match h.limit {
        Some(l) => format!("the limit is {}", human(Some(l), h.unit)),
        None => "there is no limit".to_string(),
    };
    let exhaustion = match h.exhaustion {
        Some(day) => format!("; at the recent rate the limit is reached on {day}"),
        None => String::new(),
    };
    format!(
        "{label} used from {} to {}, {} samples; {used} used on the last day, {limit}{exhaustion}.",
        day_label(first),
        day_label(last),
        h.points.len()
    )
}

fn draw(
    root: DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    h: &History<'_>,
    (lo, hi): (i64, i64),
    top: f64,
) -> Drawn {
    root.fill(&WHITE)?;
    let unit = h.unit;
    let mut chart = ChartBuilder::on(&root)
        .margin(10)
        .margin_right(24)
        .x_label_area_size(30)
        .y_label_area_size(78)
        .build_cartesian_2d(lo..hi, 0.0..top)?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_labels(4)
        .y_labels(5)
        .x_label_formatter(&|d| day_label(*d))
        .y_label_formatter(&|v| human(Some(*v), unit))
        .label_style((FONT, 11))
        .draw()?;
    if let Some(limit) = h.limit {
        chart.draw_series(LineSeries::new(
            [(lo, limit), (hi, limit)],
            status_color("exceeded").stroke_width(2),
        ))?;
    }
    let line = RGBColor(11, 87, 208);
    chart.draw_series(LineSeries::new(
        h.points.iter().copied(),
        line.stroke_width(2),
    ))?;
    chart.draw_series(
        h.points
            .iter()
            .map(|&(d, v)| Circle::new((d, v), 3, line.filled())),
    )?;
    root.present()?;
    Ok(())
}
