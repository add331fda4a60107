//! The kinds of change and the `--kind` filter.

/// Every kind, in the order the HTML page and the docs list them.
pub const KINDS: &[&str] = &[
    "organization.added",
    "organization.removed",
    "limit.changed",
    "member.added",
    "member.removed",
    "member.role_changed",
    "project.added",
    "project.deleted",
    "project.removed",
    "project.budget_changed",
    "trial.started",
    "trial.upgraded",
    "trial.expired",
    "trial.deleted",
    "user.added",
    "user.removed",
    "user.suspended",
    FIELD_CHANGED,
];

/// Any other column's change (only with `--all-fields`).
pub const FIELD_CHANGED: &str = "field.changed";

/// Which kinds to keep: all, or those named (a kind, or an entity such as `trial`
/// for all of its kinds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindFilter {
    wanted: Vec<&'static str>,
}

impl KindFilter {
    /// Parses `--kind a,b,c`; an unknown name is an error listing the valid ones.
    pub fn parse(list: &str) -> Result<KindFilter, String> {
        let mut wanted = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let matched: Vec<&'static str> = KINDS
                .iter()
                .copied()
                .filter(|k| *k == name || k.split('.').next() == Some(name))
                .collect();
            if matched.is_empty() {
                return Err(format!(
                    "unknown kind `{name}`; valid kinds: {} (or an entity: organization, limit, member, project, trial, user, field)",
                    KINDS.join(", ")
                ));
            }
            for k in matched {
                if !wanted.contains(&k) {
                    wanted.push(k);
                }
            }
        }
        Ok(KindFilter { wanted })
    }

    /// Whether rows of `kind` are kept.
    pub fn keeps(&self, kind: &str) -> bool {
        self.wanted.is_empty() || self.wanted.contains(&kind)
    }

    /// Whether `field.changed` was asked for by name.
    pub fn names_field_changed(&self) -> bool {
        self.wanted.contains(&FIELD_CHANGED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_exactly_or_by_entity() {
        let f = KindFilter::parse("trial, limit.changed").unwrap_or_default();
        assert!(f.keeps("trial.upgraded") && f.keeps("trial.started"));
        assert!(f.keeps("limit.changed"));
        assert!(!f.keeps("member.added"));
        assert!(KindFilter::default().keeps("member.added"));
        let err = KindFilter::parse("trial.renewed").err().unwrap_or_default();
        assert!(
            err.contains("trial.renewed") && err.contains("trial.upgraded"),
            "{err}"
        );
    }
}
