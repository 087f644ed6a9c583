//! A schedule's channels through the API on a manual clock: a channel that dies makes the
//! occurrence `partial` with `failed_channels`, and replaying it never re-sends the channel
//! that succeeded.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use kairos_testkit::{Reply, TestReceiver};
use reqwest::Method;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T09:30:00Z")
        .expect("instant")
        .to_utc()
}

async fn call(app: &TestApp, m: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app
        .http
        .request(m, format!("{}{path}", app.base))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn occurrence(app: &TestApp, sid: &str) -> Value {
    let (s, b) = call(
        app,
        Method::GET,
        &format!("/v1/occurrences?schedule={sid}"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"].as_array().map(Vec::len), Some(1), "{b}");
    b["data"][0].clone()
}

#[tokio::test]
async fn partial_success_never_resends_succeeded_channel() {
    let app = TestApp::start(t0(), TOKEN).await;
    let flaky = TestReceiver::start().await;
    flaky.set_default(Reply::status(400));
    let steady = TestReceiver::start().await;
    let (s, sched) = call(
        &app,
        Method::POST,
        "/v1/schedules",
        Some(json!({
            "name": "fan-out",
            "cron": "0 9 * * *",
            "channels": [
                {"name": "flaky", "kind": "webhook",
                 "webhook": {"url": flaky.url("/h"), "secret": SECRET},
                 "retry": {"delays": [], "max_attempts": 1}},
                {"name": "steady", "kind": "webhook",
                 "webhook": {"url": steady.url("/h"), "secret": SECRET}}
            ]
        })),
    )
    .await;
    assert_eq!(s, 201, "{sched}");
    let sid = sched["id"].as_str().expect("id").to_string();
    let (s, fired) = call(
        &app,
        Method::POST,
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert!(s < 300, "{fired}");
    assert_eq!(occurrence(&app, &sid).await["status"], "pending");

    app.run_jobs().await;
    let occ = occurrence(&app, &sid).await;
    assert_eq!(occ["status"], "partial", "{occ}");
    assert_eq!(occ["failed_channels"], json!(["flaky"]), "{occ}");
    assert_eq!((flaky.count(), steady.count()), (1, 1));

    // Replay every dead job (the flaky channel's): it succeeds now; the steady channel, which
    // succeeded, is not sent again.
    flaky.set_default(Reply::ok());
    let (s, r) = call(
        &app,
        Method::POST,
        "/v1/dlq/replay",
        Some(json!({"all": true})),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    app.run_jobs().await;
    let occ = occurrence(&app, &sid).await;
    assert_eq!(occ["status"], "success", "{occ}");
    assert!(occ.get("failed_channels").is_none(), "{occ}");
    assert_eq!((flaky.count(), steady.count()), (2, 1));

    // Replaying the succeeded channel's job is refused: it would send twice.
    let (_, page) = call(
        &app,
        Method::GET,
        &format!("/v1/jobs?schedule_id={sid}"),
        None,
    )
    .await;
    let steady_job = page["data"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["channel"] == "steady")
        .expect("steady job")
        .clone();
    let id = steady_job["id"].as_str().expect("id");
    let (s, b) = call(&app, Method::POST, &format!("/v1/jobs/{id}/retry"), None).await;
    assert_eq!(s, 409, "{b}");
    app.run_jobs().await;
    assert_eq!(steady.count(), 1);
}

#[tokio::test]
async fn a_schedule_with_kind_keeps_one_channel_named_after_its_kind() {
    let app = TestApp::start(t0(), TOKEN).await;
    let rx = TestReceiver::start().await;
    let (s, sched) = call(
        &app,
        Method::POST,
        "/v1/schedules",
        Some(
            json!({"name": "plain", "cron": "0 9 * * *", "kind": "webhook",
                    "webhook": {"url": rx.url("/h"), "secret": SECRET}}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{sched}");
    assert_eq!(sched["channels"][0]["name"], "webhook", "{sched}");
    assert_eq!(sched["channels"].as_array().map(Vec::len), Some(1));
    let sid = sched["id"].as_str().expect("id").to_string();
    call(
        &app,
        Method::POST,
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    app.run_jobs().await;
    let occ = occurrence(&app, &sid).await;
    assert_eq!(occ["status"], "success", "{occ}");
    assert_eq!(occ["channels"][0]["channel"], "webhook", "{occ}");
    assert_eq!(rx.count(), 1);

    // Replacing it with explicit channels keeps the first channel's key: the period that
    // already fired is not sent again on it; the new channel gets its job.
    let rx2 = TestReceiver::start().await;
    let (s, b) = call(
        &app,
        Method::PUT,
        &format!("/v1/schedules/{sid}"),
        Some(json!({"name": "plain", "cron": "0 9 * * *", "channels": [
            {"name": "webhook", "kind": "webhook", "webhook": {"url": rx.url("/h"), "secret": SECRET}},
            {"name": "second", "kind": "webhook", "webhook": {"url": rx2.url("/h"), "secret": SECRET}}
        ]})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (_, fired) = call(
        &app,
        Method::POST,
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert_eq!(fired["created"], 1, "{fired}");
    app.run_jobs().await;
    assert_eq!((rx.count(), rx2.count()), (1, 1));
}
