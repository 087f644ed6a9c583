//! The HTTP server's limits against slow and greedy clients (issue 12, finding 2), with raw
//! TCP clients on 127.0.0.1 against the real app: a client that sends its headers or its body
//! a byte at a time is cut off (408 or a closed connection), while requests on other
//! connections are answered meanwhile; the request and connection caps hold.

use chrono::{DateTime, Utc};
use kairos_server::http::HttpLimits;
use reqwest::StatusCode;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;

use common::TestApp;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
        .expect("instant")
        .to_utc()
}

fn limits(header: u64, body: u64, request: u64) -> HttpLimits {
    HttpLimits {
        header_timeout: Duration::from_secs(header),
        body_timeout: Duration::from_secs(body),
        request_timeout: Duration::from_secs(request),
        ..HttpLimits::default()
    }
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.base.trim_start_matches("http://"))
        .await
        .expect("connect")
}

/// What a trickling client saw: the server's bytes, and whether the server hung up before
/// the client had sent everything.
struct Trickle {
    answer: String,
    cut_off: bool,
}

/// Send `head` at once, then `trickle` one byte every `every`, while checking that a normal
/// request on another connection is answered 200 every few bytes. Stops when the server
/// answers or hangs up; at most `trickle.len()` rounds.
async fn trickle(app: &TestApp, head: &[u8], trickle: &[u8], every: Duration) -> Trickle {
    let mut s = connect(app).await;
    s.write_all(head).await.expect("head");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    for (i, b) in trickle.iter().enumerate() {
        if s.write_all(&[*b]).await.is_err() {
            return Trickle {
                answer: String::from_utf8_lossy(&answer).into_owned(),
                cut_off: true,
            };
        }
        if i % 5 == 0 {
            let ok = app
                .http
                .get(format!("{}/healthz", app.base))
                .timeout(Duration::from_secs(5))
                .send()
                .await
                .expect("another client is answered meanwhile");
            assert_eq!(ok.status(), StatusCode::OK);
        }
        match tokio::time::timeout(every, s.read(&mut buf)).await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Trickle {
                    answer: String::from_utf8_lossy(&answer).into_owned(),
                    cut_off: true,
                };
            }
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buf[..n]);
                // The answer is there; read what follows until the server hangs up (bounded).
                for _ in 0..100 {
                    match tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
                        Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
                        Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
                    }
                }
                return Trickle {
                    answer: String::from_utf8_lossy(&answer).into_owned(),
                    cut_off: i + 1 < trickle.len(),
                };
            }
        }
    }
    Trickle {
        answer: String::from_utf8_lossy(&answer).into_owned(),
        cut_off: false,
    }
}

#[tokio::test]
async fn a_client_sending_its_headers_a_byte_at_a_time_is_cut_off_while_others_are_answered() {
    let app = TestApp::start_with_limits(t0(), TOKEN, limits(1, 30, 60)).await;
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(200)
    );
    let started = Instant::now();
    let t = trickle(&app, b"", head.as_bytes(), Duration::from_millis(50)).await;
    assert!(
        t.cut_off,
        "the slow client got its whole head in: {:?}",
        t.answer
    );
    assert!(
        t.answer.is_empty() || t.answer.starts_with("HTTP/1.1 408"),
        "{:?}",
        t.answer
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_client_sending_its_body_a_byte_at_a_time_gets_408_while_others_are_answered() {
    let app = TestApp::start_with_limits(t0(), TOKEN, limits(30, 1, 60)).await;
    let body = format!("token={}", "a".repeat(194));
    let head = format!(
        "POST /admin/login HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let started = Instant::now();
    let t = trickle(
        &app,
        head.as_bytes(),
        body.as_bytes(),
        Duration::from_millis(50),
    )
    .await;
    assert!(
        t.cut_off,
        "the slow body was read to its end: {:?}",
        t.answer
    );
    assert!(t.answer.starts_with("HTTP/1.1 408"), "{:?}", t.answer);
    assert!(
        t.answer.to_ascii_lowercase().contains("connection: close"),
        "{:?}",
        t.answer
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_request_longer_than_the_request_timeout_gets_408() {
    // The body timeout is long: the whole-request timeout is what cuts this one off.
    let app = TestApp::start_with_limits(t0(), TOKEN, limits(30, 60, 1)).await;
    let body = format!("token={}", "a".repeat(194));
    let head = format!(
        "POST /admin/login HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let t = trickle(
        &app,
        head.as_bytes(),
        body.as_bytes(),
        Duration::from_millis(50),
    )
    .await;
    assert!(t.cut_off);
    assert!(t.answer.starts_with("HTTP/1.1 408"), "{:?}", t.answer);
}

#[tokio::test]
async fn past_the_request_cap_a_request_gets_503_with_retry_after() {
    let app = TestApp::start_with_limits(
        t0(),
        TOKEN,
        HttpLimits {
            max_requests: 1,
            ..limits(30, 3, 60)
        },
    )
    .await;
    // One request in progress: its body trickles in.
    let mut slow = connect(&app).await;
    slow.write_all(
        b"POST /admin/login HTTP/1.1\r\nHost: 127.0.0.1\r\n\
          Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=",
    )
    .await
    .expect("slow head");
    let mut refused = None;
    for _ in 0..100 {
        let r = app
            .http
            .get(format!("{}/healthz", app.base))
            .send()
            .await
            .expect("healthz");
        if r.status() == StatusCode::SERVICE_UNAVAILABLE {
            refused = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = refused.expect("a second request in progress is refused");
    assert_eq!(r.headers()["retry-after"], "1");
    // Once the slow one is cut off by its body timeout, requests are answered again.
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut buf)).await;
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 408"));
    let r = app
        .http
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_waits_until_one_closes() {
    let app = TestApp::start_with_limits(
        t0(),
        TOKEN,
        HttpLimits {
            max_connections: 1,
            ..limits(30, 30, 60)
        },
    )
    .await;
    let idle = connect(&app).await;
    // The only slot is taken: another client is not answered…
    let waiting = app
        .http
        .get(format!("{}/healthz", app.base))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    assert!(waiting.is_err(), "answered past the cap: {waiting:?}");
    // …until the idle connection goes.
    drop(idle);
    let r = app
        .http
        .get(format!("{}/healthz", app.base))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("answered once the slot is free");
    assert_eq!(r.status(), StatusCode::OK);
}
