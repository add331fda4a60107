//! Tests of a whole run, engine and renderers together: as-of rebuilds, custom
//! reports, PII redaction, the manifest, the page.

use crate::mirror::spec::*;
use crate::render::run;
use crate::report::ReportError;
use crate::report::testkit::*;
use sha2::{Digest, Sha256};

fn write_query(m: &TestMirror, relative: &str, sql: &str) {
    let path = m.dir.path().join("queries").join(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("queries dir");
    std::fs::write(path, sql).expect("write sql");
}

/// A whole run as of `as_of` (closing the writer first).
fn report(m: &mut TestMirror, as_of: &str, names: &[&str]) -> crate::render::ReportOutcome {
    m.close();
    run(&m.options(as_of, names)).expect("report run")
}

/// `report`'s table as the run kept it, in memory or on disk.
fn kept(out: &crate::render::ReportOutcome, report: &str) -> polars::prelude::DataFrame {
    let table = out
        .tables
        .get(report)
        .unwrap_or_else(|| panic!("{report} kept"));
    table.whole().expect("read back")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn report_as_of_a_past_date_reads_history() {
    let mut m = TestMirror::new();
    let info = |used: i64, left: i64| {
        move |w: &Run<'_>| {
            w.put(&PROJECTS, &[("id", i(1)), ("name", t("P1"))]);
            w.put(
                &PROJECT_INFO,
                &[
                    ("project_id", i(1)),
                    ("compute_time_used_ms", i(used)),
                    ("compute_time_left_ms", i(left)),
                ],
            );
        }
    };
    let first = m.run("2025-03-10T06:00:00.000Z", info(1_000, 9_000));
    let second = m.run("2025-03-20T06:00:00.000Z", info(9_000, 1_000));

    // Before the first sync: refused, naming the first day with data (a report of
    // zeros would read like "all clear"), and nothing written.
    m.close();
    let opts = m.options("2025-03-09", &["project_compute"]);
    match run(&opts) {
        Err(ReportError::Coverage(crate::mirror::coverage::CoverageError::BeforeFirstSync {
            first,
            ..
        })) => {
            assert_eq!(first.to_string(), "2025-03-10");
        }
        other => panic!("expected BeforeFirstSync, got {other:?}"),
    }
    assert!(!opts.out_root.join("2025-03-09").exists());

    // Between the syncs: the first version (1000 / 10000 = 10 %).
    let out = report(&mut m, "2025-03-15", &["project_compute"]);
    let df = &kept(&out, "project_compute");
    assert_num(df, 0, "pct_used", Some(10.0));
    assert_eq!(text_of(df, 0, "flagged"), "false");
    assert_eq!(out.run_id, Some(first));
    assert_eq!(out.observed_at.as_deref(), Some("2025-03-10T06:00:00.000Z"));

    // The day of the second sync (it ran at 06:00, before the end of the day): 90 %.
    let out = report(&mut m, "2025-03-20", &["project_compute"]);
    let df = &kept(&out, "project_compute");
    assert_num(df, 0, "pct_used", Some(90.0));
    assert_eq!(text_of(df, 0, "flagged"), "true");
    assert_eq!(out.run_id, Some(second));
    assert!(out.dir.ends_with("2025-03-20"));
}

#[test]
fn custom_sql_reports_and_shipped_reports_defined_by_the_build_alone() {
    let mut m = TestMirror::new();
    small_world(&mut m);
    write_query(
        &m,
        "custom/org_list.sql",
        "-- organizations with an id above 1\nSELECT id, name, :as_of AS as_of, NULL AS blank\nFROM organizations WHERE id > 1 ORDER BY id;\n",
    );
    // A file named like a shipped extract is not read: a built-in report's figures
    // are defined by the build.
    write_query(
        &m,
        "project_compute.sql",
        "SELECT i.project_id, 'overridden' AS project_name, NULL AS organization_id, NULL AS organization_name, \
         NULL AS period_start, NULL AS period_end, i.compute_time_used_ms AS time_used_ms, \
         i.compute_time_left_ms AS time_left_ms, NULL AS last_accessed, NULL AS deleted_date \
         FROM project_info i",
    );
    let out = report(&mut m, "2025-03-31", &[]);
    assert_eq!(
        out.tables.len(),
        6,
        "the built-in reports the later steps read back, and the custom one"
    );
    let df = &kept(&out, "org_list");
    assert_eq!(df.height(), 1);
    assert_eq!(text_of(df, 0, "name"), "Org Two");
    assert_eq!(text_of(df, 0, "as_of"), "2025-03-31");
    let csv = std::fs::read_to_string(out.dir.join("org_list.csv")).expect("csv");
    assert_eq!(csv, "id,name,as_of,blank\n2,Org Two,2025-03-31,\n");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.dir.join("org_list.json")).expect("json"))
            .expect("parse");
    assert_eq!(
        json,
        serde_json::json!([{"id": 2, "name": "Org Two", "as_of": "2025-03-31", "blank": null}])
    );
    let df = &kept(&out, "project_compute");
    assert!(df.height() > 0);
    for row in 0..df.height() {
        assert_ne!(text_of(df, row, "project_name"), "overridden");
    }

    // A custom report can be asked for by name; unknown names list the valid ones.
    let out = report(&mut m, "2025-03-31", &["org_list"]);
    assert_eq!(out.tables.len(), 1);
    let err = run(&m.options("2025-03-31", &["nope"])).expect_err("unknown report");
    let text = err.to_string();
    assert!(matches!(err, ReportError::UnknownReport { .. }));
    for name in [
        "entitlements",
        "trials",
        "project_compute",
        "compute_trends",
        "usage_summary",
        "org_list",
    ] {
        assert!(text.contains(name), "{text}");
    }
    // A broken custom query names its file.
    write_query(
        &m,
        "custom/broken.sql",
        "SELECT no_such_column FROM organizations",
    );
    let err = run(&m.options("2025-03-31", &["broken"])).expect_err("broken query");
    assert!(err.to_string().contains("broken.sql"), "{err}");
}

#[test]
fn a_custom_report_s_rows_are_a_table_on_the_page_with_their_count_and_times_read_by_day() {
    let mut m = TestMirror::new();
    small_world(&mut m);
    write_query(
        &m,
        "custom/org_list.sql",
        "SELECT id, name, '2025-03-30T17:45:00.000Z' AS seen FROM organizations ORDER BY id;\n",
    );
    m.close();
    let mut opts = m.options("2025-03-31", &[]);
    opts.formats = vec![crate::report::Format::Csv, crate::report::Format::Html];
    let out = run(&opts).expect("run");
    let page = std::fs::read_to_string(out.dir.join("index.html")).expect("index.html");
    let start = page
        .find("<h3>org_list</h3>")
        .expect("the custom report's own heading");
    let table = &page[start..];
    let table = &table[..table.find("</table>").expect("its table")];
    assert!(
        table.contains("2 rows; also in <a href=\"org_list.csv\">"),
        "{table}"
    );
    assert!(table.contains("data-report=\"org_list\""), "{table}");
    for name in ["Org Ten", "Org Two"] {
        assert!(table.contains(&format!("<td>{name}</td>")), "{table}");
    }
    assert!(
        table.contains("title=\"2025-03-30T17:45:00.000Z\">2025-03-30</time>"),
        "{table}"
    );
}

#[test]
fn redact_pii_leaves_no_email_or_person_name() {
    let mut m = TestMirror::new();
    small_world(&mut m);
    write_query(
        &m,
        "custom/contacts.sql",
        "SELECT id, email, name AS user_name, username FROM users ORDER BY id",
    );
    m.close();
    let mut opts = m.options("2025-03-31", &[]);
    opts.redact_pii = true;
    let out = run(&opts).expect("run");
    assert_eq!(out.files.len(), 16);
    for f in &out.files {
        let text = std::fs::read_to_string(&f.path).expect("read");
        for secret in ["@", "Ada", "Lovelace", "Björk", "Guðmundsdóttir"] {
            assert!(
                !text.contains(secret),
                "{} contains {secret:?}",
                f.path.display()
            );
        }
    }
    // Pseudonyms are stable: the same person reads the same in every report.
    let names = crate::report::pii::Pseudonyms::of_mirror(&m.path).expect("key");
    let alias = names.pseudonym("Ada Lovelace");
    let trials = std::fs::read_to_string(out.dir.join("trials.csv")).expect("trials");
    let trends = std::fs::read_to_string(out.dir.join("compute_trends.csv")).expect("trends");
    assert!(
        trials.contains(&alias) && trends.contains(&alias),
        "{alias}"
    );
    // Organizations are not people.
    assert!(trials.contains("Org Ten"));
    assert!(trends.contains("Nine"));
}

#[test]
fn manifest_lists_every_file_with_rows_and_checksum() {
    let mut m = TestMirror::new();
    let run_id = small_world(&mut m);
    let out = report(&mut m, "2025-03-31", &[]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out.manifest).expect("manifest")).expect("parse");
    assert_eq!(manifest["as_of"], "2025-03-31");
    assert_eq!(manifest["run_id"], run_id);
    assert_eq!(manifest["observed_at"], "2025-03-31T06:00:00.000Z");
    assert!(
        manifest["generated_at"]
            .as_str()
            .is_some_and(|s| s.len() == 24)
    );
    let files = manifest["files"].as_array().expect("files");
    assert_eq!(files.len(), 14);
    for entry in files {
        let name = entry["file"].as_str().expect("file name");
        let bytes = std::fs::read(out.dir.join(name)).expect("listed file exists");
        assert_eq!(
            entry["sha256"].as_str(),
            Some(sha256_hex(&bytes).as_str()),
            "{name}"
        );
        assert_eq!(entry["bytes"].as_u64(), Some(bytes.len() as u64), "{name}");
        let rows = entry["rows"].as_u64().expect("rows");
        if name.ends_with(".json") {
            let parsed: serde_json::Value =
                serde_json::from_slice(&bytes).expect("json file parses");
            assert_eq!(
                parsed.as_array().map(|a| a.len() as u64),
                Some(rows),
                "{name}"
            );
        } else {
            let mut reader = csv::Reader::from_reader(bytes.as_slice());
            assert_eq!(reader.records().count() as u64, rows, "{name}");
        }
    }
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&out.dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty());
    // Typed JSON: numbers are numbers, unknowns are null.
    let entitlements: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.dir.join("entitlements.json")).expect("json"))
            .expect("parse");
    let users = entitlements
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| r["organization_id"] == 1 && r["metric"] == "users")
        })
        .expect("users row");
    assert_eq!(users["used"], 2);
    assert_eq!(users["limit"], 1);
    assert_eq!(users["pct_used"], 200);
    assert_eq!(users["status"], "exceeded");
    assert!(users["daily_rate"].is_null());
    let summary = crate::render::summary(&out);
    assert!(summary.contains("Org Ten"), "{summary}");
    assert!(
        summary.contains("Trials expiring or expired: 1 (0 expired, 1 expiring)"),
        "{summary}"
    );
    assert!(
        summary.contains("Limits at warning, at the limit or over: 1 in 1 organization(s)"),
        "{summary}"
    );
    assert!(summary.contains("Björk"), "{summary}");
}

#[test]
fn html_page_is_written_with_the_other_files() {
    let mut m = TestMirror::new();
    small_world(&mut m);
    m.close();
    let mut opts = m.options("2025-03-31", &[]);
    opts.formats = vec![
        crate::report::Format::Csv,
        crate::report::Format::Html,
        crate::report::Format::Html,
    ];
    let out = run(&opts).expect("run");
    // Seven CSV files and one page (HTML is one page per run, asked twice or not).
    assert_eq!(out.files.len(), 8);
    let page = out.files.last().expect("page");
    assert_eq!(page.path, out.dir.join("index.html"));
    let html = std::fs::read_to_string(&page.path).expect("page");
    let xml = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(&html, xml).expect("well-formed");
    assert_eq!(page.bytes, html.len() as u64);
    // The over-limit organization, in a person's units, linking its CSV.
    assert!(html.contains("Org Ten"), "names the organization");
    assert!(html.contains("href=\"entitlements.csv\""));
    assert!(html.contains(
        "data-key=\"organization_id=1;metric=users\" data-column=\"pct_used\" data-value=\"200\""
    ));
    // The trial expiring on 2025-04-05 is on the timeline and in the action table.
    assert!(html.contains("data-key=\"trial_id=5\" data-column=\"expiration_date\""));
    assert!(html.contains("Ada Lovelace"));
    let manifest = std::fs::read_to_string(&out.manifest).expect("manifest");
    assert!(manifest.contains("\"file\": \"index.html\""), "{manifest}");
}
