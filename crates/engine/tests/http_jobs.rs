//! `http` jobs end to end on the manual clock against a real local HTTP server (the
//! `TestReceiver` on 127.0.0.1:0): non-2xx is never a success, retries by error class
//!, `Retry-After`, hard timeouts and the budget, secrets kept out of payloads.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_core::{Clock, JobState};
use kairos_engine::ops::{HTTP_TARGET_KEY, HttpSpec, NewJob};
use kairos_engine::{Kairos, OpsError, OpsErrorKind};
use kairos_testkit::{Reply, TestReceiver, verify_standard_webhook};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn spec(url: &str) -> HttpSpec {
    HttpSpec {
        url: url.into(),
        method: Some("POST".into()),
        headers: Some(BTreeMap::from([("X-Run".to_string(), "daily".to_string())])),
        body: Some(serde_json::json!({"task": "build-digest"})),
        timeout: Some("2m".into()),
        ..Default::default()
    }
}

async fn enqueue(k: &Kairos, http: HttpSpec, retry: Option<serde_json::Value>) -> kairos_core::Job {
    let (job, created) = k
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: http.into_parts(),
            retry: retry.map(|r| serde_json::from_value(r).expect("retry spec")),
            ..Default::default()
        })
        .await
        .expect("enqueue http job");
    assert!(created);
    job
}

fn field_of(e: &OpsError) -> String {
    match e.kind() {
        OpsErrorKind::Invalid { field, .. } => field.clone(),
        other => panic!("expected invalid input, got {other:?}: {e}"),
    }
}

/// Asserts `run_at` is `base` after `from` plus at most 10 % jitter (jitter only adds).
fn assert_wait(run_at: DateTime<Utc>, from: DateTime<Utc>, base_s: i64) {
    let min = from + secs(base_s);
    let max = from + ms(base_s * 1100);
    assert!(
        run_at >= min && run_at <= max,
        "run_at {run_at} not in [{min}, {max}]"
    );
}

/// 503, 503, then 200 — the job succeeds on attempt 3 after waits of 15 s and
/// 45 s (the transient ladder), and every attempt records its status code and response.
#[tokio::test]
async fn http_503_503_then_200_succeeds_with_3_attempts_and_statuses_recorded() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(503).with_body(r#"{"error":"high demand"}"#),
        Reply::status(503).with_body("busy"),
    ]);
    rx.set_default(Reply::status(200).with_body(r#"{"built":true}"#));
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = enqueue(&h.kairos, spec(&rx.url("/api/cron/digest")), None).await;
    assert_eq!(
        h.kairos.kinds().retry_of(&job).max_attempts(),
        4,
        "the http kind's default policy"
    );

    let r = h.exec(t0).await;
    assert_eq!((r.claimed, r.retried), (1, 1), "{r:?}");
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t0, 15);
    assert_eq!(h.exec(j.run_at - ms(1)).await.claimed, 0, "not before 15 s");
    let t1 = j.run_at;
    assert_eq!(h.exec(t1).await.retried, 1);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t1, 45);
    let r = h.exec(j.run_at).await;
    assert_eq!(r.succeeded, 1, "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);

    let a = h.attempts(&job.id).await;
    let statuses: Vec<_> = a.iter().map(|a| a.status_code).collect();
    assert_eq!(statuses, vec![Some(503), Some(503), Some(200)]);
    let outcomes: Vec<_> = a.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["failed", "failed", "succeeded"]);
    assert_eq!(a[0].error_class.map(|c| c.as_str()), Some("transient"));
    assert_eq!(a[0].response.as_deref(), Some(r#"{"error":"high demand"}"#));
    assert_eq!(a[1].response.as_deref(), Some("busy"));
    assert_eq!(a[2].response.as_deref(), Some(r#"{"built":true}"#));

    let got = rx.received();
    assert_eq!(got.len(), 3);
    for req in &got {
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("POST", "/api/cron/digest")
        );
        assert_eq!(req.header("x-run"), Some("daily"));
        assert_eq!(req.header("content-type"), Some("application/json"));
        let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(body, serde_json::json!({"task": "build-digest"}));
    }
}

/// a 400 cannot be fixed by waiting — 3 attempts, 1 s then 2 s apart, then dead; no
/// fourth request.
#[tokio::test]
async fn http_400_is_permanent_three_attempts_then_dead() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::status(400).with_body(r#"{"error":"bad date"}"#));
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = enqueue(&h.kairos, spec(&rx.url("/run")), None).await;

    assert_eq!(h.exec(t0).await.retried, 1);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t0, 1);
    let t1 = j.run_at;
    assert_eq!(h.exec(t1).await.retried, 1);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t1, 2);
    let r = h.exec(j.run_at).await;
    assert_eq!(r.dead, 1, "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Dead);
    assert_eq!(h.exec(j.run_at + mins(60)).await.claimed, 0);
    assert_eq!(rx.count(), 3);
    let a = h.attempts(&job.id).await;
    assert!(a.iter().all(|a| a.status_code == Some(400)
        && a.error_class.map(|c| c.as_str()) == Some("permanent")
        && a.response.as_deref() == Some(r#"{"error":"bad date"}"#)));
}

/// a target that hangs past the job's timeout is a transient failure (retried), not a
/// hung worker; the next attempt succeeds.
#[tokio::test]
async fn http_hang_past_the_timeout_is_a_transient_failure() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::ok().with_delay(Duration::from_secs(5))]);
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let mut s = spec(&rx.url("/slow"));
    s.timeout = Some("300ms".into());
    let job = enqueue(&h.kairos, s, None).await;

    let r = h.exec(t0).await;
    assert_eq!(r.retried, 1, "{r:?}");
    let a = h.attempts(&job.id).await;
    assert_eq!(a[0].error_class.map(|c| c.as_str()), Some("transient"));
    assert!(
        a[0].error
            .as_deref()
            .unwrap_or_default()
            .contains("timed out after 300ms"),
        "{:?}",
        a[0].error
    );
    assert_eq!(a[0].status_code, None);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t0, 15);
    assert_eq!(h.exec(j.run_at).await.succeeded, 1);
}

/// no answer outside 2xx is ever a success — a redirect, a 404, a 410 and a 500 all
/// end dead (one attempt allowed), each with its status recorded.
#[tokio::test]
async fn http_non_2xx_is_never_a_success() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    for status in [301u16, 404, 410, 500, 503] {
        let reply = Reply::status(status)
            .with_header("location", "http://example.com/")
            .with_body("nope");
        rx.respond_with(vec![reply]);
        let job = enqueue(
            &h.kairos,
            spec(&rx.url(&format!("/s{status}"))),
            Some(serde_json::json!({"max_attempts": 1})),
        )
        .await;
        let r = h.exec(h.now()).await;
        assert_eq!((r.succeeded, r.dead), (0, 1), "{status}: {r:?}");
        let a = h.attempts(&job.id).await;
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].outcome, "failed", "{status}");
        assert_eq!(a[0].status_code, Some(i32::from(status)));
        assert_eq!(a[0].response.as_deref(), Some("nope"));
    }
    // 2xx other than 200 is a success.
    rx.respond_with(vec![Reply::status(204)]);
    let job = enqueue(&h.kairos, spec(&rx.url("/ok")), None).await;
    assert_eq!(h.exec(h.now()).await.succeeded, 1);
    assert_eq!(h.attempts(&job.id).await[0].status_code, Some(204));
}

/// `Retry-After` is honoured, in seconds and as an HTTP date read against the injected
/// clock; jitter comes after it, never before.
#[tokio::test]
async fn http_retry_after_seconds_and_date_are_honoured() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    rx.respond_with(vec![Reply::status(429).with_header("Retry-After", "120")]);
    let job = enqueue(&h.kairos, spec(&rx.url("/a")), None).await;
    assert_eq!(h.exec(t0).await.retried, 1);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, t0, 120);
    assert_eq!(
        h.exec(t0 + secs(119)).await.claimed,
        0,
        "not at the policy's 15 s"
    );
    assert_eq!(h.exec(j.run_at).await.succeeded, 1);

    let now = h.now();
    // An HTTP date has whole seconds, and `now` (the previous run_at, jitter included) may
    // not: the wait is measured from the whole second the date was written from.
    let whole = now - ms(i64::from(now.timestamp_subsec_millis()));
    let date = (whole + secs(300))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    rx.respond_with(vec![Reply::status(503).with_header("Retry-After", date)]);
    let job = enqueue(&h.kairos, spec(&rx.url("/b")), None).await;
    assert_eq!(h.exec(now).await.retried, 1);
    let j = h.job(&job.id).await;
    assert_wait(j.run_at, whole, 300);
}

/// Secrets never sit in a job payload: a bearer token is sent as `Authorization`, a signing
/// secret as valid Standard Webhooks headers (`webhook-id` = the job id); the payload holds
/// only the target id and the origin.
#[tokio::test]
async fn http_bearer_and_signature_are_sent_but_kept_out_of_payloads() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let mut s = spec(&rx.url("/bearer"));
    s.bearer_token = Some("tok_s3cr3t".into());
    let job = enqueue(&h.kairos, s, None).await;
    let payload = job.payload.to_string();
    assert!(!payload.contains("tok_s3cr3t"), "{payload}");
    assert!(
        job.payload[HTTP_TARGET_KEY]
            .as_str()
            .unwrap_or_default()
            .starts_with("ht_")
    );
    // The target id and the origin called (whose limits it shares), nothing else.
    assert_eq!(job.payload.as_object().map(|o| o.len()), Some(2));
    assert_eq!(
        job.payload["http_origin"],
        serde_json::json!(format!("http://{}", rx.addr()))
    );
    assert_eq!(h.exec(t0).await.succeeded, 1);
    assert_eq!(
        rx.last().unwrap().header("authorization"),
        Some("Bearer tok_s3cr3t")
    );

    let mut s = spec(&rx.url("/signed"));
    s.signing_secret = Some(SECRET.into());
    let job = enqueue(&h.kairos, s, None).await;
    assert!(!job.payload.to_string().contains("whsec_"));
    assert_eq!(h.exec(t0).await.succeeded, 1);
    let req = rx.last().unwrap();
    assert_eq!(req.header("webhook-id"), Some(job.id.as_str()));
    assert!(verify_standard_webhook(SECRET, &req, t0.timestamp()));

    // An Authorization header given as a header is kept out of the payload as well.
    let mut s = spec(&rx.url("/header"));
    s.headers = Some(BTreeMap::from([(
        "Authorization".to_string(),
        "Basic dXNlcjpwYXNz".to_string(),
    )]));
    let job = enqueue(&h.kairos, s, None).await;
    assert!(!job.payload.to_string().contains("dXNlcjpwYXNz"));
    assert_eq!(h.exec(t0).await.succeeded, 1);
    assert_eq!(
        rx.last().unwrap().header("authorization"),
        Some("Basic dXNlcjpwYXNz")
    );
}

/// a policy whose worst case exceeds the deadline is refused when saved, naming
/// `retry` with the arithmetic; nothing is stored. Within the deadline it is accepted.
#[tokio::test]
async fn http_budget_over_the_deadline_is_rejected_with_the_arithmetic() {
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let mut s = spec("http://127.0.0.1:9/x");
    s.timeout = Some("5m".into());
    s.deadline = Some("15m".into());
    let e = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: s.clone().into_parts(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(field_of(&e), "retry");
    assert!(e.message().contains("4 attempts × 5m timeout"), "{e}");
    assert!(e.message().contains("exceeds the deadline of 15m"), "{e}");
    assert!(h.jobs().await.is_empty(), "nothing stored");

    let mut sched = new_schedule("nightly", "http");
    sched.cron = Some("0 6 * * *".into());
    sched.parts = s.clone().into_parts();
    let e = h.kairos.schedule_create(sched).await.unwrap_err();
    assert_eq!(field_of(&e), "retry");

    // With the default 2 min timeout the delays alone fit 15 min (4 × 2m + 15s + 45s + 2m15s
    // = 11m15s), but each wait may be a 15-minute Retry-After plus jitter: refused, saying so.
    s.timeout = None;
    let e = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: s.clone().into_parts(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(field_of(&e), "retry");
    assert!(e.message().contains("Retry-After of up to 15m"), "{e}");
    // Honouring a Retry-After of at most 1 minute fits: 4 × 2m + 1m6s + 1m6s + 2m28.5s.
    enqueue(
        &h.kairos,
        s,
        Some(serde_json::json!({"retry_after_cap": "1m"})),
    )
    .await;
}

/// Bad `http` input is refused with the field named, and nothing is stored.
#[tokio::test]
async fn http_bad_input_names_the_field() {
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let try_job = |kind: &str, http: Option<HttpSpec>, payload: Option<serde_json::Value>| {
        let k = h.kairos.clone();
        let kind = kind.to_string();
        async move {
            k.job_enqueue(NewJob {
                kind: Some(kind),
                parts: http.map(HttpSpec::into_parts).unwrap_or_default(),
                payload,
                ..Default::default()
            })
            .await
            .unwrap_err()
        }
    };
    let ok = spec("http://127.0.0.1:9/x");
    assert_eq!(field_of(&try_job("http", None, None).await), "http");
    let e = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("webhook".into()),
            webhook: Some(kairos_engine::ops::WebhookTarget {
                url: "http://127.0.0.1:9/hook".into(),
                secret: SECRET.into(),
            }),
            parts: ok.clone().into_parts(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(field_of(&e), "http");
    let payload = Some(serde_json::json!({"a": 1}));
    assert_eq!(
        field_of(&try_job("http", Some(ok.clone()), payload).await),
        "payload"
    );
    let bad = |f: fn(&mut HttpSpec)| {
        let mut s = ok.clone();
        f(&mut s);
        Some(s)
    };
    for (s, field) in [
        (bad(|s| s.url = "ftp://x/y".into()), "http.url"),
        (bad(|s| s.url = "not a url".into()), "http.url"),
        (bad(|s| s.method = Some("GE T".into())), "http.method"),
        (bad(|s| s.timeout = Some("0s".into())), "http.timeout"),
        (bad(|s| s.timeout = Some("1h".into())), "http.timeout"),
        (bad(|s| s.deadline = Some("soon".into())), "http.deadline"),
        (
            bad(|s| s.signing_secret = Some("nope".into())),
            "http.signing_secret",
        ),
        (
            bad(|s| {
                s.bearer_token = Some("a".into());
                s.signing_secret = Some(SECRET.into());
            }),
            "http.bearer_token",
        ),
        (
            bad(|s| s.headers = Some(BTreeMap::from([("x".into(), "a\nb".into())]))),
            "http.headers.x",
        ),
    ] {
        assert_eq!(field_of(&try_job("http", s, None).await), field);
    }
    assert!(h.jobs().await.is_empty());

    // Without KAIROS_ALLOW_PRIVATE_TARGETS a loopback target is refused when saved.
    let strict = Kairos::new(
        h.store.clone(),
        h.clock.clone() as Arc<dyn Clock>,
        h.engine.wake(),
        h.engine.kinds(),
    );
    let e = strict
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: ok.into_parts(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(field_of(&e), "http.url");
}

/// A schedule of kind `http` calls its target at each firing; its jobs share one stored
/// target.
#[tokio::test]
async fn http_schedule_calls_the_target_each_firing() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-10-20T20:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let mut s = new_schedule("digest-clock", "http");
    s.cron = Some("0 6 * * *".into());
    s.timezone = Some("Asia/Tokyo".into());
    s.period = Some("day".into());
    s.parts = (HttpSpec {
        url: rx.url("/api/cron/digest"),
        method: Some("GET".into()),
        ..Default::default()
    })
    .into_parts();
    let sch = h.kairos.schedule_create(s).await.expect("schedule");
    assert!(sch.payload[HTTP_TARGET_KEY].is_string());
    for day in 0..2 {
        let at = t("2026-10-20T21:00:00Z") + chrono::Duration::days(day);
        h.sched(at).await;
        assert_eq!(h.exec(at).await.succeeded, 1);
    }
    let jobs = h.schedule_jobs(&sch.id).await;
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].payload, jobs[1].payload);
    let got = rx.received();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|r| r.method == "GET" && r.body.is_empty()));
}
