//! The `http` channel against real sockets on 127.0.0.1: the S4-3 classification of transport
//! errors (refused, reset, timeout), the SSRF guard, and what a call sends.

use chrono::{DateTime, TimeZone, Utc};
use kairos_channels::{HttpCall, HttpCallAuth, HttpCallConfig, HttpCaller, WebhookSecret};
use kairos_core::{ErrorClass, Failure, Outcome};
use kairos_testkit::{Reply, TestReceiver, refused_url, verify_standard_webhook};
use std::collections::BTreeMap;
use std::time::Duration;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 20, 21, 0, 0).unwrap()
}

fn caller(allow_private_targets: bool) -> HttpCaller {
    HttpCaller::new(HttpCallConfig {
        allow_private_targets,
        ..HttpCallConfig::default()
    })
    .unwrap()
}

async fn call(c: &HttpCaller, url: &str, timeout: Duration, auth: HttpCallAuth<'_>) -> Outcome {
    let headers = BTreeMap::from([("content-type".to_string(), "application/json".to_string())]);
    let call = HttpCall {
        url,
        method: "POST",
        headers: &headers,
        body: Some(br#"{"a":1}"#),
        timeout,
        auth,
    };
    c.call(&call, "job_123", now()).await
}

#[track_caller]
fn failure(o: Outcome) -> Failure {
    match o {
        Outcome::Failed(f) => f,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// a refused connection is transient.
#[tokio::test]
async fn refused_connection_is_transient() {
    let url = refused_url("/x").await;
    let f = failure(
        call(
            &caller(true),
            &url,
            Duration::from_secs(5),
            HttpCallAuth::None,
        )
        .await,
    );
    assert_eq!(f.class, ErrorClass::Transient, "{f:?}");
    assert!(f.message.contains("connection refused"), "{f:?}");
    assert!(
        !f.message.contains("127.0.0.1"),
        "no URL in messages: {f:?}"
    );
}

/// a connection reset by the other side (RST right after accepting) is transient.
#[tokio::test]
async fn reset_connection_is_transient() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        // Two connections at most (the client may retry an idempotent-looking request once).
        for _ in 0..2 {
            let Ok(Ok((sock, _))) =
                tokio::time::timeout(Duration::from_secs(5), listener.accept()).await
            else {
                return;
            };
            // Linger 0: closing sends RST instead of FIN.
            sock.set_zero_linger().unwrap();
            drop(sock);
        }
    });
    let url = format!("http://{addr}/x");
    let f = failure(
        call(
            &caller(true),
            &url,
            Duration::from_secs(5),
            HttpCallAuth::None,
        )
        .await,
    );
    assert_eq!(f.class, ErrorClass::Transient, "{f:?}");
    server.abort();
}

/// a server that never answers turns into a transient timeout, not a hang.
#[tokio::test]
async fn hang_is_a_transient_timeout() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::ok().with_delay(Duration::from_secs(10))]);
    let o = call(
        &caller(true),
        &rx.url("/slow"),
        Duration::from_millis(200),
        HttpCallAuth::None,
    )
    .await;
    let f = failure(o);
    assert_eq!(f.class, ErrorClass::Transient);
    assert!(f.message.contains("timed out after 200ms"), "{f:?}");
}

/// The SSRF guard: without `KAIROS_ALLOW_PRIVATE_TARGETS` a loopback target is refused
/// permanently, and nothing is sent.
#[tokio::test]
async fn private_target_is_refused_unless_allowed() {
    let rx = TestReceiver::start().await;
    let f = failure(
        call(
            &caller(false),
            &rx.url("/x"),
            Duration::from_secs(5),
            HttpCallAuth::None,
        )
        .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
    assert!(
        f.message.contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"),
        "{f:?}"
    );
    assert_eq!(rx.count(), 0);
    let f = failure(
        call(
            &caller(true),
            "ftp://example.com/x",
            Duration::from_secs(5),
            HttpCallAuth::None,
        )
        .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
}

/// A 2xx is delivered with its status and excerpt; the signature headers verify with the
/// message id and the injected `now`; 500 carries `Retry-After` and the excerpt.
#[tokio::test]
async fn signed_call_and_statuses() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(500)
            .with_header("Retry-After", "30")
            .with_body("oops"),
    ]);
    let secret = WebhookSecret::parse(SECRET).unwrap();
    let c = caller(true);
    let f = failure(
        call(
            &c,
            &rx.url("/s"),
            Duration::from_secs(5),
            HttpCallAuth::Signature(&secret),
        )
        .await,
    );
    assert_eq!(
        (f.class, f.status_code, f.retry_after),
        (
            ErrorClass::Transient,
            Some(500),
            Some(Duration::from_secs(30))
        )
    );
    assert_eq!(f.response.as_deref(), Some("oops"));
    let o = call(
        &c,
        &rx.url("/s"),
        Duration::from_secs(5),
        HttpCallAuth::Signature(&secret),
    )
    .await;
    let Outcome::Delivered {
        status_code,
        response,
        ..
    } = o
    else {
        panic!("{o:?}")
    };
    assert_eq!(status_code, Some(200));
    assert_eq!(response.as_deref(), Some(r#"{"ok":true}"#));
    let req = rx.last().unwrap();
    assert_eq!(req.header("webhook-id"), Some("job_123"));
    assert!(verify_standard_webhook(SECRET, &req, now().timestamp()));
    assert_eq!(req.body, br#"{"a":1}"#);
}
