//! The list documents (list-organizations, list-user-organizations, list-projects
//! and list-user-projects), read as streams: their elements are mapped while the
//! body arrives and the body is compressed as it passes, so a sync's memory does not
//! grow with the longest list a service returns.
//!
//! The project lists' rows go to the writer in partial documents of
//! [`PROJECT_BATCH`] projects as they are parsed (each project's rows whole in one
//! of them); the final document carries the raw body. A list that fails midway
//! has then written some projects' current rows: they are what the service said,
//! and a run with a failed list marks nothing removed.

use std::sync::{Arc, Mutex, PoisonError};

use crate::api::models::{IdOnly, OrganizationLink, OrganizationLinkList, Project};
use crate::api::{Client, Failure, Operation, Sink, operation as op};
use crate::mirror::raw::{Encoded, Scratch, StreamEncoder};
use crate::sync::rows::{self, DocRows};
use crate::sync::writer::{Doc, WriterMsg};
use tokio::sync::mpsc;

/// Projects in one partial document: about 200 KB of rows. The writer's queue
/// holds a few documents, so this is what a list adds to the sync's memory.
const PROJECT_BATCH: usize = 100;

/// Ids or links parsed before they are added to what the job keeps.
const SMALL_BATCH: usize = 1024;

/// What a list job keeps of its elements, shared with the parser's thread.
#[derive(Debug)]
struct Kept<E> {
    items: Vec<E>,
    rows: DocRows,
}

impl<E> Default for Kept<E> {
    fn default() -> Self {
        Kept {
            items: Vec::new(),
            rows: DocRows::default(),
        }
    }
}

type Shared<E> = Arc<Mutex<Kept<E>>>;

/// The kept items; a panic in a sink (the only way to poison the lock) cannot
/// leave them half-written, as each batch is added in one call.
fn take<E>(shared: &Shared<E>) -> Kept<E> {
    std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner))
}

/// A streamed list: its body encoded for storage, or the reason it is not.
pub struct Listed {
    /// The body, encoded as it passed (`None` when it could not be).
    pub raw: Option<Encoded>,
    /// Why the body is not stored, for `sync_errors`.
    pub problem: Option<String>,
    /// The server's clock when it answered.
    pub server_time: Option<chrono::DateTime<chrono::Utc>>,
}

/// Where a list is read from and where its body may spill.
struct Source<'a> {
    client: &'a Client,
    operation: Operation,
    path: &'a str,
    scratch: Option<&'a Scratch>,
}

async fn stream<T, F>(
    source: Source<'_>,
    field: &'static str,
    batch: usize,
    sink: Sink<F>,
) -> Result<Listed, Failure>
where
    T: serde::de::DeserializeOwned + 'static,
    F: FnMut(Vec<T>) + Send + 'static,
{
    let tap = || StreamEncoder::spilling_to(source.scratch.cloned());
    let streamed = source
        .client
        .stream_list_tapped::<T, F, StreamEncoder>(
            source.operation,
            source.path,
            (field, batch),
            sink,
            tap,
        )
        .await?;
    let (raw, problem) = match streamed.tap.finish() {
        Ok(raw) => (Some(raw), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(Listed {
        raw,
        problem,
        server_time: streamed.server_time,
    })
}

/// A list of which little is kept per element (an id, or an id and a name), read
/// without a thread of its own when it is small.
async fn kept_list<T, E>(
    source: Source<'_>,
    keep: fn(Vec<T>, &mut Vec<E>),
) -> Result<(Listed, Vec<E>), Failure>
where
    T: serde::de::DeserializeOwned + 'static,
    E: Send + 'static,
{
    let kept: Shared<E> = Shared::default();
    let sink = {
        let kept = Arc::clone(&kept);
        move |batch: Vec<T>| {
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            keep(batch, &mut kept.items);
        }
    };
    let sink = Sink {
        sink,
        may_block: false,
    };
    let listed = stream(source, "organizations", SMALL_BATCH, sink).await?;
    Ok((listed, take(&kept).items))
}

/// list-organizations for discovery: the organizations' ids.
pub async fn organization_ids(
    client: &Client,
    scratch: Option<&Scratch>,
) -> Result<(Listed, Vec<i64>), Failure> {
    let source = Source {
        client,
        operation: Operation::ListOrganizations,
        path: op::ORGANIZATIONS_PATH,
        scratch,
    };
    kept_list(source, |batch: Vec<IdOnly>, ids| {
        ids.extend(batch.iter().filter_map(|o| o.id))
    })
    .await
}

/// list-user-organizations for the mirror: the user's organization links (id and
/// name each; the rest of every organization stays in the raw body only).
pub async fn user_organizations(
    client: &Client,
    user: i64,
    scratch: Option<&Scratch>,
) -> Result<(Listed, DocRows), Failure> {
    let path = op::user_organizations_path(user);
    let source = Source {
        client,
        operation: Operation::ListUserOrganizations,
        path: &path,
        scratch,
    };
    let (listed, organizations) = kept_list(source, |batch: Vec<OrganizationLink>, links| {
        links.extend(batch)
    })
    .await?;
    let links = OrganizationLinkList {
        success: true,
        error: None,
        organizations,
    };
    Ok((listed, rows::user_organizations(user, &links)))
}

/// list-projects or list-user-projects: the listed projects' ids (with whether each
/// is soft-deleted) and what is left of their rows. With a writer, the rows go to it in partial
/// documents while the list is read, and only the problems are left.
pub async fn projects(
    client: &Client,
    operation: Operation,
    writer: Option<mpsc::Sender<WriterMsg>>,
    scratch: Option<&Scratch>,
) -> Result<(Listed, Vec<(i64, bool)>, DocRows), Failure> {
    let kept: Shared<(i64, bool)> = Shared::default();
    let sink = {
        let kept = Arc::clone(&kept);
        move |batch: Vec<Project>| {
            let ids = super::jobs::project_ids(&batch);
            let mut rows = rows::project_list(batch, operation.name());
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            kept.items.extend(ids);
            kept.rows.problems.append(&mut rows.problems);
            match &writer {
                Some(to_writer) => {
                    drop(kept);
                    let doc = Doc {
                        operation: operation.name(),
                        entity: "all".to_string(),
                        raw: None,
                        rows,
                    };
                    // A writer that stopped fails the run; the crawl notices it
                    // when it sends the list's last document.
                    let _ = to_writer.blocking_send(WriterMsg::Doc(Box::new(doc)));
                }
                None => kept.rows.sets.append(&mut rows.sets),
            }
        }
    };
    let path = if operation == Operation::ListUserProjects {
        op::USER_PROJECTS_PATH
    } else {
        op::PROJECTS_PATH
    };
    // It waits for room in the writer's queue.
    let sink = Sink {
        sink,
        may_block: true,
    };
    let source = Source {
        client,
        operation,
        path,
        scratch,
    };
    let listed = stream(source, "projects", PROJECT_BATCH, sink).await?;
    let Kept { items, mut rows } = take(&kept);
    // A retried list hands its elements on again, problems included.
    rows.problems.sort();
    rows.problems.dedup();
    Ok((listed, items, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_share_still_gives_what_it_kept() {
        let kept: Shared<i64> = Shared::default();
        kept.lock().expect("fresh").items.push(7);
        let poisoner = Arc::clone(&kept);
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lock();
            panic!("a sink failed");
        })
        .join();
        assert!(kept.is_poisoned());
        assert_eq!(take(&kept).items, vec![7]);
    }
}
