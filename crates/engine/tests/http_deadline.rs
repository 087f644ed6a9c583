//! `http.deadline` at run time, on the manual clock against a real local HTTP server (the
//! `TestReceiver` on 127.0.0.1:0): no attempt starts past the deadline, a retry (with an
//! honoured `Retry-After`) that would start past it is not scheduled and the job ends dead
//! saying "deadline exceeded", and an attempt's timeout is cut to the time left (S4-7).

mod common;

use common::*;
use kairos_core::JobState;
use kairos_engine::ops::{HttpSpec, NewJob};
use kairos_testkit::{Reply, TestReceiver};
use std::time::Duration;

/// A call with a 30 s timeout and a 10-minute deadline; the policy honours a `Retry-After` of
/// at most 1 minute, so its worst case (4 × 30s + waits 1m 6s + 1m 6s + 2m 28.5s = 6m 40.5s)
/// fits the deadline and the job is accepted.
async fn enqueue(h: &Harness, url: &str) -> kairos_core::Job {
    let (job, created) = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: (HttpSpec {
                url: url.into(),
                timeout: Some("30s".into()),
                deadline: Some("10m".into()),
                ..Default::default()
            })
            .into_parts(),
            retry: Some(
                serde_json::from_value(serde_json::json!({"retry_after_cap": "1m"}))
                    .expect("retry"),
            ),
            ..Default::default()
        })
        .await
        .expect("enqueue http job");
    assert!(created);
    job
}

fn last_error(a: &[kairos_store::Attempt]) -> String {
    a.last().and_then(|a| a.error.clone()).unwrap_or_default()
}

/// A job that failed once and is claimed again after its deadline (the node was down) is
/// not attempted: the target is not called again, and the job ends dead, "deadline exceeded".
#[tokio::test]
async fn http_deadline_stops_retries_at_run_time() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::status(503));
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = enqueue(&h, &rx.url("/cron")).await;
    assert_eq!(job.payload["deadline_ms"], 600_000, "{}", job.payload);
    assert_eq!(h.exec(t0).await.retried, 1);
    assert_eq!(rx.count(), 1);

    let late = t0 + secs(11 * 60);
    let r = h.exec(late).await;
    assert_eq!((r.claimed, r.dead), (1, 1), "{r:?}");
    assert_eq!(rx.count(), 1, "no call past the deadline");
    let j = h.job(&job.id).await;
    assert_eq!(j.state, JobState::Dead);
    let error = last_error(&h.attempts(&job.id).await);
    assert!(error.contains("deadline exceeded"), "{error}");
    assert!(error.contains("10m deadline"), "{error}");
}

/// An honoured `Retry-After` that would start the next attempt past the deadline is not
/// scheduled: the job ends dead at once with no further attempt.
#[tokio::test]
async fn http_retry_after_past_the_deadline_ends_dead_without_another_attempt() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::status(503).with_header("Retry-After", "60"));
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = enqueue(&h, &rx.url("/cron")).await;
    // Attempt 1 at t0: a retry a minute later, within the deadline.
    assert_eq!(h.exec(t0).await.retried, 1);
    let j = h.job(&job.id).await;
    assert!(
        j.run_at >= t0 + secs(60),
        "Retry-After honoured: {}",
        j.run_at
    );

    // Attempt 2 at 9m30s: its Retry-After lands at 10m30s, past the 10-minute deadline.
    let at = t0 + secs(9 * 60 + 30);
    let r = h.exec(at).await;
    assert_eq!((r.claimed, r.dead, r.retried), (1, 1, 0), "{r:?}");
    assert_eq!(rx.count(), 2);
    let error = last_error(&h.attempts(&job.id).await);
    assert!(
        error.starts_with("target answered HTTP 503") || error.contains("503"),
        "{error}"
    );
    assert!(error.contains("deadline exceeded: the retry at"), "{error}");
    assert_eq!(h.job(&job.id).await.state, JobState::Dead);
    // Nothing is left to run.
    assert_eq!(h.exec(t0 + secs(3600)).await.claimed, 0);
    assert_eq!(rx.count(), 2);
}

/// An attempt that starts half a second before the deadline gets half a second, not its
/// 30 s timeout: a slow target times out then, and the job ends dead.
#[tokio::test]
async fn http_attempt_timeout_is_cut_to_the_time_left_before_the_deadline() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::ok().with_delay(Duration::from_secs(3)));
    let t0 = t("2026-10-20T21:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let job = enqueue(&h, &rx.url("/slow")).await;
    let r = h.exec(t0 + ms(10 * 60 * 1000 - 500)).await;
    assert_eq!((r.claimed, r.dead), (1, 1), "{r:?}");
    let error = last_error(&h.attempts(&job.id).await);
    assert!(error.contains("timed out after 500ms"), "{error}");
    assert!(error.contains("deadline exceeded"), "{error}");
}
