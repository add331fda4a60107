//! A tool, not a test that runs by default: the query plan and time of every
//! section of every shipped extract over a mirror the environment names.

use std::time::Instant;

/// Prints the query plan and time of every section of every shipped extract over the
/// mirror ORGLEDGER_EXPLAIN_DB as of ORGLEDGER_EXPLAIN_AS_OF (default today), with
/// the bundled SQLite; ORGLEDGER_EXPLAIN=report/part picks sections.
#[test]
#[ignore = "a tool: prints query plans of a mirror named by ORGLEDGER_EXPLAIN_DB"]
fn explain_shipped_queries() {
    let Some(path) = std::env::var_os("ORGLEDGER_EXPLAIN_DB") else {
        return;
    };
    let as_of = std::env::var("ORGLEDGER_EXPLAIN_AS_OF")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| chrono::Utc::now().date_naive());
    let conn = crate::mirror::open_ro(std::path::Path::new(&path)).expect("open");
    crate::report::install_views(&conn, as_of).expect("views");
    let params = crate::report::Ctx::params(as_of);
    let only = std::env::var("ORGLEDGER_EXPLAIN").unwrap_or_default();
    for name in crate::report::builtin_names() {
        let extract =
            crate::report::sql::builtin(crate::report::registry::find(name).expect("built in"));
        for (part, sql) in &extract.parts {
            if !only.is_empty() && !format!("{name}/{part}").contains(&only) {
                continue;
            }
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .expect("explain");
            for (n, v) in &params {
                if let Ok(Some(idx)) = stmt.parameter_index(n) {
                    stmt.raw_bind_parameter(idx, v).expect("bind");
                }
            }
            let mut rows = stmt.raw_query();
            eprintln!("== {name}/{part}");
            while let Some(row) = rows.next().expect("row") {
                let detail: String = row.get(3).expect("detail");
                eprintln!("   {detail}");
            }
            let started = Instant::now();
            let df = crate::report::frame::read_sql(&conn, &extract, part, sql, &params, &[])
                .expect("read");
            eprintln!("   -> {} rows in {:?}", df.height(), started.elapsed());
        }
    }
}
