//! A TCP proxy that adds latency without capping throughput: how a
//! database on another machine behaves, for the PostgreSQL rows of
//! `cargo xtask bench` (issue 36).
//!
//! Each chunk read from either side is stamped on arrival and written to
//! the other side once the delay of its direction has passed. Reading and
//! writing are separate threads joined by a queue, so chunks in flight are
//! delayed together (the link's latency), never one after another (which
//! would make the proxy a bandwidth limit of one chunk per delay).
//!
//! It counts round trips: on each connection, the client's first chunk
//! after the server last answered starts one, and the server's first chunk
//! written back ends it; the time between is the round trip as the client
//! sees it (both delays, the server's work, and the proxy's own cost). A
//! pipelined burst of statements is one round trip, which is what "round
//! trips per group" means.
//!
//! `latency_proxy --upstream HOST:PORT --delay-us N [--listen ADDR]`
//!
//! Prints `listening on ADDR` once bound. Reads commands from stdin, one a
//! line: `stats` prints a JSON line (`connections`, `round_trips`,
//! `rtt_us` median and p99 of the round trips since the last `reset`,
//! `bytes_up`, `bytes_down`); `reset` zeroes the counts. It exits when
//! stdin closes.

use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

/// The most round-trip times kept between two `reset`s; later ones are
/// counted but not sampled.
const MAX_SAMPLES: usize = 1 << 20;
/// The largest chunk read at once.
const CHUNK: usize = 64 * 1024;

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    round_trips: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    samples: Mutex<Vec<u32>>,
}

impl Counts {
    fn reset(&self) {
        self.connections.store(0, Ordering::Relaxed);
        self.round_trips.store(0, Ordering::Relaxed);
        self.bytes_up.store(0, Ordering::Relaxed);
        self.bytes_down.store(0, Ordering::Relaxed);
        lock(&self.samples).clear();
    }

    fn report(&self) -> serde_json::Value {
        let mut samples = lock(&self.samples).clone();
        samples.sort_unstable();
        let at = |q: f64| -> Option<u32> {
            let last = samples.len().checked_sub(1)?;
            // Nearest rank, rounded up: p99 of 100 samples is the 99th.
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, last + 1) - 1;
            samples.get(rank).copied()
        };
        json!({
            "connections": self.connections.load(Ordering::Relaxed),
            "round_trips": self.round_trips.load(Ordering::Relaxed),
            "rtt_us": { "median": at(0.5), "p99": at(0.99), "samples": samples.len() },
            "bytes_up": self.bytes_up.load(Ordering::Relaxed),
            "bytes_down": self.bytes_down.load(Ordering::Relaxed),
        })
    }
}

/// A mutex's value, also after a thread panicked holding it (the counts stay usable).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which way a chunk goes.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Up,
    Down,
}

/// One connection's round trip in progress: when the client's chunk that
/// started it reached the proxy.
type Pending = Arc<Mutex<Option<Instant>>>;

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the address and the counts are the program's output, read by the bench harness; a connection's failure is told on stderr"
)]
fn main() -> anyhow::Result<()> {
    let mut upstream = None;
    let mut delay_us = None;
    let mut listen = "127.0.0.1:0".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--upstream" => upstream = Some(value()?),
            "--delay-us" => {
                delay_us = Some(
                    value()?
                        .parse::<u64>()
                        .context("--delay-us is microseconds")?,
                )
            }
            "--listen" => listen = value()?,
            other => bail!(
                "unknown argument {other}; usage: latency_proxy --upstream HOST:PORT --delay-us N [--listen ADDR]"
            ),
        }
    }
    let upstream = upstream.context("--upstream HOST:PORT is required")?;
    let delay = Duration::from_micros(delay_us.context("--delay-us N is required")?);
    let listener = TcpListener::bind(&listen).with_context(|| format!("binding {listen}"))?;
    println!("listening on {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let counts = Arc::new(Counts::default());
    {
        let counts = Arc::clone(&counts);
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let counts = Arc::clone(&counts);
                let upstream = upstream.clone();
                thread::spawn(move || {
                    if let Err(error) = connect(client, &upstream, delay, &counts) {
                        eprintln!("latency_proxy: {error:#}");
                    }
                });
            }
        });
    }
    for line in std::io::stdin().lock().lines() {
        match line?.trim() {
            "stats" => println!("{}", counts.report()),
            "reset" => {
                counts.reset();
                println!("{{\"reset\":true}}");
            }
            "" => {}
            other => eprintln!("latency_proxy: unknown command {other:?} (stats, reset)"),
        }
        std::io::stdout().flush()?;
    }
    Ok(())
}

/// Joins a client to a new upstream connection: a reader and a writer per direction.
fn connect(
    client: TcpStream,
    upstream: &str,
    delay: Duration,
    counts: &Arc<Counts>,
) -> anyhow::Result<()> {
    let server =
        TcpStream::connect(upstream).with_context(|| format!("connecting to {upstream}"))?;
    for stream in [&client, &server] {
        stream.set_nodelay(true)?;
    }
    counts.connections.fetch_add(1, Ordering::Relaxed);
    let pending: Pending = Arc::default();
    let pairs = [
        (Way::Up, client.try_clone()?, server.try_clone()?),
        (Way::Down, server, client),
    ];
    for (way, from, to) in pairs {
        let (send, receive) = channel();
        let (counts_r, pending_r) = (Arc::clone(counts), Arc::clone(&pending));
        thread::spawn(move || read_side(way, from, &send, &counts_r, &pending_r));
        let (counts_w, pending_w) = (Arc::clone(counts), Arc::clone(&pending));
        thread::spawn(move || write_side(way, to, &receive, delay, &counts_w, &pending_w));
    }
    Ok(())
}

/// Reads chunks and queues them, stamped with their arrival; a client's
/// chunk with no round trip in progress starts one.
fn read_side(
    way: Way,
    mut from: TcpStream,
    queue: &Sender<(Instant, Vec<u8>)>,
    counts: &Counts,
    pending: &Pending,
) {
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let now = Instant::now();
        let chunk = buffer.get(..read).unwrap_or_default().to_vec();
        if way == Way::Up {
            counts.bytes_up.fetch_add(read as u64, Ordering::Relaxed);
            let mut started = lock(pending);
            if started.is_none() {
                *started = Some(now);
                counts.round_trips.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            counts.bytes_down.fetch_add(read as u64, Ordering::Relaxed);
        }
        if queue.send((now, chunk)).is_err() {
            break;
        }
    }
    // The writer sees the queue close, finishes what is queued, and shuts its side down.
}

/// Writes each queued chunk once its delay has passed since it arrived; a
/// server's chunk ends the round trip in progress.
fn write_side(
    way: Way,
    mut to: TcpStream,
    queue: &Receiver<(Instant, Vec<u8>)>,
    delay: Duration,
    counts: &Counts,
    pending: &Pending,
) {
    for (arrived, chunk) in queue {
        let due = arrived + delay;
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        // Sampled as the chunk goes out, before the write: once written, the
        // client may ask for the counts, which must then hold this round trip.
        if way == Way::Down
            && let Some(started) = lock(pending).take()
        {
            let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
            let mut samples = lock(&counts.samples);
            if samples.len() < MAX_SAMPLES {
                samples.push(micros);
            }
        }
        if to.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
