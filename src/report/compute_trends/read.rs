//! The one large input of the report: every user's compute time per day over the
//! horizon (`crate::report::daily`), one range of user ids at a time, so what is held
//! at once is one chunk of users, not the table. The day's compute time is defined
//! here, once, whichever source the days come from.

use crate::mirror::daily_series::{COMPUTE, CPU, GPU, VALUES, Value};
use crate::report::Ctx;
use crate::report::daily::{self, IdRange, Source};
use crate::report::error::ReportError;

/// A day's `[cpu, gpu, compute]` seconds: CPU and GPU time as sent, and compute time
/// as sent, else CPU time plus 3 x GPU time (the platform weighs a GPU second as
/// three, `reports/README.md`).
pub(super) fn compute_seconds(values: &[Value; VALUES]) -> [Option<f64>; 3] {
    let [cpu, gpu, compute] = [CPU, GPU, COMPUTE].map(|i| values[i].number());
    let total = compute.or_else(|| Some(cpu? + 3.0 * gpu?));
    [cpu, gpu, total]
}

/// Reads the days of the users in `range` from `first_day` to T, handing each to
/// `record` as `(user, day, [cpu, gpu, compute])` ([`compute_seconds`]).
pub(super) fn read_chunk(
    ctx: &Ctx<'_>,
    source: Source,
    range: IdRange,
    first_day: i64,
    mut record: impl FnMut(i64, i64, [Option<f64>; 3]),
) -> Result<usize, ReportError> {
    daily::for_each_day(
        ctx,
        source,
        range,
        (first_day, ctx.today),
        |user, day, values| record(user, day, compute_seconds(values)),
    )
}
