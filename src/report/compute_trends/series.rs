//! Dense daily series: one [`Day`] per calendar day from an entity's first day to T,
//! so a window of `n` days is `n` entries and the entry `n` back is `n` days earlier.
//! Users' days are gathered one chunk of users at a time; white labels add their
//! users' days up as the chunks pass; organizations fill their levels forward.

use super::windows::Day;
use std::collections::HashMap;

/// The days a series may cover: from `first` to T.
#[derive(Clone, Copy)]
pub(super) struct Calendar {
    pub first: i64,
    pub today: i64,
}

impl Calendar {
    fn width(self) -> usize {
        usize::try_from(self.today - self.first + 1).unwrap_or(0)
    }

    /// Position of `day`, if it is in the calendar.
    fn offset(self, day: i64) -> Option<usize> {
        usize::try_from(day - self.first)
            .ok()
            .filter(|&i| i < self.width())
    }
}

/// The daily records of one chunk of users, in any order, merged per user and day
/// (records of the same day add up; an unknown value counts as nothing unless all
/// are unknown).
pub(super) struct UserDays {
    calendar: Calendar,
    slot_of: HashMap<i64, usize>,
    /// The user of the last record, and its slot.
    last: Option<(i64, usize)>,
    /// Per slot: the user, and the offset of its first record.
    users: Vec<(i64, usize)>,
    /// `width` days per slot; `None` where no record was read.
    days: Vec<Option<Day>>,
}

impl UserDays {
    pub(super) fn new(calendar: Calendar) -> Self {
        UserDays {
            calendar,
            slot_of: HashMap::new(),
            last: None,
            users: Vec::new(),
            days: Vec::new(),
        }
    }

    /// Adds one record; days outside the calendar are ignored.
    pub(super) fn add(&mut self, user: i64, day: i64, values: Day) {
        let Some(offset) = self.calendar.offset(day) else {
            return;
        };
        let width = self.calendar.width();
        // Records mostly come grouped by user: the last user's slot is the usual hit.
        let slot = match self.last {
            Some((last, slot)) if last == user => slot,
            _ => {
                let slot = *self.slot_of.entry(user).or_insert_with(|| {
                    self.users.push((user, offset));
                    self.days.resize(self.days.len() + width, None);
                    self.users.len() - 1
                });
                self.last = Some((user, slot));
                slot
            }
        };
        let first = &mut self.users[slot].1;
        *first = (*first).min(offset);
        let merged = &mut self.days[slot * width + offset];
        *merged = Some(match *merged {
            None => values,
            Some(old) => std::array::from_fn(|k| match (old[k], values[k]) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }),
        });
    }

    /// Each user's dense series (by id), then forgets them: a day without a record
    /// used nothing, and a series runs on in zeros to T (a user whose records stop
    /// before T used nothing since). `each` gets the user, its first day and its days.
    pub(super) fn drain(&mut self, mut each: impl FnMut(i64, i64, &[Day])) {
        let width = self.calendar.width();
        let mut order: Vec<usize> = (0..self.users.len()).collect();
        order.sort_unstable_by_key(|&slot| self.users[slot].0);
        let mut dense = Vec::with_capacity(width);
        for slot in order {
            let (user, first) = self.users[slot];
            dense.clear();
            dense.extend(
                self.days[slot * width + first..(slot + 1) * width]
                    .iter()
                    .map(|day| day.unwrap_or([Some(0.0); 3])),
            );
            each(user, self.calendar.first + first as i64, &dense);
        }
        self.slot_of.clear();
        self.last = None;
        self.users.clear();
        self.days.clear();
    }
}

/// A user's days as a white label's sum takes them: an unknown value counts as
/// nothing.
pub(super) fn known(days: &[Day]) -> Vec<[f64; 3]> {
    days.iter().map(|d| d.map(|v| v.unwrap_or(0.0))).collect()
}

/// White label series: the sum of their users' days (an unknown value counts as
/// nothing), from a white label's first day with a user record to T.
pub(super) struct WhitelabelDays {
    calendar: Calendar,
    /// The white labels, sorted.
    labels: Vec<i64>,
    /// `width` sums per white label.
    sums: Vec<[f64; 3]>,
    /// Offset of each white label's first day, once it has one.
    starts: Vec<Option<usize>>,
}

impl WhitelabelDays {
    pub(super) fn new(calendar: Calendar, mut labels: Vec<i64>) -> Self {
        labels.sort_unstable();
        labels.dedup();
        WhitelabelDays {
            calendar,
            sums: vec![[0.0; 3]; labels.len() * calendar.width()],
            starts: vec![None; labels.len()],
            labels,
        }
    }

    /// Adds a user's dense series (from `first` to T, an unknown value as 0) to its
    /// white label's.
    pub(super) fn add(&mut self, label: i64, first: i64, days: &[[f64; 3]]) {
        let (Ok(w), Some(offset)) = (
            self.labels.binary_search(&label),
            self.calendar.offset(first),
        ) else {
            return;
        };
        let width = self.calendar.width();
        let sums = &mut self.sums[w * width + offset..(w + 1) * width];
        for (sum, day) in sums.iter_mut().zip(days) {
            for (s, v) in sum.iter_mut().zip(day) {
                *s += v;
            }
        }
        self.starts[w] = Some(self.starts[w].map_or(offset, |s| s.min(offset)));
    }

    /// Adds another set of sums over the same white labels and calendar.
    pub(super) fn merge(&mut self, other: WhitelabelDays) {
        for (sum, more) in self.sums.iter_mut().zip(other.sums) {
            for (s, m) in sum.iter_mut().zip(more) {
                *s += m;
            }
        }
        for (start, more) in self.starts.iter_mut().zip(other.starts) {
            *start = match (*start, more) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }

    /// Each white label's dense series (by id): the white label, its first day, its days.
    pub(super) fn each(&self, mut each: impl FnMut(i64, i64, &[Day])) {
        let width = self.calendar.width();
        let mut dense = Vec::with_capacity(width);
        for (w, start) in self.starts.iter().enumerate() {
            let Some(first) = *start else { continue };
            dense.clear();
            dense.extend(
                self.sums[w * width + first..(w + 1) * width]
                    .iter()
                    .map(|sum| sum.map(Some)),
            );
            each(self.labels[w], self.calendar.first + first as i64, &dense);
        }
    }
}

/// An organization's dense series from its levels of compute used (`(day, level)`,
/// sorted by day, days of the calendar only): each day keeps the last level (a day
/// without a change), and its value is the level's growth since the day before (the
/// first day has none). CPU and GPU are unknown. Returns the first day and the days.
pub(super) fn growth(calendar: Calendar, levels: &[(i64, Option<f64>)]) -> Option<(i64, Vec<Day>)> {
    let (first, _) = *levels.first()?;
    let mut days: Vec<Day> = Vec::with_capacity(usize::try_from(calendar.today - first + 1).ok()?);
    let (mut level, mut next) = (None, levels.iter().peekable());
    let mut before: Option<Option<f64>> = None;
    for day in first..=calendar.today {
        while let Some(&&(d, l)) = next.peek() {
            if d > day {
                break;
            }
            level = l;
            next.next();
        }
        let value = match before {
            Some(Some(b)) => level.map(|l| l - b),
            _ => None,
        };
        days.push([None, None, value]);
        before = Some(level);
    }
    Some((first, days))
}
