//! The crawl's queue: documents found but not fetched yet, taken in [`Job::order`].
//!
//! When the project list of the `xlarge` world ends, its projects are queued at once
//! behind the users found so far: about 150,000 documents waiting. A `BTreeMap` of
//! whole jobs would take ~90 bytes a document (key, job and pass in half-full nodes),
//! 13 MB at the sync's peak. Here a first-pass job of one entity is one `i64` in a
//! min-heap of its kind (8 bytes, at most twice that while the heap's vector grows):
//! 2 MB. The heap's lane gives back the rest of the job. A heap
//! rather than a sorted vector because ids arrive a few at a time in any order (the
//! members of each organization) and leave smallest first; a sorted vector would
//! move half of itself for every id. The lists and second passes are few and stay
//! whole.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::Pass;
use super::jobs::Job;

/// The jobs of one kind that fit in one integer each (the kind gives the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Organization,
    WhitelabelUser { org: i64 },
    UserOrganizations,
    ProjectInfo,
}

impl Lane {
    /// The lane of a first-pass job and its integer there; `None` for jobs kept whole.
    fn of(job: Job) -> Option<(Lane, i64)> {
        match job {
            Job::Organization(id) => Some((Lane::Organization, id)),
            Job::WhitelabelUser { org, user } => Some((Lane::WhitelabelUser { org }, user)),
            Job::UserOrganizations(user) => Some((Lane::UserOrganizations, user)),
            // Whether the project is soft-deleted rides in the lowest bit, which keeps
            // the order by id; the few ids too large for that are kept whole.
            Job::ProjectInfo { project, deleted } => project
                .checked_mul(2)
                .map(|twice| (Lane::ProjectInfo, twice | i64::from(deleted))),
            Job::OrganizationList | Job::ProjectList(_) => None,
        }
    }

    /// The job [`Lane::of`] made `value` of.
    fn job(self, value: i64) -> Job {
        match self {
            Lane::Organization => Job::Organization(value),
            Lane::WhitelabelUser { org } => Job::WhitelabelUser { org, user: value },
            Lane::UserOrganizations => Job::UserOrganizations(value),
            Lane::ProjectInfo => Job::ProjectInfo {
                project: value >> 1,
                deleted: value & 1 == 1,
            },
        }
    }
}

/// A job taken from the queue, with how many copies of it (an id listed twice)
/// were dropped on the way.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Next {
    pub job: Job,
    pub pass: Pass,
    pub duplicates: usize,
}

/// Jobs waiting to start, smallest [`Job::order`] first.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// One min-heap per lane; a handful of lanes, so finding the smallest head
    /// looks at each.
    lanes: Vec<(Lane, BinaryHeap<Reverse<i64>>)>,
    /// Jobs kept whole: the project lists and second passes.
    whole: BTreeMap<(u8, i64), (Job, Pass)>,
}

impl Queue {
    /// Queues a job; false when it replaced the same job waiting whole (then it is
    /// not a new document). A job of a lane waiting twice is dropped when taken.
    pub fn push(&mut self, job: Job, pass: Pass) -> bool {
        match (pass, Lane::of(job)) {
            (Pass::First, Some((lane, value))) => {
                self.lane(lane).push(Reverse(value));
                true
            }
            _ => self.whole.insert(job.order(), (job, pass)).is_none(),
        }
    }

    fn lane(&mut self, lane: Lane) -> &mut BinaryHeap<Reverse<i64>> {
        let at = match self.lanes.iter().position(|(l, _)| *l == lane) {
            Some(at) => at,
            None => {
                self.lanes.push((lane, BinaryHeap::new()));
                self.lanes.len() - 1
            }
        };
        &mut self.lanes[at].1
    }

    /// Takes the job of the smallest order, dropping its other copies.
    pub fn pop(&mut self) -> Option<Next> {
        let order = self.first_order()?;
        let mut next = None;
        let mut copies = 0;
        if let Some(entry) = self.whole.first_entry()
            && *entry.key() == order
        {
            let (job, pass) = entry.remove();
            next = Some((job, pass));
            copies += 1;
        }
        for (lane, heap) in &mut self.lanes {
            while let Some(&Reverse(value)) = heap.peek()
                && lane.job(value).order() == order
            {
                heap.pop();
                next.get_or_insert((lane.job(value), Pass::First));
                copies += 1;
            }
        }
        next.map(|(job, pass)| Next {
            job,
            pass,
            duplicates: copies - 1,
        })
    }

    /// The smallest order waiting.
    fn first_order(&self) -> Option<(u8, i64)> {
        let heads = self
            .lanes
            .iter()
            .filter_map(|(lane, heap)| heap.peek().map(|&Reverse(v)| lane.job(v).order()));
        heads.chain(self.whole.keys().next().copied()).min()
    }

    /// Jobs waiting, copies included.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(|(_, heap)| heap.len()).sum::<usize>() + self.whole.len()
    }

    /// Drops every waiting job.
    pub fn clear(&mut self) {
        self.lanes.clear();
        self.whole.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Operation;

    fn drain(queue: &mut Queue) -> Vec<Next> {
        std::iter::from_fn(|| queue.pop()).collect()
    }

    #[test]
    fn jobs_leave_in_key_order_whatever_order_they_came_in() {
        let mut queue = Queue::default();
        let jobs = [
            Job::ProjectInfo {
                project: 9,
                deleted: true,
            },
            Job::UserOrganizations(4),
            Job::WhitelabelUser { org: 1, user: 7 },
            Job::ProjectList(Operation::ListUserProjects),
            Job::Organization(3),
            Job::WhitelabelUser { org: 1, user: 2 },
            Job::ProjectInfo {
                project: -5,
                deleted: false,
            },
            Job::Organization(-1),
            Job::ProjectInfo {
                project: i64::MAX,
                deleted: true,
            },
            Job::ProjectList(Operation::ListProjects),
        ];
        for job in jobs {
            assert!(queue.push(job, Pass::First));
        }
        assert_eq!(queue.len(), jobs.len());
        let taken: Vec<Job> = drain(&mut queue).into_iter().map(|n| n.job).collect();
        let mut expected = jobs.to_vec();
        expected.sort_by_key(|job| job.order());
        assert_eq!(taken, expected, "the deleted flag and every id come back");
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn an_id_listed_twice_is_taken_once() {
        let mut queue = Queue::default();
        for id in [5, 2, 5, 5, 1] {
            queue.push(Job::Organization(id), Pass::First);
        }
        let taken = drain(&mut queue);
        let ids: Vec<(Job, usize)> = taken.iter().map(|n| (n.job, n.duplicates)).collect();
        assert_eq!(
            ids,
            [
                (Job::Organization(1), 0),
                (Job::Organization(2), 0),
                (Job::Organization(5), 2)
            ]
        );
    }

    #[test]
    fn a_second_pass_keeps_its_attempts_and_its_place() {
        let mut queue = Queue::default();
        let second = Pass::Second { earlier: 3 };
        queue.push(Job::UserOrganizations(8), Pass::First);
        assert!(queue.push(Job::UserOrganizations(6), second));
        assert!(
            !queue.push(Job::UserOrganizations(6), second),
            "the same job again is not a new document"
        );
        queue.push(Job::Organization(9), Pass::First);
        let taken: Vec<(Job, Pass)> = drain(&mut queue)
            .into_iter()
            .map(|n| (n.job, n.pass))
            .collect();
        assert_eq!(
            taken,
            [
                (Job::Organization(9), Pass::First),
                (Job::UserOrganizations(6), second),
                (Job::UserOrganizations(8), Pass::First),
            ]
        );
    }

    #[test]
    fn many_ids_come_back_sorted_and_clear_empties() {
        let mut queue = Queue::default();
        // A permutation of 0..10_000 (7919 is prime to 10,000).
        for i in 0..10_000i64 {
            queue.push(
                Job::ProjectInfo {
                    project: i * 7919 % 10_000,
                    deleted: i % 3 == 0,
                },
                Pass::First,
            );
        }
        let projects: Vec<i64> = (0..5_000)
            .filter_map(|_| match queue.pop()?.job {
                Job::ProjectInfo { project, .. } => Some(project),
                _ => None,
            })
            .collect();
        assert_eq!(projects, (0..5_000).collect::<Vec<_>>());
        queue.clear();
        assert_eq!((queue.len(), queue.pop()), (0, None));
    }
}
