//! Webhooks end to end on the manual clock: the engine's `webhook` handler posting to the
//! real `TestReceiver`, retries, `Retry-After`, 410 Gone, signatures, and per-channel
//! independence.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Failure, Job, JobKind, JobState, Outcome, RetryPolicy};
use kairos_engine::Handler;
use kairos_engine::ops::WebhookTarget;
use kairos_store::JobInsert;
use kairos_testkit::{Reply, TestReceiver, verify_standard_webhook};
use std::sync::Arc;

/// S0-13 / S0-4 / S3-3 step 3: a webhook answered 503 once then 200 — the first run is a
/// retried failure (attempt 1 failed with status 503), the run after the delay succeeds;
/// both requests carry `webhook-id` = the job id, the same body, and a valid Standard
/// Webhooks signature timestamped by the manual clock.
#[tokio::test]
async fn webhook_503_then_200_is_retried_with_same_id_and_valid_signatures() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(503).with_body("busy")]);
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = h
        .enqueue_webhook(&rx.url("/hook"), serde_json::json!({"order": 42}))
        .await;

    let r = h.exec(t0).await;
    assert_eq!((r.claimed, r.retried), (1, 1), "{r:?}");
    let attempts = h.attempts(&job.id).await;
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].attempt, 1);
    assert_eq!(attempts[0].outcome, "failed");
    assert_eq!(attempts[0].status_code, Some(503));
    assert_eq!(
        attempts[0].error_class.map(|c| c.as_str()),
        Some("transient")
    );
    let waiting = h.job(&job.id).await;
    assert_eq!(waiting.state, JobState::Available);
    assert!(waiting.run_at >= t0 + mins(1), "{}", waiting.run_at);

    assert_eq!(h.exec(waiting.run_at - ms(1)).await.claimed, 0);
    assert_eq!(rx.count(), 1);
    let t1 = waiting.run_at;
    let r = h.exec(t1).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);
    let attempts = h.attempts(&job.id).await;
    assert_eq!(attempts[1].status_code, Some(200));

    let got = rx.received();
    assert_eq!(got.len(), 2);
    for (req, now) in got.iter().zip([t0, t1]) {
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/hook");
        assert_eq!(req.header("webhook-id"), Some(job.id.as_str()));
        assert_eq!(
            req.header("webhook-timestamp"),
            Some(now.timestamp().to_string().as_str())
        );
        assert!(
            verify_standard_webhook(SECRET, req, now.timestamp()),
            "signature of the request at {now}"
        );
        // Signed for this secret only.
        assert!(!verify_standard_webhook(
            "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            req,
            now.timestamp()
        ));
    }
    assert_eq!(
        got[0].body, got[1].body,
        "the body is identical on every retry"
    );
    let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["id"], job.id.as_str());
    assert_eq!(body["data"], serde_json::json!({"order": 42}));
    assert_eq!(rx.ids_seen()[&job.id], 2);
}

/// S4-3 (`Retry-After` honoured): a 503 with `Retry-After: 120` postpones the retry to at
/// least 120 s, longer than the policy's 1 minute.
#[tokio::test]
async fn webhook_503_with_retry_after_120_waits_at_least_120s() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(503).with_header("Retry-After", "120")]);
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = h
        .enqueue_webhook(&rx.url("/hook"), serde_json::json!({}))
        .await;

    assert_eq!(h.exec(t0).await.retried, 1);
    let waiting = h.job(&job.id).await;
    assert!(waiting.run_at >= t0 + secs(120), "{}", waiting.run_at);
    assert!(
        waiting.run_at <= t0 + secs(132),
        "at most 10 % jitter: {}",
        waiting.run_at
    );

    // Where the policy alone would have retried, and just before 120 s: nothing.
    assert_eq!(h.exec(t0 + mins(1)).await.claimed, 0);
    assert_eq!(h.exec(t0 + secs(120) - ms(1)).await.claimed, 0);
    assert_eq!(rx.count(), 1);
    let r = h.exec(waiting.run_at).await;
    assert_eq!(r.succeeded, 1, "{r:?}");
    assert_eq!(rx.count(), 2);
}

/// S0-13 with DESIGN "Channels" (410 disables the endpoint): a 410 Gone disables the endpoint; the
/// next job to it is `skipped` with reason `endpoint_disabled` and no request reaches the
/// receiver.
#[tokio::test]
async fn webhook_410_disables_the_endpoint_and_later_jobs_are_skipped_without_a_request() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(410)]);
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let first = h
        .enqueue_webhook(&rx.url("/gone"), serde_json::json!({"n": 1}))
        .await;

    let r = h.exec(t0).await;
    assert_eq!(r.claimed, 1);
    assert_eq!(rx.count(), 1);
    let a = &h.attempts(&first.id).await[0];
    assert_eq!((a.outcome.as_str(), a.status_code), ("failed", Some(410)));
    assert_eq!(a.error_class.map(|c| c.as_str()), Some("permanent"));
    let ep_id = first.endpoint_id.clone().unwrap();
    let ep = h.store.endpoint_get(&ep_id).await.unwrap().unwrap();
    assert!(ep.disabled_at.is_some(), "{ep:?}");

    // A new job to the same target posts to the same (now disabled) endpoint.
    let t1 = t0 + secs(10);
    h.clock.set(t1);
    let second = h
        .enqueue_webhook(&rx.url("/gone"), serde_json::json!({"n": 2}))
        .await;
    assert_eq!(second.endpoint_id.as_deref(), Some(ep_id.as_str()));
    let r = h.exec(t1).await;
    assert_eq!((r.claimed, r.skipped), (1, 1), "{r:?}");
    let skipped = h.job(&second.id).await;
    assert_eq!(skipped.state, JobState::Skipped);
    assert_eq!(skipped.reason.as_deref(), Some("endpoint_disabled"));
    assert_eq!(rx.count(), 1, "no request reached the receiver");

    // The 410'd job itself is final at once (dead, for the DLQ): it is never retried.
    let first_now = h.job(&first.id).await;
    assert_eq!(first_now.state, JobState::Dead, "a 410 is not retried");
    assert_eq!(h.exec(t0 + secs(86_400)).await.claimed, 0);
    assert_eq!(rx.count(), 1);
}

/// Sets up one occurrence of a daily webhook schedule that fans out to two channels: the
/// scheduler's `webhook` job and, for the same occurrence, an `email` job (custom kind)
/// with its own dedupe key. Returns (webhook job, email job, the firing).
async fn one_occurrence_two_channels(h: &Harness, url: &str) -> (Job, Job, DateTime<Utc>) {
    let mut req = new_schedule("digest", "webhook");
    req.cron = Some("0 9 * * *".into());
    req.period = Some("day".into());
    req.webhook = Some(WebhookTarget {
        url: url.into(),
        secret: SECRET.into(),
    });
    let s = h.kairos.schedule_create(req).await.unwrap();
    let fire_at = s.next_fire_at.unwrap();
    assert_eq!(h.sched(fire_at).await.jobs_created, 1);
    let webhook_job = h.schedule_jobs(&s.id).await.remove(0);
    let key = webhook_job.period_key.clone().unwrap();
    let email = h
        .store
        .job_insert(JobInsert {
            id: new_id(IdPrefix::Job, fire_at),
            kind: JobKind("email".into()),
            payload: serde_json::json!({"recipient": "rcp_1"}),
            endpoint_id: None,
            schedule_id: Some(s.id.clone()),
            fire_at: Some(fire_at),
            period_key: Some(key.clone()),
            channel: None,
            dedupe_key: Some(format!("{}:{key}:email", s.id)),
            retry: RetryPolicy::notification(),
            audience: Default::default(),
            retry_is_kind_default: false,
            run_at: fire_at,
            now: fire_at,
            concurrency: None,
            http_origin: None,
        })
        .await
        .unwrap();
    assert!(email.created);
    (webhook_job, email.job, fire_at)
}

/// per-channel independence. One occurrence, two channels: the webhook succeeds, the
/// email channel fails and retries on its own — the webhook is never sent again, and the
/// failed channel is not dropped (it succeeds on retry).
#[tokio::test]
async fn succeeded_webhook_is_not_resent_when_the_sibling_channel_retries() {
    let rx = TestReceiver::start().await;
    let email = TestHandler::new(|_, n| {
        if n == 0 {
            Outcome::Failed(Failure::transient("smtp 451"))
        } else {
            Outcome::ok()
        }
    });
    let h = Harness::new(
        t("2026-05-01T08:00:00Z"),
        &[("email", email.clone() as Arc<dyn Handler>)],
    )
    .await;
    let (webhook_job, email_job, fire_at) = one_occurrence_two_channels(&h, &rx.url("/d")).await;

    let r = h.exec(fire_at).await;
    assert_eq!((r.claimed, r.succeeded, r.retried), (2, 1, 1), "{r:?}");
    assert_eq!(h.job(&webhook_job.id).await.state, JobState::Succeeded);
    assert_eq!(h.job(&email_job.id).await.state, JobState::Available);

    let retry_at = h.job(&email_job.id).await.run_at;
    let r = h.exec(retry_at).await;
    assert_eq!(
        (r.claimed, r.succeeded),
        (1, 1),
        "only the failed channel ran: {r:?}"
    );
    for later in [retry_at + mins(10), retry_at + mins(100)] {
        assert_eq!(h.exec(later).await.claimed, 0);
    }

    assert_eq!(h.job(&email_job.id).await.state, JobState::Succeeded);
    assert_eq!(email.calls_for(&email_job.id), 2);
    assert_eq!(rx.count(), 1);
    assert_eq!(
        rx.ids_seen()[&webhook_job.id],
        1,
        "the webhook was sent exactly once"
    );
}

/// per-channel independence, the other way round: the webhook fails (503) and
/// retries alone; the email channel that succeeded is never run again.
#[tokio::test]
async fn succeeded_custom_channel_is_not_rerun_when_the_webhook_retries() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(503)]);
    let email = TestHandler::ok();
    let h = Harness::new(
        t("2026-05-01T08:00:00Z"),
        &[("email", email.clone() as Arc<dyn Handler>)],
    )
    .await;
    let (webhook_job, email_job, fire_at) = one_occurrence_two_channels(&h, &rx.url("/d")).await;

    let r = h.exec(fire_at).await;
    assert_eq!((r.claimed, r.succeeded, r.retried), (2, 1, 1), "{r:?}");
    let retry_at = h.job(&webhook_job.id).await.run_at;
    let r = h.exec(retry_at).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");
    assert_eq!(h.exec(retry_at + mins(60)).await.claimed, 0);

    assert_eq!(h.job(&webhook_job.id).await.state, JobState::Succeeded);
    assert_eq!(h.job(&email_job.id).await.state, JobState::Succeeded);
    assert_eq!(
        email.calls_for(&email_job.id),
        1,
        "the succeeded channel ran once"
    );
    assert_eq!(rx.ids_seen()[&webhook_job.id], 2);
}
