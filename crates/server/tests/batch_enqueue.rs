//! Batch enqueue through the HTTP API (`POST /v1/jobs/batch`) on both stores: the jobs in one
//! transaction, answered in the request's order with `created`; an existing idempotency key
//! (or one repeated in the batch) answers with its job; an invalid entry, an empty list or
//! more than 1,000 jobs is a problem naming the field, and nothing is inserted.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use serde_json::{Value, json};

const TOKEN: &str = "batch-token";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T08:00:00Z")
        .expect("instant")
        .to_utc()
}

async fn post(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    app.post_json(TOKEN, path, &body).await
}

/// The ids of `GET /v1/jobs`, newest first.
async fn listed(app: &TestApp) -> Vec<String> {
    let r = app
        .http
        .get(format!("{}/v1/jobs?limit=1000", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let page: Value = r.json().await.expect("JSON");
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|j| j["id"].as_str().expect("id").to_string())
        .collect()
}

/// A webhook job with payload `{"n": n}`, due tomorrow (so nothing runs meanwhile).
fn job(n: usize) -> Value {
    json!({
        "kind": "webhook",
        "webhook": {"url": "http://127.0.0.1:9/hook", "secret": SECRET},
        "payload": {"n": n},
        "run_at": "2026-03-03T08:00:00Z",
    })
}

fn keyed(n: usize, key: &str) -> Value {
    let mut j = job(n);
    j["idempotency_key"] = json!(key);
    j
}

fn entries(r: &(u16, Value)) -> &Vec<Value> {
    r.1["jobs"].as_array().expect("jobs")
}

async fn a_batch_of_three_is_created_in_order(app: TestApp) {
    let r = post(
        &app,
        "/v1/jobs/batch",
        json!({"jobs": [job(0), job(1), job(2)]}),
    )
    .await;
    assert_eq!(r.0, 201, "{}", r.1);
    let got = entries(&r);
    assert_eq!(got.len(), 3, "{}", r.1);
    for (i, j) in got.iter().enumerate() {
        assert_eq!(j["created"], true, "{j}");
        assert_eq!(j["payload"]["n"], i, "in the request's order: {}", r.1);
        assert_eq!(j["state"], "available", "{j}");
        assert_eq!(j["kind"], "webhook", "{j}");
        assert_eq!(j["run_at"], "2026-03-03T08:00:00.000Z", "{j}");
    }
    let mut ids: Vec<String> = got
        .iter()
        .map(|j| j["id"].as_str().expect("id").to_string())
        .collect();
    let mut list = listed(&app).await;
    ids.sort();
    list.sort();
    assert_eq!(list, ids, "the three jobs are listed");
}

async fn an_existing_key_answers_with_its_job(app: TestApp) {
    let first = post(&app, "/v1/jobs", keyed(0, "order-7")).await;
    assert_eq!(first.0, 201, "{}", first.1);
    let existing = first.1["id"].as_str().expect("id").to_string();
    let r = post(
        &app,
        "/v1/jobs/batch",
        json!({"jobs": [keyed(1, "order-7"), job(2), keyed(3, "new-1"), keyed(4, "new-1")]}),
    )
    .await;
    assert_eq!(r.0, 201, "{}", r.1);
    let got = entries(&r);
    let created: Vec<&Value> = got.iter().map(|j| &j["created"]).collect();
    assert_eq!(created, [false, true, true, false], "{}", r.1);
    assert_eq!(got[0]["id"], existing.as_str(), "{}", r.1);
    assert_eq!(got[0]["payload"]["n"], 0, "the existing job: {}", r.1);
    assert_eq!(got[0]["idempotency_key"], "order-7", "{}", r.1);
    assert_eq!(
        got[3]["id"], got[2]["id"],
        "a key repeated in the batch: {}",
        r.1
    );
    assert_eq!(got[3]["payload"]["n"], 3, "{}", r.1);
    assert_eq!(listed(&app).await.len(), 3, "one before, two made");
}

async fn an_invalid_entry_fails_the_batch_and_inserts_nothing(app: TestApp) {
    let mut bad = job(1);
    bad["run_at"] = json!("tomorrow");
    let r = post(
        &app,
        "/v1/jobs/batch",
        json!({"jobs": [job(0), bad, job(2)]}),
    )
    .await;
    assert_eq!(r.0, 422, "{}", r.1);
    assert_eq!(r.1["field"], "jobs[1].run_at", "{}", r.1);
    let mut unknown = job(1);
    unknown["colour"] = json!("red");
    let r = post(&app, "/v1/jobs/batch", json!({"jobs": [job(0), unknown]})).await;
    assert_eq!(r.0, 400, "{}", r.1);
    let detail = r.1["detail"].as_str().expect("detail");
    assert!(
        detail.contains("jobs[1]") && detail.contains("colour"),
        "{}",
        r.1
    );
    assert!(listed(&app).await.is_empty(), "nothing inserted");
}

async fn too_many_or_no_jobs_is_a_422_naming_jobs(app: TestApp) {
    let many: Vec<Value> = (0..1001).map(job).collect();
    let r = post(&app, "/v1/jobs/batch", json!({ "jobs": many })).await;
    assert_eq!(r.0, 422, "{}", r.1);
    assert_eq!(r.1["field"], "jobs", "{}", r.1);
    let r = post(&app, "/v1/jobs/batch", json!({"jobs": []})).await;
    assert_eq!(r.0, 422, "{}", r.1);
    assert_eq!(r.1["field"], "jobs", "{}", r.1);
    assert!(listed(&app).await.is_empty(), "nothing inserted");
    // 1,000 is the most: all made in one call.
    let most: Vec<Value> = (0..1000).map(job).collect();
    let r = post(&app, "/v1/jobs/batch", json!({ "jobs": most })).await;
    assert_eq!(r.0, 201, "{}", r.1);
    assert_eq!(entries(&r).len(), 1000);
    assert_eq!(listed(&app).await.len(), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_three_is_created_in_order_sqlite() {
    a_batch_of_three_is_created_in_order(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_three_is_created_in_order_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    a_batch_of_three_is_created_in_order(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_existing_key_answers_with_its_job_sqlite() {
    an_existing_key_answers_with_its_job(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_existing_key_answers_with_its_job_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    an_existing_key_answers_with_its_job(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_invalid_entry_inserts_nothing_sqlite() {
    an_invalid_entry_fails_the_batch_and_inserts_nothing(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_invalid_entry_inserts_nothing_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    an_invalid_entry_fails_the_batch_and_inserts_nothing(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_1001_or_none_is_a_422_naming_jobs_sqlite() {
    too_many_or_no_jobs_is_a_422_naming_jobs(TestApp::start(t0(), TOKEN).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_1001_or_none_is_a_422_naming_jobs_postgres() {
    let Some(app) = TestApp::start_postgres(t0(), TOKEN).await else {
        return;
    };
    too_many_or_no_jobs_is_a_422_naming_jobs(app).await;
}
