//! The single writer: a thread that owns the read-write connection and
//! commits writes in groups.
//!
//! It waits for one write, takes every other write already queued (up to
//! `max_batch`), runs each in its own savepoint of one transaction, commits
//! once, and only then answers each caller. While it waits on the disk, new
//! writes queue up and form the next group, so a busy server fsyncs once per
//! group instead of once per request.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;

/// How many writes may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 8192;

/// Hands the commit result to the caller.
type Delivery = Box<dyn FnOnce(Result<(), ApiError>) + Send>;

/// A queued write.
trait Job: Send {
    /// Runs in a savepoint; says whether to keep its changes, and how to
    /// answer once the group has committed.
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Delivery);
    /// Answers with an error without running.
    fn abandon(self: Box<Self>, error: ApiError);
}

struct TypedJob<T, F> {
    work: F,
    answer: oneshot::Sender<ApiResult<T>>,
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> ApiResult<T> + Send,
{
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Delivery) {
        let TypedJob { work, answer } = *self;
        let outcome = work(conn);
        let keep = outcome.is_ok();
        let deliver: Delivery = Box::new(move |committed| {
            // The caller may have gone away; nothing to do then.
            let _ = answer.send(committed.and(outcome));
        });
        (keep, deliver)
    }

    fn abandon(self: Box<Self>, error: ApiError) {
        let _ = self.answer.send(Err(error));
    }
}

/// A handle to the writer thread.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    queue: mpsc::Sender<Box<dyn Job>>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub(crate) fn start(
        conn: Connection,
        max_batch: usize,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Writer> {
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let thread = std::thread::Builder::new()
            .name("mandate-writer".into())
            .spawn(move || run(conn, jobs, max_batch.max(1), &metrics))?;
        Ok(Writer {
            queue,
            thread: Arc::new(Mutex::new(Some(thread))),
        })
    }

    /// Runs `work` in the writer and answers after its group commits.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        let (answer, answered) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(TypedJob { work, answer });
        self.queue
            .send(job)
            .await
            .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
        answered
            .await
            .map_err(|_| ApiError::internal("a write panicked in the writer"))?
    }

    /// Closes the queue and waits for queued writes to commit and the thread
    /// to close the database.
    pub(crate) fn close(self) {
        let Writer { queue, thread } = self;
        drop(queue);
        let handle = thread.lock().ok().and_then(|mut slot| slot.take());
        if handle.is_some_and(|handle| handle.join().is_err()) {
            tracing::error!("the writer thread panicked");
        }
    }
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs one job in its own savepoint; a job that fails or panics leaves no
/// trace in the transaction.
fn run_job(conn: &Connection, job: Box<dyn Job>) -> Result<Option<Delivery>, rusqlite::Error> {
    exec(conn, "SAVEPOINT job")?;
    match catch_unwind(AssertUnwindSafe(|| job.run(conn))) {
        Ok((true, deliver)) => {
            exec(conn, "RELEASE job")?;
            Ok(Some(deliver))
        }
        Ok((false, deliver)) => {
            exec(conn, "ROLLBACK TO job")?;
            exec(conn, "RELEASE job")?;
            Ok(Some(deliver))
        }
        Err(_) => {
            tracing::error!("a write panicked; its changes were rolled back");
            exec(conn, "ROLLBACK TO job")?;
            exec(conn, "RELEASE job")?;
            Ok(None)
        }
    }
}

/// Runs a group in one transaction. Returns how to answer each job and the
/// commit result they all share.
fn commit_group(conn: &Connection, jobs: Vec<Box<dyn Job>>) -> (Vec<Delivery>, ApiResult<()>) {
    let mut deliveries = Vec::with_capacity(jobs.len());
    let mut pending = jobs.into_iter();
    let mut failure = exec(conn, "BEGIN IMMEDIATE").err();
    if failure.is_none() {
        for job in pending.by_ref() {
            match run_job(conn, job) {
                Ok(Some(deliver)) => deliveries.push(deliver),
                Ok(None) => {}
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
    }
    if failure.is_none() {
        failure = exec(conn, "COMMIT").err();
    }
    let Some(error) = failure else {
        return (deliveries, Ok(()));
    };
    // Nothing of this group is kept; every caller hears of it.
    let _ = exec(conn, "ROLLBACK");
    let error = ApiError::from(error);
    for job in pending {
        job.abandon(error.clone());
    }
    (deliveries, Err(error))
}

fn run(
    conn: Connection,
    mut jobs: mpsc::Receiver<Box<dyn Job>>,
    max_batch: usize,
    metrics: &Metrics,
) {
    while let Some(first) = jobs.blocking_recv() {
        let mut group = vec![first];
        while group.len() < max_batch {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        metrics.observe_batch(group.len());
        let (deliveries, committed) = commit_group(&conn, group);
        for deliver in deliveries {
            deliver(committed.clone());
        }
    }
    if let Err((_, error)) = conn.close() {
        tracing::error!(%error, "closing the database failed");
    }
}
