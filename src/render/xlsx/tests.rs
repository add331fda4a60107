use super::*;
use crate::render::files::{cells, prepare};
use crate::report::Thresholds;
use calamine::{Data, Reader, Xlsx};
use polars::prelude::*;
use std::collections::BTreeMap;

fn info<'a>(t: &'a Thresholds) -> PageInfo<'a> {
    PageInfo {
        as_of: NaiveDate::from_ymd_opt(2026, 11, 27).expect("date"),
        run_id: Some(7),
        observed_at: Some("2026-11-27T12:00:00.000Z"),
        generated_at: "2026-11-27T13:30:00.250Z",
        redacted: false,
        thresholds: t,
    }
}

/// Builds a workbook of `frames`, `max_rows` rows a sheet, and opens it.
fn workbook(
    frames: &BTreeMap<String, DataFrame>,
    max_rows: usize,
) -> Xlsx<std::io::Cursor<Vec<u8>>> {
    Xlsx::new(std::io::Cursor::new(bytes(frames, max_rows))).expect("the workbook reads back")
}

/// A workbook of `frames`, `max_rows` rows a sheet, each frame handed over in
/// batches of two rows as a run hands its reports' rows.
fn bytes(frames: &BTreeMap<String, DataFrame>, max_rows: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Thresholds::default();
    let path = dir.path().join("w.xlsx");
    let book = Book::with_max_rows(dir.path(), &path, max_rows).expect("workbook");
    let mut reports = Vec::new();
    for (name, df) in frames {
        let mut sheets = ReportSheets::new(name);
        for start in (0..df.height().max(1)).step_by(2) {
            let batch = df.slice(start as i64, 2);
            let prepared = prepare(name, &batch).expect("prepared");
            let cols = cells(name, &prepared).expect("cells");
            let table = (prepared.names.as_slice(), cols.as_slice(), batch.height());
            sheets.rows(&book, table).expect("rows");
        }
        reports.push(sheets.finish(&book).expect("sheets"));
    }
    let written = book
        .write(
            &info(&t),
            reports,
            &Attention::default(),
            crate::file_mode::FileMode::PRIVATE,
        )
        .expect("workbook");
    assert_eq!(
        written.rows,
        frames.values().map(DataFrame::height).sum::<usize>()
    );
    std::fs::read(&written.path).expect("the workbook file")
}

#[test]
fn a_column_with_integers_as_text_says_so_in_a_note() {
    let df = df!(
        "limit" => [Some(1i64 << 60), Some(5), Some(i64::MAX)],
        "small" => [1i64, 2, 3],
    )
    .expect("frame");
    let frames = BTreeMap::from([("big".to_string(), df)]);
    let mut zip =
        ::zip::ZipArchive::new(std::io::Cursor::new(bytes(&frames, MAX_ROWS))).expect("a zip");
    let notes: Vec<String> = (0..zip.len())
        .filter_map(|i| {
            let mut part = zip.by_index(i).ok()?;
            if !part.name().ok()?.starts_with("xl/comments") {
                return None;
            }
            let mut text = String::new();
            std::io::Read::read_to_string(&mut part, &mut text).ok()?;
            Some(text)
        })
        .collect();
    assert_eq!(notes.len(), 1, "one sheet has notes");
    assert_eq!(notes[0].matches("<comment ").count(), 1, "{}", notes[0]);
    assert!(notes[0].contains(r#"<comment ref="A1""#), "{}", notes[0]);
    assert!(
        notes[0].contains("2 cell(s) of this column hold integers of more than 15 significant"),
        "{}",
        notes[0]
    );
}

#[test]
fn cells_are_typed_and_big_integers_are_text_with_their_digits() {
    let df = df!(
        "organization_id" => [Some(1i64), Some(1 << 60), None],
        "limit" => [Some(1_152_921_504_606_846_976.0), Some(2.5), Some(1e16)],
        "storage_bytes" => [Some(166_900_000_000i64), Some(512), Some(-3_000)],
        "flagged" => [Some(true), Some(false), None],
        "period_start" => [Some("2026-11-02"), None, Some("2026-01-31")],
        "data_as_of" => [Some("2026-11-27T12:00:00.000Z"), Some("2026-11-27T06:30:15.5Z"), None],
        "status" => [Some("exceeded"), Some("2026-11-27T06:30:15.5Z"), Some("2026-01-01")],
    )
    .expect("frame");
    let frames = BTreeMap::from([("mixed".to_string(), df)]);
    let mut wb = workbook(&frames, MAX_ROWS);
    assert_eq!(wb.sheet_names(), ["Needs action", "mixed", "About"]);
    let range = wb.worksheet_range("mixed").expect("sheet");
    let rows: Vec<&[Data]> = range.rows().collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(
        rows[0],
        [
            "organization_id",
            "limit",
            "storage_bytes",
            "flagged",
            "period_start",
            "data_as_of",
            "status"
        ]
        .map(|h| Data::String(h.to_string()))
    );
    let serial = |d: &Data| match d {
        Data::DateTime(dt) => Some(dt.as_f64()),
        _ => None,
    };
    assert_eq!(rows[1][0], Data::Float(1.0));
    assert_eq!(rows[2][0], Data::String("1152921504606846976".into()));
    assert_eq!(rows[3][0], Data::Empty);
    assert_eq!(rows[1][1], Data::String("1152921504606846976".into()));
    assert_eq!(rows[2][1], Data::Float(2.5));
    assert_eq!(rows[3][1], Data::Float(1e16));
    assert_eq!(rows[1][2], Data::Float(166_900_000_000.0));
    assert_eq!(rows[3][2], Data::Float(-3_000.0));
    assert_eq!(rows[1][3], Data::Bool(true));
    assert_eq!(rows[2][3], Data::Bool(false));
    assert_eq!(serial(&rows[1][4]), Some(46_328.0));
    assert_eq!(rows[2][4], Data::Empty);
    assert_eq!(serial(&rows[1][5]), Some(46_353.5));
    let six_thirty = 46_353.0 + (6.0 * 3600.0 + 30.0 * 60.0 + 15.5) / 86_400.0;
    assert!((serial(&rows[2][5]).expect("timestamp") - six_thirty).abs() < 1e-9);
    // A text column stays text, whatever some of its values look like; a time in
    // it reads as the pages write it.
    assert_eq!(rows[3][6], Data::String("2026-01-01".into()));
    assert_eq!(rows[2][6], Data::String("2026-11-27 06:30 UTC".into()));

    let about = wb.worksheet_range(ABOUT).expect("about");
    let cell = |label: &str| {
        about
            .rows()
            .find(|r| r.first() == Some(&Data::String(label.to_string())))
            .and_then(|r| r.get(1).cloned())
    };
    assert_eq!(cell("Sync run"), Some(Data::Float(7.0)));
    assert_eq!(
        cell("As of (end of day, UTC)").as_ref().and_then(serial),
        Some(46_353.0)
    );
    assert_eq!(cell("Personal data pseudonymized"), Some(Data::Bool(false)));
}

#[test]
fn a_report_longer_than_a_sheet_continues_on_the_next() {
    let df = df!("n" => (0..5i64).collect::<Vec<_>>()).expect("frame");
    let frames = BTreeMap::from([("long".to_string(), df)]);
    let mut wb = workbook(&frames, 2);
    assert_eq!(
        wb.sheet_names(),
        ["Needs action", "long", "long (2)", "long (3)", "About"]
    );
    let mut seen = Vec::new();
    for name in ["long", "long (2)", "long (3)"] {
        let range = wb.worksheet_range(name).expect("sheet");
        let mut rows = range.rows();
        assert_eq!(rows.next(), Some(&[Data::String("n".into())][..]), "{name}");
        seen.extend(rows.map(|r| r[0].clone()));
    }
    assert_eq!(
        seen,
        (0..5).map(|n| Data::Float(n as f64)).collect::<Vec<_>>()
    );
}
