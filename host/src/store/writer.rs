//! The single writer: a thread that owns the read-write connection and
//! commits writes in groups.
//!
//! It waits for one write, takes every other write already queued (up to
//! `max_batch`), runs them all in one transaction, commits once, and only
//! then answers each caller. While it waits on the disk, new writes queue up
//! and form the next group, so a busy server fsyncs once per group instead of
//! once per request.
//!
//! Writes check before they change anything, so a write that fails has
//! usually changed nothing and the rest of its group commits without it. A
//! write that fails (or panics) after changing something poisons its group:
//! the transaction rolls back and every caller of the group is told to
//! retry. That happens only when storage itself fails, which would fail the
//! commit anyway — and it spares every write a savepoint of its own.

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
    /// Runs in the group's transaction; says whether it succeeded, and how to
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
        hooks: Hooks,
    ) -> anyhow::Result<Writer> {
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let thread = std::thread::Builder::new()
            .name("mandate-writer".into())
            .spawn(move || run(conn, jobs, max_batch.max(1), &metrics, hooks))?;
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

/// What running one write did to the group.
enum Ran {
    /// Succeeded, or failed without changing anything: answer after commit.
    Answer(Delivery),
    /// Panicked without changing anything: its caller hears of the panic.
    Panicked,
    /// Changed something and then failed or panicked: the group must roll
    /// back.
    Poisoned(Option<Delivery>),
}

/// Hooks around a group's commit: work deferred by the writes of the group
/// (counters kept in memory and written once), and its undoing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hooks {
    /// Runs just before `COMMIT`, in the transaction.
    pub(crate) before_commit: fn(&Connection) -> ApiResult<()>,
    /// Runs after a group was rolled back.
    pub(crate) after_rollback: fn(),
}

fn run_job(conn: &Connection, job: Box<dyn Job>) -> Ran {
    let before = conn.total_changes();
    let outcome = catch_unwind(AssertUnwindSafe(|| job.run(conn)));
    let untouched = conn.total_changes() == before;
    match outcome {
        Ok((true, deliver)) => Ran::Answer(deliver),
        Ok((false, deliver)) if untouched => Ran::Answer(deliver),
        Ok((false, deliver)) => Ran::Poisoned(Some(deliver)),
        Err(_) if untouched => {
            tracing::error!("a write panicked before changing anything");
            Ran::Panicked
        }
        Err(_) => {
            tracing::error!("a write panicked after changing something; its group rolls back");
            Ran::Poisoned(None)
        }
    }
}

/// Runs a group in one transaction. Returns how to answer each job and the
/// commit result they all share.
fn commit_group(
    conn: &Connection,
    jobs: Vec<Box<dyn Job>>,
    hooks: Hooks,
) -> (Vec<Delivery>, ApiResult<()>) {
    let mut deliveries = Vec::with_capacity(jobs.len());
    let mut pending = jobs.into_iter();
    let mut failure = exec(conn, "BEGIN IMMEDIATE").err().map(ApiError::from);
    if failure.is_none() {
        for job in pending.by_ref() {
            match run_job(conn, job) {
                Ran::Answer(deliver) => deliveries.push(deliver),
                Ran::Panicked => {}
                Ran::Poisoned(deliver) => {
                    deliveries.extend(deliver);
                    failure = Some(ApiError::unavailable(
                        "a write of the same group failed midway; nothing of the group was stored; retry",
                    ));
                    break;
                }
            }
        }
    }
    if failure.is_none() {
        failure = (hooks.before_commit)(conn).err();
    }
    if failure.is_none() {
        failure = exec(conn, "COMMIT").err().map(ApiError::from);
    }
    let Some(error) = failure else {
        return (deliveries, Ok(()));
    };
    // Nothing of this group is kept; every caller hears of it.
    let _ = exec(conn, "ROLLBACK");
    (hooks.after_rollback)();
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
    hooks: Hooks,
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
        let (deliveries, committed) = commit_group(&conn, group, hooks);
        for deliver in deliveries {
            deliver(committed.clone());
        }
    }
    if let Err((_, error)) = conn.close() {
        tracing::error!(%error, "closing the database failed");
    }
}
