//! Issue 33, the second outside attack, against the real app on 127.0.0.1 (attackers bind
//! 127.0.0.2 as their local address, so the server sees another source):
//!
//! - finding 1: one source cannot take every connection slot (a cap per source, a bounded
//!   connection age);
//! - finding 2: wrong bearer tokens on `/v1` are throttled per source (429 + `Retry-After`),
//!   valid tokens and other sources are not;
//! - finding 3: `http` requests refuse framing and hop-by-hop headers and unusual methods;
//! - finding 4: control characters in names, reasons and zones are a 422 naming the field.

use chrono::{DateTime, Utc};
use kairos_server::http::HttpLimits;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

mod common;

use common::TestApp;

const TOKEN: &str = "hardening-test-token-of-at-least-32-chars";
const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
        .expect("instant")
        .to_utc()
}

fn server_addr(app: &TestApp) -> SocketAddr {
    app.base
        .trim_start_matches("http://")
        .parse()
        .expect("address")
}

/// A TCP connection to the app from `local` (port chosen by the kernel).
async fn connect_from(app: &TestApp, local: IpAddr) -> TcpStream {
    let s = TcpSocket::new_v4().expect("socket");
    s.bind(SocketAddr::new(local, 0)).expect("bind 127.0.0.2");
    s.connect(server_addr(app)).await.expect("connect")
}

/// Send one keep-alive `GET /healthz` on `s` and read the answer's status line: `Some(200)`,
/// `Some(503)`, …, or `None` when the server closed the connection or said nothing within
/// a second.
async fn healthz_on(s: &mut TcpStream) -> Option<u16> {
    let req = b"GET /healthz HTTP/1.1\r\nhost: kairos\r\n\r\n";
    s.write_all(req).await.ok()?;
    let mut buf = vec![0u8; 4096];
    let n = match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => n,
        _ => return None,
    };
    let head = String::from_utf8_lossy(&buf[..n]);
    head.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// The contract of finding 1: with `KAIROS_HTTP_MAX_CONNECTIONS=16`, sixteen keep-alive
/// connections from 127.0.0.2 that each send a request every interval (8 s in the attack;
/// 300 ms here, the same: always busy before any timeout) do not stop a client on 127.0.0.1
/// from getting `/healthz` within 2 s. 127.0.0.2 keeps a quarter of the slots (4); the rest of
/// its connections are answered 503 with `Retry-After` and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_1_one_source_cannot_take_every_connection_slot() {
    let app = TestApp::start_with_limits(
        t0(),
        TOKEN,
        HttpLimits {
            max_connections: 16,
            ..HttpLimits::default()
        },
    )
    .await;
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..16 {
        let mut s = connect_from(&app, ATTACKER).await;
        match healthz_on(&mut s).await {
            Some(200) => held.push(s),
            Some(503) | None => refused += 1,
            Some(other) => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(held.len(), 4, "127.0.0.2 holds a quarter of 16 slots");
    assert_eq!(refused, 12);
    // The attacker keeps its connections busy while the other client asks.
    let client = tokio::spawn({
        let http = app.http.clone();
        let url = format!("{}/healthz", app.base);
        async move {
            let started = Instant::now();
            let r = http
                .get(url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .map(|r| r.status());
            (r, started.elapsed())
        }
    });
    for _ in 0..5 {
        for s in held.iter_mut() {
            assert_eq!(
                healthz_on(s).await,
                Some(200),
                "a held connection is served"
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (status, took) = client.await.expect("client task");
    assert_eq!(
        status.expect("answered within 2 s"),
        StatusCode::OK,
        "took {took:?}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// A connection kept busy with a request every 200 ms is closed once it is older than the
/// connection age (1 s here), so its slot goes back to the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_1_a_busy_keep_alive_connection_is_closed_at_its_age() {
    let app = TestApp::start_with_limits(
        t0(),
        TOKEN,
        HttpLimits {
            max_connection_age: Duration::from_secs(1),
            ..HttpLimits::default()
        },
    )
    .await;
    let mut s = connect_from(&app, ATTACKER).await;
    let started = Instant::now();
    let mut served = 0;
    for _ in 0..50 {
        if healthz_on(&mut s).await != Some(200) {
            break;
        }
        served += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let lived = started.elapsed();
    assert!(served >= 2, "served {served} requests first");
    assert!(
        lived < Duration::from_secs(4),
        "closed near its age of 1 s, not kept: {lived:?}"
    );
}

/// A per-source cap set explicitly: the fifth connection from one address is refused with 503
/// and `Retry-After: 1` while another address still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_1_past_the_per_source_cap_a_connection_is_answered_503() {
    let app = TestApp::start_with_limits(
        t0(),
        TOKEN,
        HttpLimits {
            max_connections_per_source: Some(2),
            ..HttpLimits::default()
        },
    )
    .await;
    let mut a = connect_from(&app, ATTACKER).await;
    let mut b = connect_from(&app, ATTACKER).await;
    assert_eq!(healthz_on(&mut a).await, Some(200));
    assert_eq!(healthz_on(&mut b).await, Some(200));
    let mut c = connect_from(&app, ATTACKER).await;
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf))
        .await
        .expect("answered at once")
        .unwrap_or(0);
    let answer = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    let mut other = connect_from(&app, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3))).await;
    assert_eq!(healthz_on(&mut other).await, Some(200));
    // A closed connection gives its place back.
    drop(a);
    let mut again = None;
    for _ in 0..20 {
        let mut d = connect_from(&app, ATTACKER).await;
        if healthz_on(&mut d).await == Some(200) {
            again = Some(d);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(again.is_some(), "the freed place is taken again");
}

fn client_from(local: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .local_address(local)
        .build()
        .expect("client")
}

/// `GET url` from `client` with bearer `token`.
async fn get_with(client: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    client
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("req")
}

/// The contract of finding 2: after at most 20 wrong bearer tokens from one source (within a
/// second: the engine's clock stands still here), that source's next attempts are answered
/// 429 with `Retry-After`; a valid token is answered at once, from that source or another,
/// valid tokens never count against a source, and a request without a token stays a 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_2_wrong_bearer_tokens_are_throttled_per_source() {
    let app = TestApp::start(t0(), TOKEN).await;
    let url = format!("{}/v1/jobs", app.base);
    // Valid tokens do not count, however many.
    let friend = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
    for _ in 0..30 {
        let r = get_with(&friend, &url, TOKEN).await;
        assert_eq!(r.status(), StatusCode::OK);
    }
    let r = get_with(&friend, &url, "wrong").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    let attacker = client_from(ATTACKER);
    let mut unauthorized = 0;
    let mut throttled = 0;
    for i in 0..40 {
        let r = get_with(&attacker, &url, &format!("guess-{i}")).await;
        match r.status() {
            StatusCode::UNAUTHORIZED => {
                assert_eq!(throttled, 0, "a 401 after a 429");
                unauthorized += 1;
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let wait: u64 = r.headers()["retry-after"]
                    .to_str()
                    .expect("ascii")
                    .parse()
                    .expect("seconds");
                assert!(wait >= 1);
                let body: Value = r.json().await.expect("problem");
                assert_eq!(body["status"], 429, "{body}");
                throttled += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(
        unauthorized <= 20,
        "{unauthorized} wrong tokens answered 401"
    );
    assert_eq!(unauthorized + throttled, 40);
    // While it waits, its wrong tokens stay 429; a request without a token guesses nothing
    // (401), and the right token is never slowed (a client behind the same address).
    let r = get_with(&attacker, &url, "guess-again").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let r = attacker.get(&url).send().await.expect("request");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = get_with(&attacker, &url, TOKEN).await;
    assert_eq!(r.status(), StatusCode::OK);
    // Another source with the right token: at once.
    let started = Instant::now();
    let r = get_with(&app.http, &url, TOKEN).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(started.elapsed() < Duration::from_secs(1));
    // After the wait (the engine's clock), the source's wrong tokens are heard again.
    app.clock.advance(chrono::Duration::seconds(2));
    let r = get_with(&attacker, &url, "guess-late").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

async fn post(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    let res = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn assert_422(r: &(u16, Value), field: &str) {
    assert_eq!(r.0, 422, "{}", r.1);
    assert_eq!(r.1["field"], field, "{}", r.1);
}

/// The contract of finding 3: an `http` job or schedule with a framing or hop-by-hop header,
/// or a method outside GET HEAD POST PUT PATCH DELETE OPTIONS, is a 422 naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_3_http_requests_refuse_framing_headers_and_unusual_methods() {
    let app = TestApp::start(t0(), TOKEN).await;
    for (name, value) in [
        ("host", "internal.example"),
        ("Content-Length", "100"),
        ("transfer-encoding", "chunked"),
        ("connection", "close"),
        ("te", "trailers"),
        ("upgrade", "websocket"),
        ("keep-alive", "timeout=5"),
        ("proxy-authorization", "Basic eA=="),
    ] {
        let http =
            json!({"url": "https://example.com/x", "headers": {name: value}, "body": "123456789"});
        let r = post(&app, "/v1/jobs", json!({"kind": "http", "http": http})).await;
        let field = format!("http.headers.{}", name.to_ascii_lowercase());
        assert_422(&r, &field);
        let r = post(
            &app,
            "/v1/schedules",
            json!({"name": format!("s-{name}"), "kind": "http", "cron": "0 * * * *", "http": http}),
        )
        .await;
        assert_422(&r, &field);
    }
    for method in ["CONNECT", "TRACE", "PROPFIND"] {
        let r = post(
            &app,
            "/v1/jobs",
            json!({"kind": "http", "http": {"url": "https://example.com/x", "method": method}}),
        )
        .await;
        assert_422(&r, "http.method");
    }
    for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let r = post(
            &app,
            "/v1/jobs",
            json!({"kind": "http", "http": {"url": "https://example.com/x", "method": method,
                   "headers": {"x-host": "fine"}}}),
        )
        .await;
        assert_eq!(r.0, 201, "{method}: {}", r.1);
    }
}

/// The contract of finding 4: control characters in a schedule `name`, a `timezone`, a cancel
/// `reason` (one job or bulk) are a 422 naming the field, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_4_control_characters_in_text_fields_are_refused() {
    let app = TestApp::start(t0(), TOKEN).await;
    let schedule = |name: &str, tz: &str| {
        json!({"name": name, "kind": "webhook", "cron": "0 * * * *", "timezone": tz,
               "webhook": {"url": "https://example.com/hook",
                           "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}})
    };
    for name in [
        "a\u{1b}]0;owned\u{7}",
        "x\u{1b}[2K\rhidden",
        "two\nlines",
        "c1\u{9b}",
        "trailing\n",
    ] {
        assert_422(
            &post(&app, "/v1/schedules", schedule(name, "UTC")).await,
            "name",
        );
    }
    assert_422(
        &post(&app, "/v1/schedules", schedule("weekly", "UTC\n")).await,
        "timezone",
    );
    let r = post(&app, "/v1/schedules", schedule("weekly", " Europe/Berlin ")).await;
    assert_eq!(r.0, 201, "{}", r.1);
    assert_eq!(
        r.1["timezone"], "Europe/Berlin",
        "stored as the zone's name"
    );
    let (_, job) = post(
        &app,
        "/v1/jobs",
        json!({"kind": "webhook", "run_at": "2026-12-02T00:00:00Z",
               "webhook": {"url": "https://example.com/hook",
                           "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}),
    )
    .await;
    let id = job["id"].as_str().expect("job id");
    assert_422(
        &post(
            &app,
            &format!("/v1/jobs/{id}/cancel"),
            json!({"reason": "done\u{1b}[2K"}),
        )
        .await,
        "reason",
    );
    assert_422(
        &post(
            &app,
            "/v1/jobs/cancel",
            json!({"all": true, "reason": "bulk\r"}),
        )
        .await,
        "reason",
    );
    let r = post(
        &app,
        &format!("/v1/jobs/{id}/cancel"),
        json!({"reason": "done"}),
    )
    .await;
    assert_eq!(r.0, 200, "{}", r.1);
}

/// Every `/v1` operation of the OpenAPI document refuses a request without a token and one
/// with a wrong token with 401 (what schemathesis's `ignored_auth` checked before wrong tokens
/// were throttled per source: each operation's wrong token comes from its own address here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_v1_operation_refuses_a_missing_or_wrong_token() {
    let app = TestApp::start(t0(), TOKEN).await;
    let doc: Value = serde_json::from_str(&kairos_server::openapi::openapi_json())
        .expect("the OpenAPI document is JSON");
    let mut checked = 0;
    let paths = doc["paths"].as_object().expect("paths");
    for (n, (path, ops)) in paths
        .iter()
        .filter(|(p, _)| p.starts_with("/v1"))
        .enumerate()
    {
        // Path parameters filled with a harmless id.
        let concrete = path
            .split('/')
            .map(|seg| if seg.starts_with('{') { "x0" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let url = format!("{}{concrete}", app.base);
        let source = IpAddr::V4(Ipv4Addr::new(127, 0, 1, (n % 250) as u8 + 1));
        let client = client_from(source);
        for method in ops.as_object().expect("operations").keys() {
            let method: reqwest::Method = method.to_uppercase().parse().expect("method");
            let none = client
                .request(method.clone(), &url)
                .send()
                .await
                .expect("request");
            assert_eq!(
                none.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} without a token"
            );
            let wrong = client
                .request(method.clone(), &url)
                .bearer_auth("not-the-token")
                .send()
                .await
                .expect("request");
            assert_eq!(
                wrong.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} with a wrong token"
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} operations");
}
