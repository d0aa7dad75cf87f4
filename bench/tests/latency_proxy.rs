//! The latency proxy adds its delay to each direction, delays a pipelined
//! burst together rather than chunk after chunk, and counts round trips as
//! the client makes them. Against an echo server on 127.0.0.1; the timing
//! assertions are lower bounds (a busy machine only adds time) and an upper
//! bound far above what serialising would cost.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const DELAY: Duration = Duration::from_millis(20);

struct Proxy {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    address: String,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_latency_proxy"))
            .args([
                "--upstream",
                upstream,
                "--delay-us",
                &DELAY.as_micros().to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the proxy starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the first line");
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .expect("listening on ADDR")
            .to_owned();
        Proxy {
            child,
            stdin,
            stdout,
            address,
        }
    }

    fn command(&mut self, command: &str) -> serde_json::Value {
        writeln!(self.stdin, "{command}").expect("a command");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("an answer");
        serde_json::from_str(&line).expect("JSON")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An echo server: every byte read is written back.
fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut stream = stream;
                let mut buffer = [0; 4096];
                while let Ok(read) = stream.read(&mut buffer) {
                    if read == 0 || stream.write_all(&buffer[..read]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    address
}

/// Reads exactly `n` bytes.
fn read_n(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut bytes = vec![0; n];
    stream.read_exact(&mut bytes).expect("the echo");
    bytes
}

#[test]
fn each_round_trip_takes_both_delays_and_is_counted() {
    let mut proxy = Proxy::start(&echo_server());
    let mut stream = TcpStream::connect(&proxy.address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let started = Instant::now();
    for i in 0..5u8 {
        stream.write_all(&[i; 10]).expect("send");
        assert_eq!(read_n(&mut stream, 10), vec![i; 10]);
    }
    let took = started.elapsed();
    assert!(
        took >= DELAY * 2 * 5,
        "five round trips of two delays each took {took:?}"
    );
    let stats = proxy.command("stats");
    assert_eq!(stats["round_trips"], 5);
    assert_eq!(stats["connections"], 1);
    assert_eq!(stats["bytes_up"], 50);
    assert_eq!(stats["bytes_down"], 50);
    assert_eq!(stats["rtt_us"]["samples"], 5);
    let median = stats["rtt_us"]["median"].as_u64().expect("a median");
    assert!(median >= 2 * DELAY.as_micros() as u64, "median {median} µs");
}

#[test]
fn a_pipelined_burst_is_one_round_trip_delayed_together() {
    let mut proxy = Proxy::start(&echo_server());
    let mut stream = TcpStream::connect(&proxy.address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    assert_eq!(proxy.command("reset")["reset"], true);
    let started = Instant::now();
    // 50 chunks sent without waiting for an answer.
    for i in 0..50u8 {
        stream.write_all(&[i; 100]).expect("send");
    }
    let echoed = read_n(&mut stream, 50 * 100);
    let took = started.elapsed();
    assert_eq!(
        echoed.chunks(100).map(|c| c[0]).collect::<Vec<_>>(),
        (0..50u8).collect::<Vec<_>>()
    );
    assert!(took >= DELAY * 2, "{took:?}");
    // Serialised, the 50 chunks alone would take 50 × 20 ms = 1 s on the way up.
    assert!(took < DELAY * 50, "the burst was serialised: {took:?}");
    let stats = proxy.command("stats");
    // The first echo may come back before the client's last chunk left: then the client's next chunk starts another.
    let round_trips = stats["round_trips"].as_u64().expect("a count");
    assert!(
        (1..50).contains(&round_trips),
        "{round_trips} round trips for one burst"
    );
    assert_eq!(stats["bytes_up"], 5000);
}
