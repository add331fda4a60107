//! `orgledger forget --user ID | --email ADDRESS`: erases one person's personal
//! data (`crate::mirror::forget`), never while a sync runs. `--dry-run` counts what
//! would go. Exit 0 when erased (or counted), 1 when refused or failed: a mirror
//! with something the erasure cannot look through is refused unless
//! `--leave-unchecked`, and then what was left is listed.

use crate::cli::Exit;
use crate::cli::args::ForgetArgs;
use crate::cli::settings::Settings;
use crate::mirror::forget::{self, Erased, Options, Target};
use crate::mirror::{self, lock};
use anyhow::Result;
use std::collections::BTreeMap;

/// Runs the command.
pub fn run(settings: &Settings, args: &ForgetArgs) -> Result<Exit> {
    let db = &settings.db;
    if mirror::path::inspect(db)? == mirror::path::Found::Nothing {
        return Err(mirror::MirrorError::Missing(db.clone()).into());
    }
    let target = match (&args.user, &args.email) {
        (Some(id), _) => Target::User(*id),
        (None, Some(address)) => Target::Email(address.clone()),
        // clap requires one of the two.
        (None, None) => {
            return Err(crate::cli::UsageError("give --user ID or --email ADDRESS".into()).into());
        }
    };
    // Held until the file is rewritten: a sync would write the person back.
    let _lock = lock::acquire(db)?;
    let mut conn = mirror::open_rw(db)?;
    let opts = Options {
        keep_redacted: args.keep_redacted,
        dry_run: args.dry_run,
        leave_unchecked: args.leave_unchecked,
    };
    let erased = forget::forget(&mut conn, db, &target, opts)?;
    let verb = if args.dry_run {
        "would erase"
    } else {
        "erased"
    };
    crate::outln!("user {}: {verb} {}", erased.user_id, summary(&erased));
    if !erased.unchecked.is_empty() {
        crate::outln!(
            "left unchecked, so they may still hold user {} ({}): {}",
            erased.user_id,
            erased.unchecked.len(),
            erased
                .unchecked
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if args.dry_run {
        crate::outln!("nothing was changed (dry run)");
    } else {
        crate::outln!(
            "{}: rewritten without it (no copy in free pages or the WAL); the erasure is recorded (`orgledger status`)",
            db.display()
        );
        if args.keep_redacted {
            crate::outln!(
                "later syncs store user {}'s personal fields redacted",
                erased.user_id
            );
        }
    }
    Ok(Exit::Ok)
}

/// What was erased, in words: rows by table, then the raw documents.
fn summary(erased: &Erased) -> String {
    let list = |counts: &BTreeMap<String, u64>| -> String {
        counts
            .iter()
            .map(|(table, n)| format!("{table} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !erased.rows.is_empty() {
        parts.push(format!(
            "the personal fields of their rows ({})",
            list(&erased.rows)
        ));
    }
    if !erased.texts.is_empty() {
        parts.push(format!(
            "their address or name in the text of other rows ({})",
            list(&erased.texts)
        ));
    }
    parts.push(format!("{} raw documents", erased.documents));
    parts.join("; ")
}
