//! "Did you mean": the valid name a mistyped one most likely meant.

/// The candidate closest to `typed` (ignoring case) when it is close enough to be
/// the likely intent: a few letters' edits away (at most a third of the longer
/// name, and at least two are allowed), or a name that `typed` begins (`entit` for
/// `entitlements`). None when nothing is that close, or two candidates are equally
/// close: a guess between them would mislead.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    let typed_len = typed.chars().count();
    let mut best: Option<(usize, &'a str)> = None;
    let mut tied = false;
    for candidate in candidates {
        let lower = candidate.to_lowercase();
        let distance = if typed_len >= 3 && lower.starts_with(&typed) {
            1
        } else {
            edits(&typed, &lower)
        };
        let allowed = (typed_len.max(lower.chars().count()) / 3).max(2);
        if distance > allowed {
            continue;
        }
        match best {
            Some((d, _)) if distance > d => {}
            Some((d, _)) if distance == d => tied = true,
            _ => {
                best = Some((distance, candidate));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, name)| name)
}

/// Levenshtein distance: insertions, deletions and substitutions of characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORTS: [&str; 4] = ["entitlements", "expiring_trials", "compute_trends", "usage"];

    #[test]
    fn a_near_miss_or_a_beginning_finds_its_name() {
        assert_eq!(closest("entitlement", REPORTS), Some("entitlements"));
        assert_eq!(closest("Entitlemnts", REPORTS), Some("entitlements"));
        assert_eq!(closest("expiring-trials", REPORTS), Some("expiring_trials"));
        assert_eq!(closest("usag", REPORTS), Some("usage"));
        assert_eq!(closest("compute", REPORTS), Some("compute_trends"));
    }

    #[test]
    fn nothing_close_or_a_tie_suggests_nothing() {
        assert_eq!(closest("billing", REPORTS), None);
        assert_eq!(closest("x", REPORTS), None);
        assert_eq!(closest("ab", ["abc", "abd"]), None);
    }

    #[test]
    fn edits_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("same", "same"), 0);
    }
}
