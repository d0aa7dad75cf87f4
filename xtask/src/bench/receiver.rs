//! A webhook receiver for the events row: an HTTP/1.1 server on 127.0.0.1
//! that answers every request 204 and counts them, so the server under load
//! delivers its events somewhere real. Blocking, a thread per connection
//! (the server opens at most `per_endpoint_concurrency` of them).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Result;

/// A running receiver: its URL and how many requests it has answered.
pub(super) struct Receiver {
    pub(super) url: String,
    received: Arc<AtomicU64>,
}

impl Receiver {
    /// Starts accepting on a free port; runs until the process ends.
    pub(super) fn start() -> Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let received = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(std::result::Result::ok) {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    // A connection that breaks off ends its thread; the
                    // server retries what it did not see answered.
                    let _ = serve(stream, &counter);
                });
            }
        });
        Ok(Receiver { url, received })
    }

    /// Requests answered so far.
    pub(super) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// Answers the requests of one kept-alive connection until it closes.
fn serve(stream: TcpStream, counter: &AtomicU64) -> Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        counter.fetch_add(1, Ordering::Relaxed);
        writer.write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")?;
    }
}
