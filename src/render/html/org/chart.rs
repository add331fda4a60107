//! One figure's history on an organization's page: a value a day, drawn as steps
//! (a value changes on the day a sync saw it change), each day a point whose
//! tooltip (an SVG `<title>`, no script) says its day and value; the limit as a
//! red step line, and when it was or will be reached in the caption and the text
//! alternative.

use super::super::charts::{Drawn, FONT, nice_top, status_color, svg};
use super::super::data::day_label;
use crate::report::ReportError;
use crate::report::units::human;
use plotters::prelude::*;
use std::fmt::Write;

/// Width of a metric's chart: two fit side by side in the page column.
const WIDTH: u32 = 520;
const HEIGHT: u32 = 230;
/// The line's colour (the page's link blue).
const LINE: RGBColor = RGBColor(11, 87, 208);

/// A figure's history on one organization's page.
pub struct History<'a> {
    /// What it is (`storage`, `compute time`).
    pub label: &'a str,
    /// The days it covers, as the title says them (`the last 90 days`).
    pub over: &'a str,
    pub unit: &'a str,
    /// (day number, value), one a day, oldest first.
    pub points: &'a [(i64, f64)],
    /// (day number, limit) on the days it had one, oldest first.
    pub limits: &'a [(i64, f64)],
    /// When the limit was or will be reached, as a clause ("limit reached on
    /// 2026-11-05").
    pub reached: Option<&'a str>,
}

pub fn history(h: &History<'_>, id: &str) -> Result<String, ReportError> {
    let (first, last) = match (h.points.first(), h.points.last()) {
        (Some(f), Some(l)) => (f.0, l.0),
        _ => return Ok(String::new()),
    };
    let top = h
        .points
        .iter()
        .chain(h.limits)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let title = format!("{}: use over {}", h.label, h.over);
    let desc = description(h, (first, last));
    let chart_id: &'static str = "chart-org-metric";
    let mut marks = Vec::with_capacity(h.points.len());
    let drawn = svg(chart_id, (WIDTH, HEIGHT), &title, &desc, |root| {
        draw(
            root,
            h,
            (first.min(last - 1), last),
            nice_top(top),
            &mut marks,
        )
    })?;
    // Every chart of a page shares the plotters id; the page tells them apart.
    Ok(with_points(&drawn, h, &marks).replace(chart_id, id))
}

/// The chart's caption: the figure, its limit (the last one known) and when the
/// limit was or will be reached.
pub fn caption(h: &History<'_>) -> String {
    let limit = match h.limits.last() {
        Some((_, l)) => format!("limit {} (red line)", human(Some(*l), h.unit)),
        None => "no limit".to_string(),
    };
    match h.reached {
        Some(reached) => format!("{}: {limit}; {reached}", h.label),
        None => format!("{}: {limit}", h.label),
    }
}

fn description(h: &History<'_>, (first, last): (i64, i64)) -> String {
    let used = h
        .points
        .last()
        .map(|p| human(Some(p.1), h.unit))
        .unwrap_or_default();
    let limit = match h.limits.last() {
        Some((_, l)) => format!("the limit is {}", human(Some(*l), h.unit)),
        None => "there is no limit".to_string(),
    };
    let reached = h.reached.map(|r| format!("; {r}")).unwrap_or_default();
    format!(
        "{} from {} to {}, one value a day ({} days; each point's value on hover); \
         {used} on the last day, {limit}{reached}.",
        h.label,
        day_label(first),
        day_label(last),
        h.points.len()
    )
}

/// `points` as a step line: each value held until the next day's.
fn steps(points: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (k, &(day, value)) in points.iter().enumerate() {
        if let Some(&(_, before)) = k.checked_sub(1).and_then(|k| points.get(k)) {
            out.push((day, before));
        }
        out.push((day, value));
    }
    out
}

/// Draws the axes and lines, and gives each point's place in the SVG to `marks`.
fn draw(
    root: DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    h: &History<'_>,
    (lo, hi): (i64, i64),
    top: f64,
    marks: &mut Vec<(i32, i32)>,
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
    if !h.limits.is_empty() {
        chart.draw_series(LineSeries::new(
            steps(h.limits),
            status_color("exceeded").stroke_width(2),
        ))?;
    }
    chart.draw_series(LineSeries::new(steps(h.points), LINE.stroke_width(2)))?;
    marks.extend(h.points.iter().map(|p| chart.backend_coord(p)));
    root.present()?;
    Ok(())
}

/// The SVG with a point per day, each with its day and value as its tooltip,
/// drawn over the lines.
fn with_points(svg: &str, h: &History<'_>, marks: &[(i32, i32)]) -> String {
    let Some(end) = svg.rfind("</svg>") else {
        return svg.to_string();
    };
    let mut points = format!(
        "<g class=\"points\" fill=\"#{:02X}{:02X}{:02X}\">\n",
        LINE.0, LINE.1, LINE.2
    );
    for (&(x, y), &(day, value)) in marks.iter().zip(h.points) {
        let tip = format!("{}: {}", day_label(day), human(Some(value), h.unit));
        let _ = writeln!(
            points,
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"2.5\"><title>{}</title></circle>",
            maud::html! { (tip) }.into_string()
        );
    }
    points.push_str("</g>\n");
    format!("{}{points}{}", &svg[..end], &svg[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_a_step_on_its_day_not_a_slope_from_the_day_before() {
        assert_eq!(
            steps(&[(1, 5.0), (2, 5.0), (3, 9.0)]),
            [(1, 5.0), (2, 5.0), (2, 5.0), (3, 5.0), (3, 9.0)]
        );
        assert_eq!(steps(&[(1, 5.0)]), [(1, 5.0)]);
    }

    #[test]
    fn every_day_is_a_point_with_its_day_and_value_on_hover() {
        let points: Vec<(i64, f64)> = (20_400..20_430)
            .map(|d| (d, 1e9 * (d % 3) as f64))
            .collect();
        let limits = [(20_400, 5e9), (20_429, 5e9)];
        let h = History {
            label: "storage",
            over: "the last 30 days",
            unit: "bytes",
            points: &points,
            limits: &limits,
            reached: Some("limit not reached within 10 years at the recent rate"),
        };
        let svg = history(&h, "chart-metric-0").expect("drawn");
        assert_eq!(svg.matches("<circle").count(), 30, "one point a day");
        assert_eq!(svg.matches("</title></circle>").count(), 30);
        let tip = format!(
            "<title>{}: {}</title>",
            day_label(20_402),
            human(Some(2e9), "bytes")
        );
        assert!(svg.contains(&tip), "{svg}");
        assert!(svg.contains("id=\"chart-metric-0-title\""));
        assert!(!svg.contains("chart-org-metric"));
        assert_eq!(
            caption(&h),
            format!(
                "storage: limit {} (red line); limit not reached within 10 years at the recent rate",
                human(Some(5e9), "bytes")
            )
        );
    }
}
