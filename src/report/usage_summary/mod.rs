//! `usage_summary`: per organization and per white label, over the last 7 and 30
//! days: people and projects added and removed, storage growth, active users, and
//! snapshot counts at the as-of date (stale projects, pending users, users without
//! MFA, suspended users).

mod storage;

use crate::report::Ctx;
use crate::report::attention::entity;
use crate::report::batches::Emit;
use crate::report::completeness::{Completeness, Source, Sources};
use crate::report::declaration::{Report, ReportName};
use crate::report::error::{ReportError, pl};
use crate::report::frame::Kind;
use crate::report::tables::{Table, TableError};
use polars::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The windows, in days.
pub const WINDOWS: [i64; 2] = [7, 30];

/// The report's name.
pub const NAME: ReportName = ReportName::new("usage_summary");

/// The report.
pub(crate) const REPORT: Report = Report::new(
    NAME,
    "people, projects and storage per organization and white label, last 7 and 30 days",
    include_str!("../../../queries/usage_summary.sql"),
    COLUMNS,
    build,
)
.complete(row_sources, describe)
.cost(1);

/// Output columns, in order.
pub const COLUMNS: &[&str] = &[
    "scope",
    "id",
    "name",
    "window_days",
    "users_added",
    "users_deleted",
    "projects_added",
    "projects_deleted",
    "storage_growth_bytes",
    "active_users",
    "stale_projects",
    "pending_users",
    "users_without_mfa",
    "suspended_users",
];

/// The extract's sections, with the columns each is read with.
const SCOPES: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("id", Kind::Int),
    ("name", Kind::Text),
];
const PEOPLE: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("scope_id", Kind::Int),
    ("user_id", Kind::Int),
    ("joined", Kind::Day),
    ("last_seen", Kind::Day),
    ("pending", Kind::Int),
    ("mfa_configured", Kind::Int),
    ("suspended", Kind::Int),
];
const DEPARTED: &[(&str, Kind)] = &[
    ("scope", Kind::Text),
    ("scope_id", Kind::Int),
    ("user_id", Kind::Int),
    ("removed_at", Kind::Day),
];
const PROJECTS: &[(&str, Kind)] = &[
    ("project_id", Kind::Int),
    ("organization_id", Kind::Int),
    ("whitelabel_id", Kind::Int),
    ("created", Kind::Day),
    ("deleted_date", Kind::Day),
    ("last_accessed", Kind::Day),
    ("removed_at", Kind::Day),
];
/// The `storage` column that sums a user's deltas over the last `days` days.
fn storage_column(days: i64) -> String {
    format!("storage_delta_{days}d")
}

/// The scope kinds, as the extract names them; a row of another kind has no scope
/// in the list and counts nowhere.
const KINDS: [&str; 2] = ["organization", "whitelabel"];

/// A scope: its kind (an index of [`KINDS`]) and id.
type Scope = (usize, i64);

fn scope_of(kind: Option<&str>, id: Option<i64>) -> Option<Scope> {
    Some((KINDS.iter().position(|k| Some(*k) == kind)?, id?))
}

/// One scope's figures in one window.
#[derive(Default, Clone, Copy)]
struct Tally {
    users_added: i64,
    users_deleted: i64,
    projects_added: i64,
    projects_deleted: i64,
    active_users: i64,
    stale_projects: i64,
    pending_users: i64,
    users_without_mfa: i64,
    suspended_users: i64,
    /// Unknown while no member has a storage figure in the window.
    storage_growth_bytes: Option<f64>,
}

/// Every scope's figures, one [`Tally`] per window of [`WINDOWS`].
type Tallies = HashMap<Scope, [Tally; WINDOWS.len()]>;

/// The last `days` days up to the as-of date, both ends included.
fn within(day: Option<i64>, today: i64, days: i64) -> bool {
    day.is_some_and(|d| d > today - days && d <= today)
}

/// Adds 1 to `n` when `hit`.
fn count(n: &mut i64, hit: bool) {
    *n += i64::from(hit);
}

fn build(ctx: &Ctx<'_>, emit: &mut Emit<'_>) -> Result<(), ReportError> {
    let mut tallies = Tallies::new();
    let members = count_people(ctx, &mut tallies)?;
    count_departures(ctx, &mut tallies)?;
    count_projects(ctx, &mut tallies)?;
    add_storage(ctx, &members, &mut tallies)?;
    let scopes = ctx.read("scopes", SCOPES)?;
    emit(rows(ctx.report(), &scopes, &tallies)?)
}

/// Members who joined or were active in each window, and the snapshot counts.
/// Returns the members of each scope, once each (in scope order, so the storage
/// sums add up in one order, run after run).
fn count_people(
    ctx: &Ctx<'_>,
    tallies: &mut Tallies,
) -> Result<BTreeSet<(Scope, i64)>, ReportError> {
    let (report, today) = (ctx.report(), ctx.today);
    let mut members = BTreeSet::new();
    ctx.read_batches("people", PEOPLE, &mut |df| {
        let t = Table::new(report, &df);
        let (kind, id, user) = (t.text("scope")?, t.int("scope_id")?, t.int("user_id")?);
        let (joined, seen) = (t.int("joined")?, t.int("last_seen")?);
        let (pending, mfa, suspended) = (
            t.int("pending")?,
            t.int("mfa_configured")?,
            t.int("suspended")?,
        );
        for r in 0..t.height() {
            let Some(scope) = scope_of(kind[r], id[r]) else {
                continue;
            };
            if let Some(user) = user[r] {
                members.insert((scope, user));
            }
            let tally = tallies.entry(scope).or_default();
            for (w, days) in tally.iter_mut().zip(WINDOWS) {
                count(&mut w.users_added, within(joined[r], today, days));
                count(&mut w.active_users, within(seen[r], today, days));
                count(&mut w.pending_users, pending[r] == Some(1));
                count(&mut w.users_without_mfa, mfa[r] == Some(0));
                count(&mut w.suspended_users, suspended[r] == Some(1));
            }
        }
        Ok(())
    })?;
    Ok(members)
}

/// People who left each scope in each window, each person once.
fn count_departures(ctx: &Ctx<'_>, tallies: &mut Tallies) -> Result<(), ReportError> {
    let (report, today) = (ctx.report(), ctx.today);
    let df = ctx.read("departed", DEPARTED)?;
    let t = Table::new(report, &df);
    let (kind, id, user, removed) = (
        t.text("scope")?,
        t.int("scope_id")?,
        t.int("user_id")?,
        t.int("removed_at")?,
    );
    let mut gone: HashSet<(Scope, usize, Option<i64>)> = HashSet::new();
    for r in 0..t.height() {
        let Some(scope) = scope_of(kind[r], id[r]) else {
            continue;
        };
        for (w, days) in WINDOWS.into_iter().enumerate() {
            if within(removed[r], today, days) && gone.insert((scope, w, user[r])) {
                tallies.entry(scope).or_default()[w].users_deleted += 1;
            }
        }
    }
    Ok(())
}

/// Projects created and deleted in each window, and live projects not accessed
/// since the stale threshold; each project counts in its organization and in its
/// white label.
fn count_projects(ctx: &Ctx<'_>, tallies: &mut Tallies) -> Result<(), ReportError> {
    let (report, today) = (ctx.report(), ctx.today);
    let stale_before = today - ctx.thresholds.stale_days;
    ctx.read_batches("projects", PROJECTS, &mut |df| {
        let t = Table::new(report, &df);
        let (org, wl) = (t.int("organization_id")?, t.int("whitelabel_id")?);
        let (created, deleted) = (t.int("created")?, t.int("deleted_date")?);
        let (accessed, removed) = (t.int("last_accessed")?, t.int("removed_at")?);
        for r in 0..t.height() {
            let live = removed[r].is_none() && deleted[r].is_none_or(|d| d > today);
            let stale = live && accessed[r].is_some_and(|a| a < stale_before);
            // (added, deleted) in each window, the same in both of its scopes.
            let facts = WINDOWS.map(|days| {
                let gone = within(deleted[r], today, days)
                    || (deleted[r].is_none() && within(removed[r], today, days));
                (within(created[r], today, days), gone)
            });
            for scope in [
                scope_of(Some(KINDS[0]), org[r]),
                scope_of(Some(KINDS[1]), wl[r]),
            ] {
                let Some(scope) = scope else { continue };
                let tally = tallies.entry(scope).or_default();
                for (w, (added, gone)) in tally.iter_mut().zip(facts) {
                    count(&mut w.projects_added, added);
                    count(&mut w.projects_deleted, gone);
                    count(&mut w.stale_projects, stale);
                }
            }
        }
        Ok(())
    })
}

/// The members' storage deltas in each window, summed per scope (members without
/// daily metrics in the window add nothing).
fn add_storage(
    ctx: &Ctx<'_>,
    members: &BTreeSet<(Scope, i64)>,
    tallies: &mut Tallies,
) -> Result<(), ReportError> {
    let df = storage::read(ctx)?;
    let t = Table::new(ctx.report(), &df);
    let users = t.int("user_id")?;
    let deltas = WINDOWS
        .iter()
        .map(|&w| t.float(&storage_column(w)))
        .collect::<Result<Vec<_>, _>>()?;
    let row_of: HashMap<i64, usize> = users
        .iter()
        .enumerate()
        .filter_map(|(r, u)| Some(((*u)?, r)))
        .collect();
    for &(scope, user) in members {
        let Some(&r) = row_of.get(&user) else {
            continue;
        };
        let tally = tallies.entry(scope).or_default();
        for (w, delta) in tally.iter_mut().zip(&deltas) {
            if let Some(delta) = delta[r] {
                w.storage_growth_bytes = Some(w.storage_growth_bytes.unwrap_or(0.0) + delta);
            }
        }
    }
    Ok(())
}

/// A count column: its name and its figure in a [`Tally`].
type Count = (&'static str, fn(&Tally) -> i64);

/// The count columns, in output order.
const COUNTS: &[Count] = &[
    ("users_added", |t| t.users_added),
    ("users_deleted", |t| t.users_deleted),
    ("projects_added", |t| t.projects_added),
    ("projects_deleted", |t| t.projects_deleted),
    ("active_users", |t| t.active_users),
    ("stale_projects", |t| t.stale_projects),
    ("pending_users", |t| t.pending_users),
    ("users_without_mfa", |t| t.users_without_mfa),
    ("suspended_users", |t| t.suspended_users),
];

/// One row per scope of the list and window, by scope, id and window. The counts
/// are 0 when nothing matched; the storage growth is unknown when no member has
/// daily metrics in the window.
fn rows(report: &str, scopes: &DataFrame, tallies: &Tallies) -> Result<DataFrame, ReportError> {
    let t = Table::new(report, scopes);
    let (kind, id, name) = (t.text("scope")?, t.int("id")?, t.text("name")?);
    let mut order: Vec<usize> = (0..t.height()).collect();
    order.sort_by(|&a, &b| (kind[a], id[a]).cmp(&(kind[b], id[b])));
    // Each output row: the scope's row of the list, and the window's index.
    let out: Vec<(usize, usize)> = order
        .into_iter()
        .flat_map(|r| (0..WINDOWS.len()).map(move |w| (r, w)))
        .collect();
    let none = [Tally::default(); WINDOWS.len()];
    let figures: Vec<Tally> = out
        .iter()
        .map(|&(r, w)| {
            let tally = scope_of(kind[r], id[r]).and_then(|s| tallies.get(&s));
            tally.unwrap_or(&none)[w]
        })
        .collect();
    let mut columns = vec![
        Column::new(
            "scope".into(),
            out.iter().map(|&(r, _)| kind[r]).collect::<Vec<_>>(),
        ),
        Column::new(
            "id".into(),
            out.iter().map(|&(r, _)| id[r]).collect::<Vec<_>>(),
        ),
        Column::new(
            "name".into(),
            out.iter().map(|&(r, _)| name[r]).collect::<Vec<_>>(),
        ),
        Column::new(
            "window_days".into(),
            out.iter().map(|&(_, w)| WINDOWS[w]).collect::<Vec<_>>(),
        ),
    ];
    for &(column, value) in COUNTS {
        let values: Vec<i64> = figures.iter().map(value).collect();
        columns.push(Column::new(column.into(), values));
    }
    let storage: Vec<Option<f64>> = figures.iter().map(|t| t.storage_growth_bytes).collect();
    columns.push(Column::new("storage_growth_bytes".into(), storage));
    DataFrame::new(out.len(), columns).map_err(pl(report, "counting per scope"))
}

/// The completeness of each row (`crate::report::completeness`): an organization's
/// document, or the white label's users.
pub(crate) fn row_sources<'a>(
    _: &'a Completeness,
    df: &'a DataFrame,
) -> Result<Sources<'a>, TableError> {
    let table = Table::new(NAME.as_str(), df);
    let (scope, id) = (table.text("scope")?, table.int("id")?);
    Ok(Box::new((0..df.height()).map(move |r| {
        Some(match scope[r] {
            Some("organization") => Source::Document(id[r]),
            _ => Source::Whitelabel,
        })
    })))
}

/// An incomplete row in the attention list: its organization or white label.
fn describe<'a>(df: &'a DataFrame) -> Result<Box<dyn Fn(usize) -> String + 'a>, TableError> {
    let table = Table::new(NAME.as_str(), df);
    let (scope, id, name) = (table.text("scope")?, table.int("id")?, table.text("name")?);
    Ok(Box::new(move |r| {
        entity(scope[r].unwrap_or("?"), id[r], name[r])
    }))
}

#[cfg(test)]
mod tests {
    use crate::mirror::spec::*;
    use crate::report::testkit::*;
    use polars::prelude::DataFrame;
    use rusqlite::types::Value;

    /// Members of organization 1: (user, added, last seen, pending, MFA configured).
    const MEMBERS: [(i64, &str, &str, i64, i64); 4] = [
        (
            1,
            "2025-03-28T10:00:00.000Z",
            "2025-03-30T10:00:00.000Z",
            0,
            1,
        ),
        (
            2,
            "2025-03-10T10:00:00.000Z",
            "2025-03-20T10:00:00.000Z",
            1,
            0,
        ),
        (
            3,
            "2024-12-01T10:00:00.000Z",
            "2024-12-31T10:00:00.000Z",
            0,
            0,
        ),
        (
            4,
            "2024-01-01T10:00:00.000Z",
            "2025-03-01T10:00:00.000Z",
            0,
            1,
        ),
    ];

    /// Users of white label 9: (id, created, last seen, pending, MFA, suspended).
    const USERS_OF_WL: [(i64, &str, &str, i64, i64, i64); 4] = [
        (
            1,
            "2025-03-29T08:00:00.000Z",
            "2025-03-30T10:00:00.000Z",
            0,
            1,
            0,
        ),
        (
            2,
            "2025-02-01T08:00:00.000Z",
            "2025-03-20T10:00:00.000Z",
            1,
            0,
            1,
        ),
        (
            3,
            "2025-03-05T08:00:00.000Z",
            "2024-12-31T10:00:00.000Z",
            0,
            0,
            0,
        ),
        (
            4,
            "2024-01-01T08:00:00.000Z",
            "2025-03-01T10:00:00.000Z",
            0,
            1,
            0,
        ),
    ];

    /// Projects of organization 1 and white label 9: (id, created, last accessed,
    /// deleted).
    const PROJECTS_OF_ORG: [(i64, &str, &str, Option<&str>); 5] = [
        (
            1,
            "2025-03-29T00:00:00.000Z",
            "2025-03-30T00:00:00.000Z",
            None,
        ),
        (
            2,
            "2025-03-15T00:00:00.000Z",
            "2024-01-01T00:00:00.000Z",
            Some("2025-03-30T00:00:00.000Z"),
        ),
        (
            3,
            "2024-06-01T00:00:00.000Z",
            "2024-12-01T00:00:00.000Z",
            None,
        ),
        (
            4,
            "2024-06-01T00:00:00.000Z",
            "2024-12-31T00:00:00.000Z",
            None,
        ),
        (
            5,
            "2024-06-01T00:00:00.000Z",
            "2025-03-01T00:00:00.000Z",
            None,
        ),
    ];

    /// One sync that sees the first `members` members, `users` users and `projects`
    /// projects (the others are removed).
    fn write(w: &Run<'_>, members: usize, users: usize, projects: usize) {
        w.put(
            &ORGANIZATIONS,
            &[
                ("id", i(1)),
                ("name", t("One")),
                ("whitelabel_id", i(9)),
                ("whitelabel_name", t("Nine")),
            ],
        );
        let rows: Vec<Vec<(&str, Value)>> = MEMBERS[..members]
            .iter()
            .map(|&(user, added, seen, pending, mfa)| {
                vec![
                    ("organization_id", i(1)),
                    ("user_id", i(user)),
                    ("added", t(added)),
                    ("last_seen", t(seen)),
                    ("pending", i(pending)),
                    ("mfa_configured", i(mfa)),
                ]
            })
            .collect();
        w.scope_rows(&ORGANIZATION_MEMBERS, &[i(1)], &rows);
        for &(id, created, seen, pending, mfa, suspended) in &USERS_OF_WL[..users] {
            w.put(
                &USERS,
                &[
                    ("id", i(id)),
                    ("created", t(created)),
                    ("last_seen", t(seen)),
                    ("pending", i(pending)),
                    ("mfa_configured", i(mfa)),
                    ("suspended", i(suspended)),
                    ("whitelabel_organization_id", i(1)),
                ],
            );
        }
        keep_first(w, &USERS, users);
        for &(id, created, accessed, deleted) in &PROJECTS_OF_ORG[..projects] {
            w.put(
                &PROJECTS,
                &[
                    ("id", i(id)),
                    ("owner_organization_id", i(1)),
                    ("whitelabel_id", i(9)),
                    ("created", t(created)),
                    ("last_accessed", t(accessed)),
                    ("deleted_date", deleted.map_or(Value::Null, t)),
                ],
            );
        }
        keep_first(w, &PROJECTS, projects);
    }

    /// Removes every row of `table` but ids 1 to `n`.
    fn keep_first(w: &Run<'_>, table: &'static TableSpec, n: usize) {
        let kept: Vec<Vec<Value>> = (1..=n as i64).map(|id| vec![i(id)]).collect();
        let kept: Vec<&[Value]> = kept.iter().map(|v| v.as_slice()).collect();
        w.remove_unseen(table, &kept);
    }

    /// Daily storage records: (user, day, bytes added, bytes deleted).
    fn write_storage(w: &Run<'_>, user: i64, days: &[(&str, i64, i64)]) {
        let rows: Vec<Vec<(&str, Value)>> = days
            .iter()
            .map(|&(day, added, deleted)| {
                vec![
                    ("user_id", i(user)),
                    ("day", t(day)),
                    ("storage_bytes_added", i(added)),
                    ("storage_bytes_deleted", i(deleted)),
                ]
            })
            .collect();
        w.scope_rows(&DAILY_METRICS, &[i(user)], &rows);
    }

    /// The usage summary on 2025-03-31 of organization 1 in white label 9. The first
    /// sync knows user 4 and project 5; the second (2025-03-27) no longer sees them.
    /// Last 7 days = 2025-03-25 ..= 2025-03-31; 30 days = 2025-03-02 ..= 2025-03-31.
    fn usage_summary() -> DataFrame {
        let mut m = TestMirror::new();
        m.run("2025-03-20T06:00:00.000Z", |w| write(w, 4, 4, 5));
        m.run("2025-03-27T06:00:00.000Z", |w| {
            write(w, 3, 3, 4);
            write_storage(
                w,
                1,
                &[
                    ("2025-03-30", 1000, 100),
                    ("2025-03-20", 500, 0),
                    ("2025-02-20", 7000, 0),
                ],
            );
            write_storage(w, 2, &[("2025-03-31", 0, 300)]);
        });
        let mut out = m.report("2025-03-31", &["usage_summary"]);
        out.frames
            .remove("usage_summary")
            .expect("the usage_summary frame")
    }

    /// Asserts `column` in the rows of organization 1 and white label 9, 7 and 30 days.
    fn expect(df: &DataFrame, column: &str, [org_7, org_30, wl_7, wl_30]: [f64; 4]) {
        for (scope, id, window, want) in [
            ("organization", "1", "7", org_7),
            ("organization", "1", "30", org_30),
            ("whitelabel", "9", "7", wl_7),
            ("whitelabel", "9", "30", wl_30),
        ] {
            let r = find(df, &[("scope", scope), ("id", id), ("window_days", window)]);
            assert_num(df, r, column, Some(want));
        }
    }

    #[test]
    fn one_row_per_scope_and_window_named_after_its_scope() {
        let df = usage_summary();
        assert_eq!(
            df.height(),
            4,
            "organization 1 and white label 9, two windows each"
        );
        for (scope, id, name) in [("organization", "1", "One"), ("whitelabel", "9", "Nine")] {
            let r = find(&df, &[("scope", scope), ("id", id), ("window_days", "7")]);
            assert_eq!(txt(&df, r, "name").as_deref(), Some(name));
        }
    }

    #[test]
    fn people_added_removed_and_active_count_within_the_window() {
        let df = usage_summary();
        // Organization: user 1 added 03-28, user 2 03-10. White label: user 1 created
        // 03-29, user 3 03-05; user 2 was created in February.
        expect(&df, "users_added", [1.0, 2.0, 1.0, 2.0]);
        // User 4, removed 03-27.
        expect(&df, "users_deleted", [1.0; 4]);
        // User 1 (seen 03-30); user 2 (seen 03-20) in 30 days.
        expect(&df, "active_users", [1.0, 2.0, 1.0, 2.0]);
    }

    #[test]
    fn projects_added_deleted_and_stale_count_within_the_window() {
        let df = usage_summary();
        // Project 1 (03-29); project 2 (03-15) in 30 days.
        expect(&df, "projects_added", [1.0, 2.0, 1.0, 2.0]);
        // Project 2 (deleted 03-30), project 5 (removed 03-27).
        expect(&df, "projects_deleted", [2.0; 4]);
        // Project 3 (accessed 12-01 < 2024-12-31 = T − 90); project 4 is exactly 90 days.
        expect(&df, "stale_projects", [1.0; 4]);
    }

    #[test]
    fn storage_growth_sums_the_members_daily_deltas_within_the_window() {
        // 7 days: user 1: 1000 − 100; user 2: −300. 30 days: 900 + 500 − 300 (02-20 is
        // outside).
        expect(
            &usage_summary(),
            "storage_growth_bytes",
            [600.0, 1100.0, 600.0, 1100.0],
        );
    }

    #[test]
    fn snapshot_counts_are_the_same_in_every_window() {
        let df = usage_summary();
        // User 2.
        expect(&df, "pending_users", [1.0; 4]);
        // Users 2 and 3.
        expect(&df, "users_without_mfa", [2.0; 4]);
        // User 2.
        expect(&df, "suspended_users", [1.0; 4]);
    }
}
