//! The email transports against real servers: SMTP against Python's aiosmtpd (a real SMTP
//! server), Resend against a local HTTP server speaking Resend's documented behaviour
//! (idempotency replay, 409 on a changed payload under the same key, 429 with `retry-after`,
//! quota codes), the file transport on a real directory.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kairos_channels::email::resend::{ResendConfig, ResendSender};
use kairos_channels::email::{EmailMessage, EmailTransport, TransportConfig};
use kairos_core::{ErrorClass, Outcome};
use kairos_testkit::smtp::SmtpSink;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn message(id: &str, to: &str) -> EmailMessage {
    EmailMessage {
        id: id.into(),
        from: "Weekly <weekly@kairos.test>".into(),
        to: to.into(),
        subject: "Your week 2026-W49".into(),
        html: Some("<p>Hello <b>Aki</b></p>".into()),
        text: Some("Hello Aki".into()),
        headers: vec![
            (
                "List-Unsubscribe".into(),
                "<https://kairos.test/unsubscribe?token=v1.abc>".into(),
            ),
            (
                "List-Unsubscribe-Post".into(),
                "List-Unsubscribe=One-Click".into(),
            ),
        ],
        tags: vec![
            ("topic".into(), "weekly".into()),
            ("variant".into(), "b".into()),
        ],
    }
}

fn failure(o: &Outcome) -> &kairos_core::Failure {
    match o {
        Outcome::Failed(f) => f,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn smtp_delivers_headers_and_both_bodies_to_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let Some(sink) = SmtpSink::start(&dir.path().join("smtp")).await else {
        return;
    };
    let t = EmailTransport::new(TransportConfig::Smtp {
        url: sink.url(),
        timeout: Duration::from_secs(10),
    })
    .unwrap();
    let r = t.send(&message("job_1", "aki@example.com")).await;
    assert!(matches!(r.outcome, Outcome::Delivered { .. }), "{r:?}");
    assert!(!r.hard_bounce);
    let got = sink.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 1);
    let m = &got[0];
    for h in [
        "From: Weekly <weekly@kairos.test>",
        "To: aki@example.com",
        "Subject: Your week 2026-W49",
        "List-Unsubscribe: <https://kairos.test/unsubscribe?token=v1.abc>",
        "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
        "X-Kairos-Job-Id: job_1",
        "X-Kairos-Tags: topic=weekly, variant=b",
        "Message-ID: <job_1@kairos.test>",
    ] {
        assert!(m.lines().any(|l| l == h), "missing {h:?} in:\n{m}");
    }
    assert!(m.contains("multipart/alternative"), "{m}");
    assert!(
        m.contains("Hello Aki") && m.contains("<p>Hello <b>Aki</b></p>"),
        "{m}"
    );
}

#[tokio::test]
async fn smtp_550_is_a_permanent_hard_bounce_and_451_is_transient() {
    let dir = tempfile::tempdir().unwrap();
    let Some(sink) = SmtpSink::start(&dir.path().join("smtp")).await else {
        return;
    };
    let t = EmailTransport::new(TransportConfig::Smtp {
        url: sink.url(),
        timeout: Duration::from_secs(10),
    })
    .unwrap();
    let bounced = t.send(&message("job_2", "bounce@example.com")).await;
    assert!(bounced.hard_bounce);
    let f = failure(&bounced.outcome);
    assert_eq!((f.class, f.status_code), (ErrorClass::Permanent, Some(550)));
    assert!(
        !f.message.contains("bounce@example.com"),
        "no address in the log: {f:?}"
    );
    let busy = t.send(&message("job_3", "busy@example.com")).await;
    assert!(!busy.hard_bounce);
    let f = failure(&busy.outcome);
    assert_eq!((f.class, f.status_code), (ErrorClass::Transient, Some(451)));
    assert!(sink.messages().is_empty());
}

/// A local stand-in for Resend's `POST /emails`, with its documented behaviour.
#[derive(Default)]
struct Fake {
    /// Idempotency key → (body, id).
    seen: HashMap<String, (Value, String)>,
    /// Every request (body, Idempotency-Key, Authorization).
    requests: Vec<(Value, Option<String>, Option<String>)>,
    /// 429 `rate_limit_exceeded` answers still to give.
    limited: usize,
    /// Answer quota codes (`daily_quota_exceeded`) to everything.
    quota: Option<&'static str>,
    /// Successful answers say the window is used up (`ratelimit-remaining: 0`, reset 30 s).
    exhausted: bool,
}

type Shared = Arc<Mutex<Fake>>;

async fn emails(State(s): State<Shared>, h: HeaderMap, Json(body): Json<Value>) -> Response {
    let key = h
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let auth = h
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut f = s.lock().unwrap();
    f.requests.push((body.clone(), key.clone(), auth.clone()));
    fn err(status: StatusCode, name: &str, extra: &[(&'static str, &str)]) -> Response {
        let mut r = (
            status,
            Json(json!({"statusCode": status.as_u16(), "name": name,
            "message": "see name"})),
        )
            .into_response();
        for (k, v) in extra {
            r.headers_mut().insert(*k, v.parse().unwrap());
        }
        r
    }
    if auth.as_deref() != Some("Bearer re_test_key") {
        return err(StatusCode::UNAUTHORIZED, "missing_api_key", &[]);
    }
    if let Some(code) = f.quota {
        return err(
            StatusCode::TOO_MANY_REQUESTS,
            code,
            &[("retry-after", "3600")],
        );
    }
    if f.limited > 0 {
        f.limited -= 1;
        return err(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            &[
                ("retry-after", "2"),
                ("ratelimit-limit", "2"),
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "2"),
            ],
        );
    }
    if let Some(k) = &key
        && let Some((old, id)) = f.seen.get(k)
    {
        if *old != body {
            return err(StatusCode::CONFLICT, "invalid_idempotent_request", &[]);
        }
        return (StatusCode::OK, Json(json!({"id": id}))).into_response();
    }
    let id = format!("re_{}", f.seen.len() + f.requests.len());
    if let Some(k) = key {
        f.seen.insert(k, (body, id.clone()));
    }
    let mut r = (StatusCode::OK, Json(json!({"id": id}))).into_response();
    r.headers_mut()
        .insert("ratelimit-limit", "2".parse().unwrap());
    let remaining = if f.exhausted { "0" } else { "1" };
    r.headers_mut()
        .insert("ratelimit-remaining", remaining.parse().unwrap());
    r.headers_mut()
        .insert("ratelimit-reset", "30".parse().unwrap());
    r
}

async fn fake_resend() -> (String, Shared) {
    let state: Shared = Arc::default();
    let app = axum::Router::new()
        .route("/emails", axum::routing::post(emails))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

fn resend(url: &str) -> ResendSender {
    kairos_testkit::init_crypto();
    ResendSender::new(ResendConfig {
        api_url: url.into(),
        requests_per_second: 1000.0,
        ..ResendConfig::new("re_test_key")
    })
    .unwrap()
}

#[tokio::test]
async fn resend_sends_the_documented_fields_and_replays_by_idempotency_key() {
    let (url, fake) = fake_resend().await;
    let t = resend(&url);
    let m = message("job_10", "aki@example.com");
    let first = t.send(&m).await;
    let Outcome::Delivered { provider_id, .. } = &first.outcome else {
        panic!("{first:?}");
    };
    // A retry of the same job (the answer was lost): the same id, no second mail.
    let again = t.send(&m).await;
    let Outcome::Delivered {
        provider_id: p2, ..
    } = &again.outcome
    else {
        panic!("{again:?}");
    };
    assert_eq!(provider_id, p2);
    let f = fake.lock().unwrap();
    assert_eq!(f.seen.len(), 1, "one mail at the provider");
    let (body, key, _) = &f.requests[0];
    assert_eq!(key.as_deref(), Some("job_10"));
    assert_eq!(body["from"], "Weekly <weekly@kairos.test>");
    assert_eq!(body["to"], json!(["aki@example.com"]));
    assert_eq!(body["subject"], "Your week 2026-W49");
    assert_eq!(body["html"], "<p>Hello <b>Aki</b></p>");
    assert_eq!(body["text"], "Hello Aki");
    assert_eq!(
        body["headers"]["List-Unsubscribe-Post"],
        "List-Unsubscribe=One-Click"
    );
    assert_eq!(
        body["tags"],
        json!([{"name": "topic", "value": "weekly"}, {"name": "variant", "value": "b"}])
    );
}

#[tokio::test]
async fn resend_changed_payload_under_the_same_key_is_a_permanent_409() {
    let (url, _fake) = fake_resend().await;
    let t = resend(&url);
    let mut m = message("job_11", "aki@example.com");
    assert!(matches!(
        t.send(&m).await.outcome,
        Outcome::Delivered { .. }
    ));
    m.subject = "Changed".into();
    let r = t.send(&m).await;
    let f = failure(&r.outcome);
    assert_eq!((f.class, f.status_code), (ErrorClass::Permanent, Some(409)));
    assert!(f.message.contains("invalid_idempotent_request"), "{f:?}");
}

#[tokio::test]
async fn resend_rate_limit_waits_without_spending_an_attempt() {
    let (url, fake) = fake_resend().await;
    fake.lock().unwrap().limited = 1;
    let t = resend(&url);
    let r = t.send(&message("job_12", "aki@example.com")).await;
    let f = failure(&r.outcome);
    // RateLimited: the executor retries after retry-after and refunds the attempt.
    assert_eq!(f.class, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(f.status_code, Some(429));
}

#[tokio::test]
async fn resend_daily_quota_pauses_the_transport_and_later_sends_do_not_call_resend() {
    let (url, fake) = fake_resend().await;
    fake.lock().unwrap().quota = Some("daily_quota_exceeded");
    let t = resend(&url);
    let r = t.send(&message("job_13", "aki@example.com")).await;
    let f = failure(&r.outcome);
    assert_eq!(f.class, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, Some(Duration::from_secs(3600)));
    // Paused: the next send is rate-limited at once, without a request.
    let r2 = t.send(&message("job_14", "other@example.com")).await;
    assert_eq!(failure(&r2.outcome).class, ErrorClass::RateLimited);
    assert_eq!(fake.lock().unwrap().requests.len(), 1);
}

#[tokio::test]
async fn resend_pacing_turns_a_send_over_the_rate_into_a_rate_limited_retry() {
    let (url, fake) = fake_resend().await;
    kairos_testkit::init_crypto();
    // One request per 10 s; a send that would wait longer than its 1 s budget is not sent
    // but answered rate-limited (the executor retries it without spending an attempt).
    let t = ResendSender::new(ResendConfig {
        api_url: url,
        requests_per_second: 0.1,
        timeout: Duration::from_secs(1),
        ..ResendConfig::new("re_test_key")
    })
    .unwrap();
    let first = t.send(&message("job_20", "aki@example.com")).await;
    assert!(
        matches!(first.outcome, Outcome::Delivered { .. }),
        "{first:?}"
    );
    let second = t.send(&message("job_21", "aki@example.com")).await;
    let f = failure(&second.outcome);
    assert_eq!(f.class, ErrorClass::RateLimited);
    assert!(
        f.retry_after.is_some_and(|d| d <= Duration::from_secs(10)),
        "{f:?}"
    );
    assert_eq!(
        fake.lock().unwrap().requests.len(),
        1,
        "the paced send made no request"
    );
}

#[tokio::test]
async fn file_transport_writes_one_eml_per_job_and_a_retry_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("outbox");
    let t = EmailTransport::new(TransportConfig::File { dir: out.clone() }).unwrap();
    let m = message("job_30", "aki@example.com");
    assert!(matches!(
        t.send(&m).await.outcome,
        Outcome::Delivered { .. }
    ));
    assert!(matches!(
        t.send(&m).await.outcome,
        Outcome::Delivered { .. }
    ));
    let files: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(files.len(), 1);
    let eml = std::fs::read_to_string(out.join("job_30.eml")).unwrap();
    assert!(eml.lines().any(|l| l == "To: aki@example.com"));
    // A retry carries the same Message-ID: it is the job's, not random.
    assert!(
        eml.lines().any(|l| l == "Message-ID: <job_30@kairos.test>"),
        "{eml}"
    );
    assert!(
        eml.lines()
            .any(|l| l == "List-Unsubscribe-Post: List-Unsubscribe=One-Click")
    );
    // A bad address is permanent and names no address.
    let bad = t.send(&message("job_31", "not an address")).await;
    let f = failure(&bad.outcome);
    assert_eq!(f.class, ErrorClass::Permanent);
    assert!(!f.message.contains("not an address"));
}

/// Issue 33, finding 6: an outbox message (address, body, working unsubscribe link) is
/// readable by its owner only — the folder 0700 and each file 0600, also when the folder was
/// made beforehand with wider bits (a 022 umask) and a file was left behind by a crash.
#[cfg(unix)]
#[tokio::test]
async fn file_transport_outbox_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("outbox");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    let leftover = out.join(".job_32.eml.tmp");
    std::fs::write(&leftover, b"half").unwrap();
    std::fs::set_permissions(&leftover, std::fs::Permissions::from_mode(0o644)).unwrap();
    let t = EmailTransport::new(TransportConfig::File { dir: out.clone() }).unwrap();
    for id in ["job_32", "job_33"] {
        let r = t.send(&message(id, "aki@example.com")).await;
        assert!(matches!(r.outcome, Outcome::Delivered { .. }), "{id}");
    }
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&out), 0o700, "the outbox folder");
    for id in ["job_32", "job_33"] {
        assert_eq!(mode(&out.join(format!("{id}.eml"))), 0o600, "{id}.eml");
    }
}

#[tokio::test]
async fn resend_ratelimit_remaining_zero_holds_the_next_request_until_the_reset() {
    let (url, fake) = fake_resend().await;
    fake.lock().unwrap().exhausted = true;
    kairos_testkit::init_crypto();
    let t = ResendSender::new(ResendConfig {
        api_url: url,
        requests_per_second: 1000.0,
        timeout: Duration::from_secs(1),
        ..ResendConfig::new("re_test_key")
    })
    .unwrap();
    let first = t.send(&message("job_40", "aki@example.com")).await;
    assert!(
        matches!(first.outcome, Outcome::Delivered { .. }),
        "{first:?}"
    );
    // The answer said 0 remaining, reset in 30 s: the next send waits for the window (longer
    // than its 1 s budget, so it is a rate-limited retry) and does not call Resend.
    let second = t.send(&message("job_41", "aki@example.com")).await;
    let f = failure(&second.outcome);
    assert_eq!(f.class, ErrorClass::RateLimited);
    assert!(
        f.retry_after.is_some_and(|d| d > Duration::from_secs(20)),
        "{f:?}"
    );
    assert_eq!(fake.lock().unwrap().requests.len(), 1);
}
