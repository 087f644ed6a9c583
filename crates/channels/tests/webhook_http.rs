//! The webhook sender against a real HTTP server (the testkit's capturing receiver).

use chrono::{DateTime, TimeZone, Utc};
use kairos_channels::{WebhookConfig, WebhookSecret, WebhookSender};
use kairos_core::{ErrorClass, Failure, Outcome};
use kairos_testkit::{Reply, TestReceiver, refused_url, verify_standard_webhook};
use std::time::{Duration, Instant};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const BODY: &[u8] = br#"{"event":"report.ready","id":"rep_1"}"#;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 8, 0, 0).unwrap()
}

fn secret() -> WebhookSecret {
    WebhookSecret::parse(SECRET).unwrap()
}

/// A sender allowed to reach the receiver on 127.0.0.1.
fn sender() -> WebhookSender {
    sender_with(|_| {})
}

fn sender_with(f: impl FnOnce(&mut WebhookConfig)) -> WebhookSender {
    let mut config = WebhookConfig {
        allow_private_targets: true,
        ..WebhookConfig::default()
    };
    f(&mut config);
    WebhookSender::new(config).unwrap()
}

#[track_caller]
fn failure(outcome: Outcome) -> Failure {
    match outcome {
        Outcome::Failed(f) => {
            assert!(
                !f.message.contains(SECRET) && !f.message.contains("MfKQ9r8G"),
                "{f:?}"
            );
            f
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn delivered_post_carries_standard_webhook_headers_and_a_valid_signature() {
    let rx = TestReceiver::start().await;
    let outcome = sender()
        .send(&rx.url("/hooks/in"), &secret(), "job_123", now(), BODY)
        .await;
    assert_eq!(
        outcome,
        Outcome::Delivered {
            provider_id: None,
            status_code: Some(200),
            response: Some(r#"{"ok":true}"#.into()),
        }
    );
    let got = rx.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/hooks/in");
    assert_eq!(r.body, BODY);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("webhook-id"), Some("job_123"));
    assert_eq!(
        r.header("webhook-timestamp"),
        Some(now().timestamp().to_string().as_str())
    );
    assert!(r.header("webhook-signature").unwrap().starts_with("v1,"));
    assert!(
        r.header("user-agent")
            .unwrap()
            .starts_with("kairos-webhooks/")
    );
    assert!(verify_standard_webhook(SECRET, r, now().timestamp()));
    // The channel's own verifier agrees with the independent one.
    let sig = r.header("webhook-signature").unwrap();
    kairos_channels::verify(
        &[secret()],
        "job_123",
        now().timestamp(),
        BODY,
        sig,
        now().timestamp(),
        300,
    )
    .unwrap();
    // And a different secret does not verify.
    assert!(!verify_standard_webhook(
        &WebhookSecret::generate([3; 32]).expose_whsec(),
        r,
        now().timestamp()
    ));
}

#[tokio::test]
async fn webhook_id_is_identical_across_retries_of_one_message() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(500)]);
    let s = sender();
    let first = s
        .send(&rx.url("/"), &secret(), "job_same", now(), BODY)
        .await;
    assert_eq!(failure(first).class, ErrorClass::Transient);
    let later = now() + chrono::Duration::minutes(1);
    let second = s
        .send(&rx.url("/"), &secret(), "job_same", later, BODY)
        .await;
    assert!(matches!(second, Outcome::Delivered { .. }), "{second:?}");
    assert_eq!(rx.ids_seen().get("job_same"), Some(&2));
    let got = rx.received();
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    assert!(verify_standard_webhook(SECRET, &got[1], later.timestamp()));
}

#[tokio::test]
async fn status_503_with_retry_after_is_transient_and_honoured() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(503)
            .with_header("Retry-After", "7")
            .with_body("busy"),
    ]);
    let f = failure(
        sender()
            .send(&rx.url("/"), &secret(), "job_1", now(), BODY)
            .await,
    );
    assert_eq!(f.class, ErrorClass::Transient);
    assert_eq!(f.retry_after, Some(Duration::from_secs(7)));
    assert_eq!(f.status_code, Some(503));
    assert_eq!(f.response.as_deref(), Some("busy"));
    assert!(!f.disable_endpoint);
}

#[tokio::test]
async fn retry_after_http_date_is_read_relative_to_now_and_capped() {
    let rx = TestReceiver::start().await;
    let in_90s = httpdate::fmt_http_date((now() + chrono::Duration::seconds(90)).into());
    rx.respond_with(vec![
        Reply::status(429).with_header("Retry-After", in_90s),
        Reply::status(429).with_header("Retry-After", "999999"),
    ]);
    let s = sender_with(|c| c.retry_after_cap = Duration::from_secs(600));
    let f = failure(s.send(&rx.url("/"), &secret(), "job_1", now(), BODY).await);
    assert_eq!(f.class, ErrorClass::Transient);
    assert_eq!(f.retry_after, Some(Duration::from_secs(90)));
    let f = failure(s.send(&rx.url("/"), &secret(), "job_1", now(), BODY).await);
    assert_eq!(f.retry_after, Some(Duration::from_secs(600)));
}

#[tokio::test]
async fn status_400_is_permanent() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(400).with_body(r#"{"error":"bad payload"}"#),
    ]);
    let f = failure(
        sender()
            .send(&rx.url("/"), &secret(), "job_1", now(), BODY)
            .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
    assert_eq!(f.status_code, Some(400));
    assert_eq!(f.response.as_deref(), Some(r#"{"error":"bad payload"}"#));
    assert!(!f.disable_endpoint);
    assert_eq!(f.retry_after, None);
}

#[tokio::test]
async fn status_410_disables_the_endpoint() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(410)]);
    let f = failure(
        sender()
            .send(&rx.url("/"), &secret(), "job_1", now(), BODY)
            .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
    assert_eq!(f.status_code, Some(410));
    assert!(f.disable_endpoint);
    assert_eq!(f.response, None);
}

#[tokio::test]
async fn other_2xx_is_delivered() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(204)]);
    let outcome = sender()
        .send(&rx.url("/"), &secret(), "job_1", now(), BODY)
        .await;
    assert_eq!(
        outcome,
        Outcome::Delivered {
            provider_id: None,
            status_code: Some(204),
            response: None
        }
    );
}

#[tokio::test]
async fn response_excerpt_is_truncated_on_a_character_boundary() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(500).with_body("é".repeat(10_000))]);
    let s = sender_with(|c| c.max_response_bytes = 11);
    let f = failure(s.send(&rx.url("/"), &secret(), "job_1", now(), BODY).await);
    assert_eq!(f.response.as_deref(), Some("ééééé"));
}

#[tokio::test]
async fn slow_receiver_times_out_as_transient() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::ok().with_delay(Duration::from_secs(30))]);
    let s = sender_with(|c| c.timeout = Duration::from_millis(300));
    let started = Instant::now();
    let f = failure(s.send(&rx.url("/"), &secret(), "job_1", now(), BODY).await);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(f.class, ErrorClass::Transient);
    assert!(
        f.message.contains("timed out") && f.message.contains("300ms"),
        "{}",
        f.message
    );
    assert_eq!(f.status_code, None);
    assert_eq!(rx.count(), 1);
}

#[tokio::test]
async fn connection_refused_is_transient() {
    let url = refused_url("/hook").await;
    let f = failure(sender().send(&url, &secret(), "job_1", now(), BODY).await);
    assert_eq!(f.class, ErrorClass::Transient);
    assert!(f.message.contains("connection refused"), "{}", f.message);
    assert!(
        !f.message.contains("/hook"),
        "the URL is not in the message: {}",
        f.message
    );
}

#[tokio::test]
async fn loopback_target_is_refused_without_the_private_allowance() {
    let rx = TestReceiver::start().await;
    let s = WebhookSender::new(WebhookConfig::default()).unwrap();
    for url in [rx.url("/"), rx.url("/").replace("127.0.0.1", "localhost")] {
        let f = failure(s.send(&url, &secret(), "job_1", now(), BODY).await);
        assert_eq!(f.class, ErrorClass::Permanent, "{url}");
        // "target resolves to a non-public address …", "target host localhost …"
        assert!(f.message.starts_with("target "), "{}", f.message);
        assert!(
            f.message
                .contains("; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow"),
            "{}",
            f.message
        );
        assert!(!f.message.contains("127.0.0.1"), "{}", f.message);
    }
    assert!(
        !rx.wait_for(1, Duration::from_millis(200)).await,
        "no request reached the receiver"
    );
}

#[tokio::test]
async fn redirect_is_not_followed() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(302).with_header("Location", rx.url("/elsewhere")),
    ]);
    let f = failure(
        sender()
            .send(&rx.url("/start"), &secret(), "job_1", now(), BODY)
            .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
    assert_eq!(f.status_code, Some(302));
    assert!(f.message.contains("redirect"), "{}", f.message);
    assert!(!rx.wait_for(2, Duration::from_millis(200)).await);
    assert_eq!(
        rx.received()
            .iter()
            .map(|r| r.path.as_str())
            .collect::<Vec<_>>(),
        ["/start"]
    );
}

#[tokio::test]
async fn invalid_urls_and_schemes_are_permanent() {
    let s = sender();
    for url in [
        "not a url",
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "http://",
    ] {
        let f = failure(s.send(url, &secret(), "job_1", now(), BODY).await);
        assert_eq!(f.class, ErrorClass::Permanent, "{url}: {f:?}");
    }
}

#[tokio::test]
async fn invalid_message_id_is_permanent_not_a_panic() {
    let rx = TestReceiver::start().await;
    let f = failure(
        sender()
            .send(&rx.url("/"), &secret(), "job\n1", now(), BODY)
            .await,
    );
    assert_eq!(f.class, ErrorClass::Permanent);
    assert_eq!(rx.count(), 0);
}
