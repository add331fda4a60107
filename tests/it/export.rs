//! `export` and `report --format parquet`: files that polars' own Parquet reader
//! reads back with the rows and values of the mirror.

use crate::common;
use orgledger::export::{self, ExportOptions};
use orgledger::mirror::spec::{TABLES, TableSpec, Ty};
use orgledger_sandbox::Profile;
use polars::prelude::{AnyValue, DataFrame, DataType, TimeUnit};
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;
use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn read_parquet(path: &Path) -> DataFrame {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetReader::new(file)
        .finish()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `*.parquet` under `dir`, sorted.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(parquet_files(&path));
        } else if path.extension().is_some_and(|e| e == "parquet") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn options(db: &Path, out: &Path) -> ExportOptions {
    ExportOptions {
        db: db.to_path_buf(),
        out: out.to_path_buf(),
        as_of: None,
        tables: Vec::new(),
        history: false,
        file_mode: orgledger::file_mode::FileMode::PRIVATE,
        store: None,
        since: None,
    }
}

/// Compares one exported row with the mirror's current row of the same key.
fn same_as_mirror(conn: &rusqlite::Connection, spec: &TableSpec, df: &DataFrame, row: usize) {
    let key_sql: Vec<String> = spec
        .key
        .iter()
        .map(|c| format!("\"{}\" = ?", c.name))
        .collect();
    let cols: Vec<String> = spec
        .all_columns()
        .map(|c| format!("\"{}\"", c.name))
        .collect();
    let sql = format!(
        "SELECT {} FROM {} WHERE {} AND removed_at IS NULL",
        cols.join(", "),
        spec.name,
        key_sql.join(" AND ")
    );
    let key_values: Vec<rusqlite::types::Value> = spec
        .key
        .iter()
        .map(|c| {
            let cell = df
                .column(c.name)
                .expect("key column")
                .get(row)
                .expect("cell");
            match cell {
                AnyValue::Int64(n) => rusqlite::types::Value::Integer(n),
                AnyValue::String(s) => rusqlite::types::Value::Text(s.to_string()),
                AnyValue::StringOwned(s) => rusqlite::types::Value::Text(s.to_string()),
                other => panic!("{}.{}: key value {other:?}", spec.name, c.name),
            }
        })
        .collect();
    let mut stmt = conn.prepare(&sql).expect("prepare");
    let mut rows = stmt
        .query(rusqlite::params_from_iter(key_values.iter()))
        .expect("query");
    let mirror = rows
        .next()
        .expect("step")
        .expect("the exported row is in the mirror");
    for (i, col) in spec.all_columns().enumerate() {
        let exported = df.column(col.name).expect("column").get(row).expect("cell");
        let stored = mirror.get_ref(i).expect("value");
        let what = format!(
            "{}.{} row {row}: {exported:?} vs {stored:?}",
            spec.name, col.name
        );
        match (col.ty, &exported, stored) {
            (_, AnyValue::Null, ValueRef::Null) => {}
            (Ty::Int, AnyValue::Int64(a), ValueRef::Integer(b)) => assert_eq!(*a, b, "{what}"),
            (Ty::Real | Ty::Number, AnyValue::Float64(a), ValueRef::Real(b)) => {
                assert_eq!(*a, b, "{what}")
            }
            (Ty::Real | Ty::Number, AnyValue::Float64(a), ValueRef::Integer(b)) => {
                assert_eq!(*a, b as f64, "{what}")
            }
            (Ty::Bool, AnyValue::Boolean(a), ValueRef::Integer(b)) => {
                assert_eq!(*a, b == 1, "{what}")
            }
            (Ty::Text | Ty::Json, AnyValue::String(a), ValueRef::Text(b)) => {
                assert_eq!(a.as_bytes(), b, "{what}")
            }
            (Ty::Time, AnyValue::Datetime(ms, TimeUnit::Milliseconds, _), ValueRef::Text(b)) => {
                let text = std::str::from_utf8(b).expect("utf-8");
                let want = chrono::DateTime::parse_from_rfc3339(text)
                    .expect("mirror timestamp")
                    .timestamp_millis();
                assert_eq!(*ms, want, "{what}");
            }
            _ => panic!("mismatch: {what}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_round_trips_every_table_of_the_small_world() {
    let sb = common::sandbox(Profile::Small).await;
    let (dir, db) = common::scratch();
    let outcome = orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    assert_eq!(outcome.totals.errors, 0);
    let out = dir.path().join("export");
    let exported = tokio::task::spawn_blocking({
        let opts = options(&db, &out);
        move || export::run(&opts)
    })
    .await
    .expect("join")
    .expect("export");
    let conn = common::open(&db);
    for spec in TABLES {
        let files = parquet_files(&out.join(spec.name));
        assert!(!files.is_empty(), "{}: no file", spec.name);
        let mut rows = 0;
        for file in &files {
            let df = read_parquet(file);
            rows += df.height();
            for col in spec.all_columns() {
                let dtype = df.column(col.name).expect("column").dtype().clone();
                let want = match col.ty {
                    Ty::Int => DataType::Int64,
                    Ty::Real | Ty::Number => DataType::Float64,
                    Ty::Bool => DataType::Boolean,
                    Ty::Text | Ty::Json => DataType::String,
                    Ty::Time => dtype.clone(),
                };
                assert_eq!(dtype, want, "{}.{}", spec.name, col.name);
                if col.ty == Ty::Time {
                    assert!(
                        matches!(&dtype, DataType::Datetime(TimeUnit::Milliseconds, Some(tz)) if tz.as_str() == "UTC"),
                        "{}.{} is {dtype:?}",
                        spec.name,
                        col.name
                    );
                }
            }
            // A sample: the first, middle and last rows of every file.
            for row in [0, df.height() / 2, df.height().saturating_sub(1)] {
                if row < df.height() {
                    same_as_mirror(&conn, spec, &df, row);
                }
            }
        }
        let in_mirror = common::count(
            &conn,
            &format!(
                "SELECT COUNT(*) FROM {} WHERE removed_at IS NULL",
                spec.name
            ),
        );
        assert_eq!(rows as i64, in_mirror, "{}: rows", spec.name);
    }

    // Daily metrics: one partition per month, each holding only its month's days.
    let months = parquet_files(&out.join("daily_metrics"));
    assert!(months.len() > 1, "{months:?}");
    for file in &months {
        let month = file
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("month="))
            .unwrap_or_else(|| panic!("{} is not in a month= folder", file.display()))
            .to_string();
        let df = read_parquet(file);
        let days = df.column("day").expect("day").str().expect("text").clone();
        assert!(
            days.iter()
                .all(|d| d.is_some_and(|d| d.starts_with(&month))),
            "{}: a day of another month",
            file.display()
        );
    }

    // The manifest names every file with its rows and checksum.
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("_manifest.json")).expect("manifest"),
    )
    .expect("json");
    let listed = manifest["files"].as_array().expect("files");
    assert_eq!(listed.len(), exported.files.len());
    let all_files: usize = TABLES
        .iter()
        .map(|t| parquet_files(&out.join(t.name)).len())
        .sum();
    assert_eq!(listed.len(), all_files, "every file on disk is listed");
    for entry in listed {
        let file = out.join(entry["file"].as_str().expect("file"));
        let bytes = std::fs::read(&file).expect("listed file exists");
        assert_eq!(
            entry["sha256"],
            hex::encode(Sha256::digest(&bytes)),
            "{}",
            file.display()
        );
        assert_eq!(
            entry["rows"].as_u64(),
            Some(read_parquet(&file).height() as u64)
        );
    }
    assert_eq!(manifest["run_id"].as_i64(), Some(outcome.run_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_export_holds_every_version_and_as_of_exports_the_past() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let client = common::admin(&sb);
    let opts = common::sync_opts(&sb, &db);
    let first = orgledger::sync::run(&client, &opts, None)
        .await
        .expect("first sync");
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=40").await,
        200
    );
    orgledger::sync::run(&client, &opts, None)
        .await
        .expect("second sync");
    let conn = common::open(&db);
    let first_day: String = conn
        .query_row(
            "SELECT substr(observed_at, 1, 10) FROM sync_runs WHERE id = ?1",
            [first.run_id],
            |r| r.get(0),
        )
        .expect("first run's day");
    // Whole archived rows and the narrow ones of versions where only moving
    // columns changed (`projects.last_accessed`); daily metrics have no narrow table.
    let versions = |table: &str| {
        let narrow = if table == "projects" {
            common::count(&conn, "SELECT COUNT(*) FROM projects_moves")
        } else {
            0
        };
        common::count(&conn, &format!("SELECT COUNT(*) FROM {table}"))
            + common::count(&conn, &format!("SELECT COUNT(*) FROM {table}_history"))
            + narrow
    };
    assert!(
        common::count(&conn, "SELECT COUNT(*) FROM daily_metrics_history") > 0
            || common::count(&conn, "SELECT COUNT(*) FROM projects_history") > 0
            || common::count(&conn, "SELECT COUNT(*) FROM projects_moves") > 0,
        "the world changed between the syncs"
    );

    let out = dir.path().join("history");
    let mut history = options(&db, &out);
    history.history = true;
    history.tables = vec!["projects".into(), "daily_metrics".into()];
    let written = tokio::task::spawn_blocking(move || export::run(&history))
        .await
        .expect("join")
        .expect("history export");
    for table in ["projects", "daily_metrics"] {
        let files = parquet_files(&out.join(table));
        let rows: usize = files.iter().map(|f| read_parquet(f).height()).sum();
        assert_eq!(rows as i64, versions(table), "{table}: every version");
        let df = read_parquet(&files[0]);
        for col in ["valid_from", "valid_to", "removed_at"] {
            assert!(
                matches!(df.column(col).expect(col).dtype(), DataType::Datetime(..)),
                "{table}.{col}"
            );
        }
    }
    assert!(
        written
            .files
            .iter()
            .all(|f| f.table == "projects" || f.table == "daily_metrics")
    );
    assert!(
        !out.join("organizations").exists(),
        "only the tables asked for"
    );

    // As of the first sync's day, into the same folder: months that only the second
    // sync brought are gone, and the rows are those of that day.
    let mut past = options(&db, &out);
    past.as_of = Some(first_day.parse().expect("date"));
    past.tables = vec!["daily_metrics".into()];
    tokio::task::spawn_blocking(move || export::run(&past))
        .await
        .expect("join")
        .expect("as-of export");
    let files = parquet_files(&out.join("daily_metrics"));
    let rows: usize = files.iter().map(|f| read_parquet(f).height()).sum();
    let then = common::count(
        &conn,
        &format!(
            "SELECT COUNT(*) FROM (SELECT user_id, day FROM daily_metrics WHERE valid_from <= '{first_day}T23:59:59.999Z' \
             UNION SELECT user_id, day FROM daily_metrics_history WHERE valid_from <= '{first_day}T23:59:59.999Z')"
        ),
    );
    assert_eq!(rows as i64, then, "daily metrics as of {first_day}");
    let latest_month = files
        .iter()
        .filter_map(|f| f.parent()?.file_name()?.to_str().map(str::to_string))
        .max()
        .expect("a month");
    assert!(
        latest_month.as_str() <= format!("month={}", &first_day[..7]).as_str(),
        "{latest_month} is after {first_day}"
    );

    let mut before = options(&db, &dir.path().join("none"));
    before.as_of = Some(chrono::NaiveDate::from_ymd_opt(2020, 1, 1).expect("date"));
    let err = export::run(&before).expect_err("before the first sync");
    assert!(
        err.to_string().contains("no data as of 2020-01-01"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_parquet_files_hold_the_rows_of_the_json_files() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    orgledger::sync::run(&common::admin(&sb), &common::sync_opts(&sb, &db), None)
        .await
        .expect("sync");
    let out = dir.path().join("reports");
    let bin = env!("CARGO_BIN_EXE_orgledger");
    let status = std::process::Command::new(bin)
        .args([
            "--db",
            db.to_str().expect("utf-8"),
            "-q",
            "report",
            "--format",
            "json,parquet",
        ])
        .args(["--out", out.to_str().expect("utf-8")])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("report runs");
    assert!(status.success());
    let day = std::fs::read_dir(&out)
        .expect("out")
        .flatten()
        .next()
        .expect("a report folder")
        .path();
    for name in orgledger::report::builtin_names() {
        let df = read_parquet(&day.join(format!("{name}.parquet")));
        let json = common::json_rows(&day, name);
        assert_eq!(df.height(), json.len(), "{name}");
        if let Some(first) = json.first() {
            let keys = first.as_object().expect("row object");
            assert_eq!(df.width(), keys.len(), "{name}: columns");
        }
    }
    let manifest = std::fs::read_to_string(day.join("manifest.json")).expect("manifest");
    assert!(manifest.contains("\"format\": \"parquet\""), "{manifest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_history_in_a_folder_only_adds_files_each_run() {
    let sb = common::sandbox(Profile::Tiny).await;
    let (dir, db) = common::scratch();
    let client = common::admin(&sb);
    let sync = common::sync_opts(&sb, &db);
    let first = orgledger::sync::run(&client, &sync, None)
        .await
        .expect("first sync");
    let out = dir.path().join("export");
    let export = || {
        let mut opts = options(&db, &out);
        opts.since = Some(export::Since::Previous);
        tokio::task::spawn_blocking(move || export::run(&opts))
    };
    let manifest = |out: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(out.join("history/_manifest.json")).expect("read"))
            .expect("JSON")
    };
    let one = export().await.expect("thread").expect("first increment");
    assert_eq!(one.run_id, Some(first.run_id));
    assert!(!one.files.is_empty());
    assert!(!out.join("organizations").exists(), "no state export");
    let first_files: Vec<(PathBuf, Vec<u8>)> = parquet_files(&out.join("history"))
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect();
    // Every row is a change of the first run, filed under the day it was made.
    for (path, _) in &first_files {
        let day = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("changed_on="))
            .unwrap_or_else(|| panic!("{} is not in a changed_on= folder", path.display()))
            .to_string();
        let df = read_parquet(path);
        let runs = df
            .column("run_id")
            .expect("run_id")
            .i64()
            .expect("ints")
            .clone();
        assert!(
            runs.iter().all(|r| r == Some(first.run_id)),
            "{}",
            path.display()
        );
        let at = df
            .column("changed_at")
            .expect("changed_at")
            .get(0)
            .expect("cell");
        let AnyValue::Datetime(ms, TimeUnit::Milliseconds, _) = at else {
            panic!("changed_at is {at:?}")
        };
        let when = chrono::DateTime::from_timestamp_millis(ms).expect("instant");
        assert_eq!(when.format("%Y-%m-%d").to_string(), day);
    }

    // A run with nothing new adds nothing; a new sync's changes come as new files.
    let again = export().await.expect("thread").expect("nothing new");
    assert!(again.files.is_empty());
    assert_eq!(manifest(&out)["last_run"].as_i64(), Some(first.run_id));
    assert_eq!(
        common::admin_post(&sb, "/sandbox/advance?days=2").await,
        200
    );
    let second = orgledger::sync::run(&client, &sync, None)
        .await
        .expect("second sync");
    let two = export().await.expect("thread").expect("second increment");
    assert_eq!(two.run_id, Some(second.run_id));
    assert!(!two.files.is_empty());
    assert!(
        two.files
            .iter()
            .all(|f| f.file.ends_with(&format!("run-{}.parquet", second.run_id)))
    );
    for (path, bytes) in &first_files {
        assert_eq!(
            &std::fs::read(path).expect("kept"),
            bytes,
            "{}",
            path.display()
        );
    }
    let listed = manifest(&out)["files"].as_array().map_or(0, Vec::len);
    assert_eq!(listed, first_files.len() + two.files.len());
    assert_eq!(manifest(&out)["last_run"].as_i64(), Some(second.run_id));
}
