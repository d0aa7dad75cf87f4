//! Abuse controls: per-address limits that a spoofed `X-Forwarded-For`
//! cannot dodge, and bodies over the cap refused before they are read whole.

use std::time::Duration;

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::TestApp;

async fn health_statuses(app: &TestApp, forwarded: &[&str]) -> Vec<u16> {
    let mut statuses = Vec::new();
    for hop in forwarded {
        let response = app
            .client
            .get(app.url("/healthz"))
            .header("x-forwarded-for", *hop)
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    statuses
}

#[tokio::test]
async fn spoofed_forwarded_for_does_not_change_the_limit_key() {
    let hops = [
        "198.51.100.1",
        "198.51.100.2",
        "198.51.100.3",
        "198.51.100.4",
    ];
    let untrusting = TestApp::spawn_with(|c| {
        c.rate_limits.per_ip = 1;
        c.rate_limits.burst = 2;
    })
    .await;
    assert_eq!(
        health_statuses(&untrusting, &hops).await,
        [200, 200, 429, 429]
    );

    let behind_proxy = TestApp::spawn_with(|c| {
        c.rate_limits.per_ip = 1;
        c.rate_limits.burst = 2;
        c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    assert_eq!(
        health_statuses(&behind_proxy, &hops).await,
        [200, 200, 200, 200]
    );
    assert_eq!(
        health_statuses(&behind_proxy, &["198.51.100.1"; 3]).await,
        [200, 429, 429]
    );
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let app = TestApp::spawn().await;
    let address = app.base.strip_prefix("http://").unwrap().to_owned();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = "POST /v1/vat/record/action HTTP/1.1\r\nHost: mandate\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&[b' '; 1024]).await.unwrap();
    let mut reply = vec![0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut reply))
        .await
        .expect("the server waited for the whole body")
        .unwrap();
    let reply = String::from_utf8_lossy(&reply[..read]);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("payload_too_large"), "{reply}");

    let response = app
        .client
        .post(app.url("/v1/vat/record/action"))
        .header("content-type", "application/json")
        .body(vec![b' '; 65 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}
