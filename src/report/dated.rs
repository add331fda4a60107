//! Values that change on days, read on chosen days: from a map of changes by day
//! number, the latest value or the running sum on or before each day (the
//! organization pages' figure history, storage_trends' dataset storage).

use std::collections::BTreeMap;

/// On each of `days`, the value of the latest change on or before it.
pub(crate) fn latest<T: Copy>(days: &[i64], changes: &BTreeMap<i64, T>) -> Vec<Option<T>> {
    let mut changes = changes.iter().peekable();
    let mut now = None;
    days.iter()
        .map(|&day| {
            while let Some((_, v)) = changes.next_if(|(d, _)| **d <= day) {
                now = Some(*v);
            }
            now
        })
        .collect()
}

/// On each of `days`, the sum of the changes on or before it.
pub(crate) fn running_sum(days: &[i64], changes: &BTreeMap<i64, f64>) -> Vec<f64> {
    let mut changes = changes.iter().peekable();
    let mut sum = 0.0;
    days.iter()
        .map(|&day| {
            while let Some((_, v)) = changes.next_if(|(d, _)| **d <= day) {
                sum += v;
            }
            sum
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_reads_the_changes_on_or_before_it_those_before_the_first_included() {
        let changes = BTreeMap::from([(1, 5.0), (4, -2.0), (6, 1.0), (9, 7.0)]);
        let days = [3, 4, 5, 8];
        assert_eq!(running_sum(&days, &changes), [5.0, 3.0, 3.0, 4.0]);
        assert_eq!(
            latest(&days, &changes),
            [Some(5.0), Some(-2.0), Some(-2.0), Some(1.0)]
        );
        assert_eq!(latest(&[0], &changes), [None]);
    }
}
