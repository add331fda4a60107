//! The workbook's cell formats: number formats in a person's units over exact
//! values, dates, the header row, and the status colours of the HTML page.

use super::cells::Unit;
use crate::report::status::CLASS_COLOURS;
use crate::report::units::{BYTE_PREFIXES, byte_scale, significant_decimals};
use rust_xlsxwriter::{Color, Format, FormatBorder};

/// The header cells' background, as the page's table headers.
const HEADER_FILL: u32 = 0xF0_F2_F4;

/// Every format the workbook uses, made once.
pub struct Formats {
    pub header: Format,
    pub title: Format,
    pub bold: Format,
    pub text: Format,
    pub date: Format,
    pub timestamp: Format,
    int: Format,
    float: Format,
    id: Format,
    seconds: Format,
    ms: Format,
    pct: Format,
    /// Per unit of [`BYTE_PREFIXES`], per number of decimals (0 to 2).
    bytes: Vec<[Format; 3]>,
    /// Per class of [`CLASS_COLOURS`]: a status cell (filled), a row's first cell
    /// (the coloured left edge of the page's action rows).
    status: Vec<(&'static str, Format, Format)>,
}

impl Formats {
    pub fn new() -> Formats {
        let number = |f: &str| Format::new().set_num_format(f);
        Formats {
            header: Format::new()
                .set_bold()
                .set_background_color(Color::RGB(HEADER_FILL))
                .set_border_bottom(FormatBorder::Thin),
            title: Format::new().set_bold().set_font_size(14),
            bold: Format::new().set_bold(),
            text: Format::new(),
            date: number("yyyy-mm-dd"),
            // As `calendar::for_a_person` writes a time: to the minute, in UTC.
            timestamp: number("yyyy-mm-dd hh:mm \"UTC\""),
            int: number("#,##0"),
            float: number("#,##0.0##"),
            id: number("0"),
            seconds: number("#,##0\" s\""),
            ms: number("#,##0\" ms\""),
            pct: number("0.00\" %\""),
            bytes: (0..BYTE_PREFIXES.len())
                .map(|prefix| [0, 1, 2].map(|decimals| number(&bytes_format(prefix, decimals))))
                .collect(),
            status: CLASS_COLOURS
                .iter()
                .map(|&(class, rgb)| {
                    let filled = Format::new()
                        .set_bold()
                        .set_font_color(Color::White)
                        .set_background_color(Color::RGB(rgb));
                    let edge = Format::new()
                        .set_border_left(FormatBorder::Thick)
                        .set_border_left_color(Color::RGB(rgb));
                    (class, filled, edge)
                })
                .collect(),
        }
    }

    /// The format of a number `v` in `unit` (a row unit already resolved).
    pub fn number(&self, unit: Unit, v: f64) -> &Format {
        match unit {
            Unit::Id => &self.id,
            Unit::Bytes => {
                let (prefix, scaled) = byte_scale(v);
                let decimals = if prefix == 0 {
                    0
                } else {
                    significant_decimals(scaled)
                };
                &self.bytes[prefix][decimals.min(2)]
            }
            Unit::Seconds => &self.seconds,
            Unit::Ms => &self.ms,
            Unit::Pct => &self.pct,
            Unit::Plain | Unit::PerRow if v.fract() == 0.0 => &self.int,
            Unit::Plain | Unit::PerRow => &self.float,
        }
    }

    /// A status cell of a marked class (`exceeded`, `warning`, ...).
    pub fn status(&self, class: &str) -> Option<&Format> {
        self.class(class).map(|(filled, _)| filled)
    }

    /// The first cell of an action row of `class`.
    pub fn edge(&self, class: &str) -> Option<&Format> {
        self.class(class).map(|(_, edge)| edge)
    }

    fn class(&self, class: &str) -> Option<(&Format, &Format)> {
        self.status
            .iter()
            .find(|(c, _, _)| *c == class)
            .map(|(_, filled, edge)| (filled, edge))
    }
}

/// A number format that shows bytes in the unit `prefix` (each `,` after the
/// digits divides by 1000 for display only; the cell keeps the bytes).
fn bytes_format(prefix: usize, decimals: usize) -> String {
    let fraction = if decimals == 0 {
        String::new()
    } else {
        format!(".{}", "0".repeat(decimals))
    };
    format!(
        "#,##0{fraction}{}\" {}\"",
        ",".repeat(prefix),
        BYTE_PREFIXES[prefix]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_formats_scale_by_thousands() {
        assert_eq!(bytes_format(0, 0), "#,##0\" B\"");
        assert_eq!(bytes_format(3, 1), "#,##0.0,,,\" GB\"");
        assert_eq!(bytes_format(4, 2), "#,##0.00,,,,\" TB\"");
    }
}
