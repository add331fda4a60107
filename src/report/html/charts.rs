//! The charts, drawn with plotters' SVG backend into strings (axes, labels and
//! legends are plotters'), then given a `<title>`, a `<desc>` and `role="img"` so a
//! screen reader has a text alternative.

use super::data::{Trend, TrendSeries, Trials, Usage, day_label, status_rank};
use super::escape;
use crate::report::ReportError;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// The label of a horizontal bar chart's row. Segment 0 is drawn at the bottom, so
/// the first bar (the most urgent) is labelled on top.
fn top_down_label(labels: &[String], v: &SegmentValue<usize>) -> String {
    match v {
        SegmentValue::CenterOf(i) => labels
            .len()
            .checked_sub(i + 1)
            .and_then(|k| labels.get(k))
            .cloned()
            .unwrap_or_default(),
        _ => String::new(),
    }
}

type Drawn = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Width of every chart (fits the 1100 px page column).
const WIDTH: u32 = 1060;
const FONT: &str = "sans-serif";

/// Status colours; the same in the page's CSS.
pub fn status_color(status: &str) -> RGBColor {
    match status {
        "exceeded" | "expired" => RGBColor(198, 40, 40),
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
fn svg(
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
    format!(
        "<svg role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" class=\"chart\" {attrs}>\n\
         <title id=\"{id}-title\">{}</title>\n<desc id=\"{id}-desc\">{}</desc>\n{body}",
        escape(title),
        escape(desc)
    )
}

/// Entitlement usage: one horizontal bar per (organization, metric), most urgent at
/// the top, coloured by status, with the warning and exceeded thresholds marked.
pub fn usage(u: &Usage, warning_pct: f64, exceeded_pct: f64) -> Result<String, ReportError> {
    let n = u.bars.len();
    let height = 110 + 24 * n.max(1) as u32;
    let title = "Entitlement usage per organization (% of limit)";
    let desc = format!(
        "Horizontal bar chart of {n} of {} organization limits, most urgent first; \
         bar length is the percentage of the limit used, colour is the status. The \
         numbers are in the table below the chart.",
        u.total
    );
    let max = u
        .bars
        .iter()
        .map(|b| b.pct)
        .fold(exceeded_pct * 1.1, f64::max);
    svg("chart-usage", (WIDTH, height), title, &desc, |root| {
        root.fill(&WHITE)?;
        let labels: Vec<String> = u.bars.iter().map(|b| b.label()).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(300)
            .build_cartesian_2d(0f64..max, (0..n.max(1)).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(2)
            .y_labels(n.max(1))
            .y_label_formatter(&|v| top_down_label(&labels, v))
            .x_label_formatter(&|x| format!("{x:.0} %"))
            .x_desc("share of the limit used (%)")
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        let mut statuses: Vec<&str> = u.bars.iter().map(|b| b.status.as_str()).collect();
        statuses.sort_by_key(|s| status_rank(s));
        statuses.dedup();
        for status in statuses {
            let color = status_color(status);
            chart
                .draw_series(
                    Histogram::horizontal(&chart)
                        .style(color.filled())
                        .margin(4)
                        .data(
                            u.bars
                                .iter()
                                .enumerate()
                                .filter(|(_, b)| b.status == status)
                                .map(|(i, b)| (n - 1 - i, b.pct)),
                        ),
                )?
                .label(status.to_string())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
        }
        for (pct, name) in [(warning_pct, "warning"), (exceeded_pct, "exceeded")] {
            chart.draw_series(LineSeries::new(
                [(pct, SegmentValue::Exact(0)), (pct, SegmentValue::Last)],
                status_color(name).stroke_width(1),
            ))?;
        }
        status_legend(&mut chart)?;
        root.present()?;
        Ok(())
    })
}

/// One trend window: the white label total as bars (left) and the top users as
/// lines (right), in hours.
pub fn trend(t: &Trend, index: usize) -> Result<String, ReportError> {
    const IDS: [&str; 3] = ["chart-trend-day", "chart-trend-week", "chart-trend-month"];
    let id = IDS.get(index).copied().unwrap_or("chart-trend");
    let title = format!("Compute time in hours, {}", t.window);
    let desc = format!(
        "Left: bar chart of the white label's total compute time per {p}. Right: line \
         chart of the {} users with the most compute time in the window, one line per \
         user. The numbers are in the table below the chart.",
        t.users.len(),
        p = t.period
    );
    let n = t.starts.len().max(1);
    let label = |i: usize| -> String {
        let s = t.starts.get(i).map(String::as_str).unwrap_or("");
        match t.period {
            "day" => s.get(5..).unwrap_or(s).to_string(),
            "month" => s.get(..7).unwrap_or(s).to_string(),
            _ => s.to_string(),
        }
    };
    svg(id, (WIDTH, 400), &title, &desc, |root| {
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(WIDTH * 2 / 5);
        let wl: Option<&TrendSeries> = t.whitelabels.first();
        let top = wl
            .map(|s| s.points.iter().map(|(_, v)| v / 3600.0).fold(0.0, f64::max))
            .unwrap_or(0.0);
        let mut bars = ChartBuilder::on(&left)
            .caption(
                format!(
                    "White label total{}",
                    wl.map(|s| format!(": {}", s.name)).unwrap_or_default()
                ),
                (FONT, 15),
            )
            .margin(10)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d((0..n).into_segmented(), 0f64..nice_top(top))?;
        bars.configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(8))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => label(*i),
                _ => String::new(),
            })
            .x_desc(format!("{} starting", t.period))
            .y_desc("hours")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()?;
        if let Some(s) = wl {
            bars.draw_series(
                Histogram::vertical(&bars)
                    .style(RGBColor(55, 71, 79).filled())
                    .margin(2)
                    .data(s.points.iter().map(|(i, v)| (*i, v / 3600.0))),
            )?;
        }
        let top = t
            .users
            .iter()
            .flat_map(|s| s.points.iter().map(|(_, v)| v / 3600.0))
            .fold(0.0, f64::max);
        let last = n.saturating_sub(1).max(1);
        let mut lines = ChartBuilder::on(&right)
            .caption(
                format!("Top {} users by compute time", t.users.len()),
                (FONT, 15),
            )
            .margin(10)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d(0..last, 0f64..nice_top(top))?;
        lines
            .configure_mesh()
            .x_labels(n.min(10))
            .x_label_formatter(&|i| label(*i))
            .x_desc(format!("{} starting", t.period))
            .y_desc("hours")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()?;
        for (k, s) in t.users.iter().enumerate() {
            let color = USER_COLORS[k % USER_COLORS.len()];
            lines
                .draw_series(LineSeries::new(
                    s.points.iter().map(|(i, v)| (*i, v / 3600.0)),
                    color.stroke_width(2),
                ))?
                .label(super::data::shorten(&s.name, 24))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], color.stroke_width(3))
                });
        }
        if !t.users.is_empty() {
            lines
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .label_font((FONT, 11))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .draw()?;
        }
        root.present()?;
        Ok(())
    })
}

/// The trials timeline: expired trials from expiry to deletion, expiring ones from
/// today to expiry, with a line at today.
pub fn trials(t: &Trials, today: i64) -> Result<String, ReportError> {
    let n = t.bars.len();
    let height = 110 + 24 * n.max(1) as u32;
    let title = "Trials timeline: expiring and expired trials";
    let desc = format!(
        "Timeline of {n} of {} trials that need attention. Orange bars run from today \
         to the trial's expiration; red bars run from the expiry to the date the \
         organization is due for deletion. A vertical line marks today ({}). The dates \
         are in the table below the chart.",
        t.total,
        day_label(today)
    );
    let lo = t.bars.iter().map(|b| b.from).fold(today, i64::min) - 2;
    let hi = t.bars.iter().map(|b| b.to).fold(today, i64::max) + 2;
    svg("chart-trials", (WIDTH, height), title, &desc, |root| {
        root.fill(&WHITE)?;
        let labels: Vec<String> = t.bars.iter().map(|b| b.label()).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(300)
            .build_cartesian_2d(lo..hi, (0..n.max(1)).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(2)
            .y_labels(n.max(1))
            .y_label_formatter(&|v| top_down_label(&labels, v))
            .x_labels(10)
            .x_label_formatter(&|d| day_label(*d))
            .x_desc("date")
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        for status in ["expired", "expiring"] {
            let color = status_color(status);
            let caption = if status == "expired" {
                "expired: expiry → deletion due"
            } else {
                "expiring: today → expiration"
            };
            chart
                .draw_series(
                    t.bars
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| b.status == status)
                        .map(|(i, b)| {
                            let row = n - 1 - i;
                            Rectangle::new(
                                [
                                    (b.from, SegmentValue::Exact(row)),
                                    (b.to.max(b.from + 1), SegmentValue::Exact(row + 1)),
                                ],
                                color.filled(),
                            )
                        }),
                )?
                .label(caption)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
        }
        chart
            .draw_series(LineSeries::new(
                [(today, SegmentValue::Exact(0)), (today, SegmentValue::Last)],
                BLACK.stroke_width(2),
            ))?
            .label(format!("today ({})", day_label(today)))
            .legend(|(x, y)| {
                PathElement::new([(x + 6, y - 7), (x + 6, y + 7)], BLACK.stroke_width(2))
            });
        status_legend(&mut chart)?;
        root.present()?;
        Ok(())
    })
}

/// The legend of the two status charts (usage and trials), bottom right.
fn status_legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> Drawn {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// A round upper bound for an axis (at least 1).
fn nice_top(max: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * magnitude >= max * 1.05 {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_top(0.0), 1.0);
        assert_eq!(nice_top(9.0), 10.0);
        assert_eq!(nice_top(11.0), 20.0);
        assert_eq!(nice_top(230.0), 250.0);
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
}
