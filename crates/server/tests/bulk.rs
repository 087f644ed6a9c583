//! Bulk cancel and retry through the HTTP API (`POST /v1/jobs/cancel`, `POST /v1/jobs/retry`)
//! on both stores: every matching job is acted on across batches of 1000, `matched` counts
//! the jobs acted on, and bad input is a 422 problem naming the field.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestApp;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{JobKind, RetryPolicy};
use kairos_store::JobInsert;
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};

const TOKEN: &str = "bulk-token";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T08:00:00Z")
        .expect("instant")
        .to_utc()
}

async fn post(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    app.post_json(TOKEN, path, &body).await
}

/// `n` waiting webhook jobs on `channel`, created now, due tomorrow.
fn jobs(n: usize, channel: &str) -> Vec<JobInsert> {
    (0..n)
        .map(|_| JobInsert {
            id: new_id(IdPrefix::Job, t0()),
            kind: JobKind::new("webhook"),
            payload: json!({"n": 1}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: Some(channel.to_string()),
            dedupe_key: None,
            retry: RetryPolicy::notification(),
            audience: Default::default(),
            retry_is_kind_default: false,
            run_at: t0() + Duration::days(1),
            now: t0(),
            concurrency: None,
            http_origin: None,
        })
        .collect()
}

async fn count(app: &TestApp, state: &str) -> i64 {
    app.store
        .job_count_by_state()
        .await
        .expect("counts")
        .into_iter()
        .find(|(s, _)| s == state)
        .map_or(0, |(_, n)| n)
}

fn assert_422(r: &(u16, Value), field: &str) {
    assert_eq!(r.0, 422, "{}", r.1);
    assert_eq!(r.1["field"], field, "{}", r.1);
}

async fn cancel_and_retry_by_filter_across_batches(app: TestApp) {
    app.store
        .job_insert_many(jobs(2_500, "a"))
        .await
        .expect("insert");
    let others = jobs(10, "b");
    app.store
        .job_insert_many(others.clone())
        .await
        .expect("insert");

    let r = post(
        &app,
        "/v1/jobs/cancel",
        json!({"channel": "a", "reason": "storm"}),
    )
    .await;
    assert_eq!(r, (200, json!({"matched": 2500})));
    assert_eq!(count(&app, "cancelled").await, 2500);
    assert_eq!(count(&app, "available").await, 10);
    let job: Value = app
        .http
        .get(format!("{}/v1/jobs?state=cancelled&limit=1", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(job["data"][0]["reason"], "storm");
    // Nothing left to cancel.
    let r = post(&app, "/v1/jobs/cancel", json!({"channel": "a"})).await;
    assert_eq!(r, (200, json!({"matched": 0})));

    // The creation window: after is inclusive, before exclusive.
    let r = post(
        &app,
        "/v1/jobs/retry",
        json!({"state": "cancelled", "created_before": "2026-03-02T08:00:00Z"}),
    )
    .await;
    assert_eq!(r, (200, json!({"matched": 0})));
    let r = post(
        &app,
        "/v1/jobs/retry",
        json!({"state": "cancelled", "kind": "webhook", "created_after": "2026-03-02T08:00:00Z"}),
    )
    .await;
    assert_eq!(r, (200, json!({"matched": 2500})));
    assert_eq!(count(&app, "available").await, 2510);
    assert_eq!(count(&app, "cancelled").await, 0);

    // By ids: unknown ids and jobs in other states are not counted.
    let ids = json!([others[0].id, others[1].id, "job_missing"]);
    let r = post(&app, "/v1/jobs/cancel", json!({"ids": ids})).await;
    assert_eq!(r, (200, json!({"matched": 2})));
    let r = post(&app, "/v1/jobs/cancel", json!({"ids": ids})).await;
    assert_eq!(r, (200, json!({"matched": 0})));
    let r = post(&app, "/v1/jobs/retry", json!({"ids": ids})).await;
    assert_eq!(r, (200, json!({"matched": 2})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_cancel_and_retry_by_filter_act_on_every_match_sqlite() {
    cancel_and_retry_by_filter_across_batches(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_cancel_and_retry_by_filter_act_on_every_match_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    cancel_and_retry_by_filter_across_batches(app).await;
}

/// Issue 33, finding 7: a bulk request with neither ids nor a filter acts on nothing and is a
/// 422 naming `all`; with `"all": true` it takes every job the action applies to.
async fn no_filter_needs_all_true(app: TestApp) {
    app.store
        .job_insert_many(jobs(5, "a"))
        .await
        .expect("insert");
    for path in ["/v1/jobs/cancel", "/v1/jobs/retry"] {
        for body in [json!({}), json!({"all": false}), json!({"reason": null})] {
            let r = post(&app, path, body).await;
            assert_422(&r, "all");
        }
    }
    assert_eq!(count(&app, "available").await, 5, "nothing was cancelled");
    assert_422(
        &post(&app, "/v1/jobs/cancel", json!({"all": "yes"})).await,
        "all",
    );
    assert_422(
        &post(
            &app,
            "/v1/jobs/cancel",
            json!({"all": true, "ids": ["job_1"]}),
        )
        .await,
        "all",
    );
    let r = post(
        &app,
        "/v1/jobs/cancel",
        json!({"all": true, "reason": "drain"}),
    )
    .await;
    assert_eq!(r, (200, json!({"matched": 5})));
    let r = post(&app, "/v1/jobs/retry", json!({"all": true})).await;
    assert_eq!(r, (200, json!({"matched": 5})));
    assert_eq!(count(&app, "available").await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_without_ids_or_filter_needs_all_true_sqlite() {
    no_filter_needs_all_true(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_without_ids_or_filter_needs_all_true_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    no_filter_needs_all_true(app).await;
}

async fn bad_input_names_the_field(app: TestApp) {
    let many: Vec<String> = (0..1001).map(|i| format!("job_{i}")).collect();
    assert_422(
        &post(&app, "/v1/jobs/cancel", json!({"ids": many})).await,
        "ids",
    );
    assert_422(
        &post(&app, "/v1/jobs/retry", json!({"ids": many})).await,
        "ids",
    );
    let exactly: Vec<String> = (0..1000).map(|i| format!("job_{i}")).collect();
    assert_eq!(
        post(&app, "/v1/jobs/cancel", json!({"ids": exactly})).await,
        (200, json!({"matched": 0}))
    );
    for (path, body, field) in [
        ("/v1/jobs/cancel", json!({"colour": "red"}), "colour"),
        (
            "/v1/jobs/retry",
            json!({"state": "dead", "bogus": 1}),
            "bogus",
        ),
        ("/v1/jobs/cancel", json!({"state": "sleeping"}), "state"),
        ("/v1/jobs/retry", json!({"kind": "carrier-pigeon"}), "kind"),
        (
            "/v1/jobs/cancel",
            json!({"created_before": "yesterday"}),
            "created_before",
        ),
        (
            "/v1/jobs/retry",
            json!({"created_after": "2026-13-01"}),
            "created_after",
        ),
        (
            "/v1/jobs/cancel",
            json!({"ids": ["job_1"], "state": "available"}),
            "ids",
        ),
        ("/v1/jobs/cancel", json!({"ids": "job_1"}), "ids"),
        ("/v1/jobs/cancel", json!({"channel": 7}), "channel"),
        ("/v1/jobs/retry", json!({"reason": "x"}), "reason"),
    ] {
        let r = post(&app, path, body.clone()).await;
        assert_422(&r, field);
        assert!(
            r.1["detail"]
                .as_str()
                .unwrap_or_default()
                .starts_with(field),
            "{body}: {}",
            r.1
        );
    }
    let r = app
        .http
        .post(format!("{}/v1/jobs/cancel", app.base))
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 401, "the token is required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_bad_input_is_a_422_naming_the_field_sqlite() {
    bad_input_names_the_field(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_bad_input_is_a_422_naming_the_field_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    bad_input_names_the_field(app).await;
}

async fn retry_replays_dead_jobs_that_then_deliver(app: TestApp) {
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::status(500));
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, job) = post(
            &app,
            "/v1/jobs",
            json!({
                "kind": "webhook",
                "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
                "payload": {"hello": "world"},
                "retry": {"delays": [], "max_attempts": 1}
            }),
        )
        .await;
        assert_eq!(status, 201, "{job}");
        ids.push(job["id"].as_str().expect("id").to_string());
    }
    app.run_jobs().await;
    assert_eq!(count(&app, "dead").await, 3);
    // Retry leaves a succeeded job alone; cancel leaves a dead one alone.
    let r = post(&app, "/v1/jobs/cancel", json!({"state": "dead"})).await;
    assert_eq!(r, (200, json!({"matched": 0})));
    receiver.set_default(Reply::status(200));
    let r = post(
        &app,
        "/v1/jobs/retry",
        json!({"state": "dead", "kind": "webhook"}),
    )
    .await;
    assert_eq!(r, (200, json!({"matched": 3})));
    app.run_jobs().await;
    assert_eq!(count(&app, "succeeded").await, 3);
    let r = post(&app, "/v1/jobs/retry", json!({"ids": ids})).await;
    assert_eq!(
        r,
        (200, json!({"matched": 0})),
        "succeeded jobs are never re-sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_retry_replays_dead_jobs_that_then_deliver_sqlite() {
    retry_replays_dead_jobs_that_then_deliver(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_retry_replays_dead_jobs_that_then_deliver_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    retry_replays_dead_jobs_that_then_deliver(app).await;
}
