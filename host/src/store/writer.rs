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
//!
//! The thread owns a value (the ledger) that holds the connection and what
//! the writes of a group keep in memory until they commit; it knows nothing
//! of what that value does beyond the [`Owned`] protocol.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::store::sql::{self, Connection};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::StoreError;
use crate::metrics::Metrics;

/// How many writes may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 8192;

/// What the writer thread owns: the write connection, and whatever the
/// writes of a group keep in memory until the group commits.
pub trait Owned: Send + 'static {
    /// The read-write connection every write runs on.
    fn connection(&self) -> &Connection;
    /// What the group has changed so far, written or kept to be written: a
    /// write that fails after changing something fails its group.
    fn changes(&self) -> u64 {
        self.connection().total_changes()
    }
    /// Ends the group's transaction: writes what the group kept in memory
    /// and commits (on PostgreSQL one flight, [`Connection::commit_flight`]).
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Runs after a group committed.
    fn after_commit(&mut self);
    /// Runs after a group was rolled back: forgets what it kept.
    fn after_rollback(&mut self);
    /// Closes the connection, once the last write has committed.
    fn close(self);
    /// Runs before each write of a group.
    fn before_write(&mut self) {}
    /// Whether the write that just ran asked to run again at the start of
    /// the next group (it would have waited, holding what the group holds,
    /// for a lock another process holds: a wait that can close a cycle).
    fn take_deferred(&mut self) -> bool {
        false
    }
    /// Runs before a group commits when a next group is likely — writes
    /// wait for it, a write of this one asked to run again, or this one
    /// had several (writes come concurrently): the commit may begin the
    /// next group's transaction in its own flight.
    fn expect_more(&mut self) {}
    /// Runs when no write came within [`AHEAD_WAIT`] of a commit that
    /// expected more: ends whatever that commit began.
    fn idle(&mut self) {}
}

/// How long the writer waits for the next write after a commit that
/// expected more ([`Owned::expect_more`]) before it tells the owner it is
/// idle ([`Owned::idle`]): what such a commit began is held no longer
/// than this (and a round trip) by a writer with nothing to do. Clients
/// answered by a group send their next writes within a few hundred
/// microseconds on a busy host.
pub(crate) const AHEAD_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Hands the commit result to the caller.
type Delivery = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// What running a write's work did.
enum Worked<S> {
    /// It succeeded or not (`bool`), and how to answer once the group has
    /// committed.
    Done(bool, Delivery),
    /// It asked to run again at the start of the next group.
    Deferred(Box<dyn Job<S>>),
}

/// A queued write.
trait Job<S>: Send {
    /// Runs in the group's transaction.
    fn run(self: Box<Self>, owned: &mut S) -> Worked<S>;
    /// Answers with an error without running.
    fn abandon(self: Box<Self>, error: StoreError);
}

struct TypedJob<T, E, F> {
    work: F,
    answer: oneshot::Sender<Result<T, E>>,
}

impl<S, T, E, F> Job<S> for TypedJob<T, E, F>
where
    S: Owned,
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
    F: FnMut(&mut S) -> Result<T, E> + Send + 'static,
{
    fn run(mut self: Box<Self>, owned: &mut S) -> Worked<S> {
        owned.before_write();
        let outcome = (self.work)(owned);
        if owned.take_deferred() {
            return Worked::Deferred(self);
        }
        let TypedJob { answer, .. } = *self;
        let keep = outcome.is_ok();
        let deliver: Delivery = Box::new(move |committed| {
            // The caller may have gone away; nothing to do then.
            let _ = answer.send(committed.map_err(E::from).and(outcome));
        });
        Worked::Done(keep, deliver)
    }

    fn abandon(self: Box<Self>, error: StoreError) {
        let _ = self.answer.send(Err(error.into()));
    }
}

/// A handle to the writer thread.
pub(crate) struct Writer<S> {
    queue: mpsc::Sender<Box<dyn Job<S>>>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    /// Cancelled when the thread ended by a panic outside any write (in a
    /// commit, or between groups): no write can be taken any more.
    lost: CancellationToken,
}

impl<S> Clone for Writer<S> {
    fn clone(&self) -> Writer<S> {
        Writer {
            queue: self.queue.clone(),
            thread: self.thread.clone(),
            lost: self.lost.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Writer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl<S: Owned> Writer<S> {
    /// Starts the writer thread, which owns `owned`, and `guard` until it
    /// has closed the database (the data folder's serve lock on SQLite).
    pub(crate) fn start(
        owned: S,
        guard: Option<std::fs::File>,
        max_batch: usize,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Writer<S>> {
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let lost = CancellationToken::new();
        let ended = lost.clone();
        let thread = std::thread::Builder::new()
            .name("mandate-writer".into())
            .spawn(move || {
                // A panic within a write is caught by its group; one
                // outside ends the thread, and with it every later write
                // (the queue closes, the writes queued are answered with
                // an error). The owned connection is dropped while
                // unwinding: its transaction rolls back.
                let ran = catch_unwind(AssertUnwindSafe(|| {
                    run(owned, jobs, max_batch.max(1), &metrics);
                }));
                if ran.is_err() {
                    tracing::error!(
                        "the writer thread panicked outside a write: this process takes no more \
                         writes, and stops"
                    );
                    ended.cancel();
                }
                drop(guard);
            })?;
        Ok(Writer {
            queue,
            thread: Arc::new(Mutex::new(Some(thread))),
            lost,
        })
    }

    /// Cancelled when the writer thread has ended by a panic outside any
    /// write: the process can take no write any more, so the server stops
    /// (and a supervisor restarts it) rather than answer every write with
    /// an error. Not cancelled by [`Writer::close`].
    pub(crate) fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// Runs `work` in the writer and answers after its group commits.
    pub(crate) async fn write<T, E>(
        &self,
        work: impl FnMut(&mut S) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Box<dyn Job<S>> = Box::new(TypedJob { work, answer });
        self.queue
            .send(job)
            .await
            .map_err(|_| StoreError::Unavailable("the server is shutting down"))?;
        answered
            .await
            .map_err(|_| StoreError::Internal("a write panicked in the writer".to_owned()))?
    }

    /// Closes the queue and waits for queued writes to commit and the thread
    /// to close the database.
    pub(crate) fn close(self) {
        let Writer { queue, thread, .. } = self;
        drop(queue);
        let handle = thread.lock().ok().and_then(|mut slot| slot.take());
        if handle.is_some_and(|handle| handle.join().is_err()) {
            tracing::error!("the writer thread panicked");
        }
    }
}

fn exec(conn: &Connection, sql: &str) -> sql::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// What running one write did to the group.
enum Ran<S> {
    /// Asked to run again first in the next group, without changing
    /// anything.
    Deferred(Box<dyn Job<S>>),
    /// Succeeded, or failed without changing anything: answer after commit.
    Answer(Delivery),
    /// Panicked without changing anything: its caller hears of the panic.
    Panicked,
    /// Changed something and then failed or panicked: the group must roll
    /// back.
    Poisoned(Option<Delivery>),
}

fn run_job<S: Owned>(owned: &mut S, job: Box<dyn Job<S>>) -> Ran<S> {
    let before = owned.changes();
    let outcome = catch_unwind(AssertUnwindSafe(|| job.run(owned)));
    let untouched = owned.changes() == before;
    match outcome {
        Ok(Worked::Deferred(job)) if untouched => Ran::Deferred(job),
        Ok(Worked::Deferred(job)) => {
            job.abandon(StoreError::Unavailable(MIDWAY));
            Ran::Poisoned(None)
        }
        Ok(Worked::Done(true, deliver)) => Ran::Answer(deliver),
        Ok(Worked::Done(false, deliver)) if untouched => Ran::Answer(deliver),
        Ok(Worked::Done(false, deliver)) => Ran::Poisoned(Some(deliver)),
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

/// A group's outcome: how to answer each job that ran, the commit result
/// they all share, the writes to run first in the next group, and whether
/// the commit expected more ([`Owned::expect_more`]).
type Committed<S> = (
    Vec<Delivery>,
    Result<(), StoreError>,
    Vec<Box<dyn Job<S>>>,
    bool,
);

/// Why a group whose write failed midway stored nothing.
const MIDWAY: &str =
    "a write of the same group failed midway; nothing of the group was stored; retry";

/// Runs a group in one transaction. A write that asks to run again (see
/// [`Owned::take_deferred`]) without having changed anything is kept for
/// the next group, where it runs first; one that changed something first
/// fails its group, as a write failing midway does.
fn commit_group<S: Owned>(
    owned: &mut S,
    jobs: Vec<Box<dyn Job<S>>>,
    queued: impl Fn() -> bool,
) -> Committed<S> {
    let several = jobs.len() > 1;
    let mut deliveries = Vec::with_capacity(jobs.len());
    let mut deferred = Vec::new();
    let mut expected = false;
    let mut pending = jobs.into_iter();
    let mut failure = owned.connection().begin().err().map(StoreError::from);
    if failure.is_none() {
        for job in pending.by_ref() {
            match run_job(owned, job) {
                Ran::Deferred(job) => deferred.push(job),
                Ran::Answer(deliver) => deliveries.push(deliver),
                Ran::Panicked => {}
                Ran::Poisoned(deliver) => {
                    deliveries.extend(deliver);
                    failure = Some(StoreError::Unavailable(MIDWAY));
                    break;
                }
            }
        }
    }
    if failure.is_none() {
        expected = several || !deferred.is_empty() || queued();
        if expected {
            owned.expect_more();
        }
        failure = owned.commit().err();
    }
    let Some(error) = failure else {
        owned.after_commit();
        return (deliveries, Ok(()), deferred, expected);
    };
    // Nothing of this group is kept; every caller hears of it.
    let _ = exec(owned.connection(), "ROLLBACK");
    owned.after_rollback();
    for job in pending {
        job.abandon(error.clone());
    }
    (deliveries, Err(error), deferred, false)
}

fn run<S: Owned>(
    mut owned: S,
    mut jobs: mpsc::Receiver<Box<dyn Job<S>>>,
    max_batch: usize,
    metrics: &Metrics,
) {
    let mut carried: Vec<Box<dyn Job<S>>> = Vec::new();
    let mut expected = false;
    // Drives only the wait for a write after a commit that expected more.
    let timer = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok();
    loop {
        let mut group = std::mem::take(&mut carried);
        if group.is_empty() {
            let soon = match (&timer, expected) {
                // The timeout made inside the runtime, whose timer it needs.
                (Some(timer), true) => timer
                    .block_on(async { tokio::time::timeout(AHEAD_WAIT, jobs.recv()).await })
                    .ok(),
                _ => None,
            };
            let next = match soon {
                Some(next) => next,
                None => {
                    if expected {
                        owned.idle();
                    }
                    jobs.blocking_recv()
                }
            };
            let Some(first) = next else {
                break;
            };
            group.push(first);
        }
        while group.len() < max_batch {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        metrics.observe_batch(group.len());
        let (deliveries, committed, deferred, more) =
            commit_group(&mut owned, group, || !jobs.is_empty());
        carried = deferred;
        expected = more;
        for deliver in deliveries {
            deliver(committed.clone());
        }
    }
    owned.close();
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    /// What a writer owns in these tests: an in-memory database, and a
    /// switch that makes its commit panic — outside any write.
    struct Owner {
        conn: Connection,
        panic_in_commit: Arc<AtomicBool>,
    }

    impl Owned for Owner {
        fn connection(&self) -> &Connection {
            &self.conn
        }
        fn commit(&mut self) -> Result<(), StoreError> {
            if self.panic_in_commit.load(Ordering::SeqCst) {
                panic!("the commit panics");
            }
            Ok(exec(&self.conn, "COMMIT")?)
        }
        fn after_commit(&mut self) {}
        fn after_rollback(&mut self) {}
        fn close(self) {}
    }

    fn writer() -> (Writer<Owner>, Arc<AtomicBool>) {
        let panic_in_commit = Arc::new(AtomicBool::new(false));
        let conn = rusqlite::Connection::open_in_memory().expect("an in-memory database");
        let owner = Owner {
            conn: Connection::sqlite(conn),
            panic_in_commit: panic_in_commit.clone(),
        };
        let writer = Writer::start(owner, None, 8, Arc::new(Metrics::new())).expect("the writer");
        (writer, panic_in_commit)
    }

    async fn one(writer: &Writer<Owner>) -> Result<u8, StoreError> {
        writer.write(|_| Ok::<_, StoreError>(1)).await
    }

    #[tokio::test]
    async fn a_panic_outside_a_write_loses_the_writer_and_every_later_write() {
        let (writer, panic_in_commit) = writer();
        assert_eq!(one(&writer).await.expect("a write before the panic"), 1);
        assert!(!writer.lost().is_cancelled());
        panic_in_commit.store(true, Ordering::SeqCst);
        let error = one(&writer).await.expect_err("the group's commit panicked");
        assert!(matches!(error, StoreError::Internal(_)), "{error:?}");
        tokio::time::timeout(Duration::from_secs(10), writer.lost().cancelled())
            .await
            .expect("the writer is reported lost");
        let error = one(&writer).await.expect_err("no write is taken any more");
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
    }

    #[tokio::test]
    async fn a_writer_closed_is_not_lost() {
        let (writer, _) = writer();
        assert_eq!(one(&writer).await.expect("a write"), 1);
        let lost = writer.lost();
        writer.close();
        assert!(!lost.is_cancelled());
    }
}
