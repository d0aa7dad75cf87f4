//! The HTTP accept loop of `mandate serve` and `mandate witness serve`.
//!
//! `axum::serve` runs hyper without a timer, so hyper's header-read timeout
//! never fires: a client that sends its headers a byte at a time holds a
//! connection, and enough such clients hold every one (the slow-header
//! attack). This loop is axum's, with a timer: a connection whose request
//! line and headers do not arrive within the timeout — a new request's on a
//! kept-alive connection too — is closed. Handlers see the peer's address
//! as `ConnectInfo<SocketAddr>`, as with axum's connect-info service, and a
//! shutdown stops accepting and waits for the open connections' requests to
//! finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

/// Serves `router` on `listener` until `shutdown` completes, then waits
/// for the connections' requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    // HTTP/1.1 only, as axum::serve was built here (without its `http2`
    // feature).
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    pause_after(&error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = router
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.map(Body::new)
            });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, error = %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// After a failed accept: nothing for a connection the peer reset before it
/// was taken; otherwise (out of file descriptors, most often) a second's
/// pause, as axum makes, so that the loop does not spin.
async fn pause_after(error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// The peer's address as the handlers see it.
    fn peer_of(request: &Request) -> Option<SocketAddr> {
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0)
    }

    async fn start(timeout: Duration) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = Router::new().route(
            "/",
            axum::routing::get(|request: Request| async move {
                peer_of(&request)
                    .map(|peer| peer.ip().to_string())
                    .unwrap_or_default()
            }),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(serve(listener, router, timeout, async {
            let _ = stopped.await;
        }));
        (address, stop)
    }

    /// Reads until the server closes the connection, within `within`.
    async fn read_to_close(stream: &mut tokio::net::TcpStream, within: Duration) -> Vec<u8> {
        let mut read = Vec::new();
        tokio::time::timeout(within, stream.read_to_end(&mut read))
            .await
            .expect("the server kept the connection open")
            .ok();
        read
    }

    #[tokio::test]
    async fn a_request_is_answered_with_the_peers_address() {
        let (address, _stop) = start(Duration::from_secs(5)).await;
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let answer =
            String::from_utf8(read_to_close(&mut stream, Duration::from_secs(10)).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("127.0.0.1"), "{answer}");
    }

    #[tokio::test]
    async fn a_client_trickling_its_headers_is_disconnected() {
        let (address, _stop) = start(Duration::from_millis(300)).await;
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        // A header byte every 100 ms keeps the connection busy but never
        // finishes the request; the server closes it once the timeout has
        // passed, without an answer.
        let trickle = async {
            for byte in b"x-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            {
                if stream.write_all(&[*byte]).await.is_err() {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            false
        };
        assert!(
            tokio::time::timeout(Duration::from_secs(20), trickle)
                .await
                .expect("still connected after 20 s"),
            "the server waited for all the header bytes"
        );
    }

    #[tokio::test]
    async fn an_idle_kept_alive_connection_is_closed() {
        let (address, _stop) = start(Duration::from_millis(300)).await;
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut stream, Duration::from_secs(20)).await;
        assert!(answer.starts_with(b"HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn a_shutdown_stops_accepting() {
        let (address, stop) = start(Duration::from_secs(5)).await;
        stop.send(()).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(address).await.is_ok() {
            assert!(tokio::time::Instant::now() < deadline, "still accepting");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
