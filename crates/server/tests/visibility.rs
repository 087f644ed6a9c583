//! Operator visibility (issue 13) over HTTP: the real app on a real SQLite file served on
//! 127.0.0.1:0, the real engine on a manual clock, targets on local HTTP servers.
//!
//! - `GET /v1/slo` shows a `dead_runs` warning for a daily `http` schedule whose run died,
//!   and no `dead_runs` entry before.

use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};

const TOKEN: &str = "test-token";

mod common;

use common::TestApp;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
}

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    let res = req.bearer_auth(TOKEN).send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn get(app: &TestApp, path: &str) -> (u16, Value) {
    call(app.http.get(format!("{}{path}", app.base))).await
}

async fn post(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    call(app.http.post(format!("{}{path}", app.base)).json(&body)).await
}

/// The entries of `check` in a `GET /v1/slo` answer.
fn entries<'a>(slo: &'a Value, check: &str) -> Vec<&'a Value> {
    slo["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["check"] == check)
        .collect()
}

/// The issue's contract: a daily `http` schedule whose target answers 500 until its attempts
/// run out shows a `dead_runs` warning on the next `GET /v1/slo` — subject the schedule id,
/// message naming the channel, its kind and the last error — and no `dead_runs` entry before.
#[tokio::test]
async fn daily_http_schedule_whose_run_dies_shows_dead_runs_warning() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::status(500).with_body(r#"{"error":"database is down"}"#));
    let app = TestApp::start(t("2026-11-29T05:00:00Z"), TOKEN).await;
    let (status, s) = post(
        &app,
        "/v1/schedules",
        json!({"name": "daily-report-clock", "kind": "http", "cron": "0 6 * * *",
               "timezone": "UTC", "period": "day",
               "http": {"url": rx.url("/api/cron/report"), "method": "POST", "timeout": "10s"},
               "retry": {"transient": {"delays": ["30s", "60s"]}}}),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    let schedule_id = s["id"].as_str().expect("id").to_string();

    let fired = t("2026-11-29T06:00:00Z");
    app.clock.set(fired);
    app.engine.scheduler().run_once(fired).await.expect("tick");
    let (status, slo) = get(&app, "/v1/slo").await;
    assert_eq!(status, 200);
    assert!(entries(&slo, "dead_runs").is_empty(), "{slo}");

    // Run the job at each retry until its attempts are spent.
    let (_, jobs) = get(&app, &format!("/v1/jobs?schedule_id={schedule_id}")).await;
    let job_id = jobs["data"][0]["id"]
        .as_str()
        .expect("the run's job")
        .to_string();
    for _ in 0..5 {
        app.run_jobs().await;
        let (_, j) = get(&app, &format!("/v1/jobs/{job_id}")).await;
        if j["state"] == "dead" {
            break;
        }
        assert_eq!(j["state"], "available", "{j}");
        let next = t(j["run_at"].as_str().expect("run_at"));
        app.clock.set(next.max(app.clock.now()));
    }
    let (_, j) = get(&app, &format!("/v1/jobs/{job_id}")).await;
    assert_eq!(j["state"], "dead", "{j}");
    assert_eq!(rx.count(), 3, "three attempts");

    let (status, slo) = get(&app, "/v1/slo").await;
    assert_eq!(status, 200, "a warning is not an error status");
    let dead = entries(&slo, "dead_runs");
    assert_eq!(dead.len(), 1, "{slo}");
    let d = dead[0];
    assert_eq!(d["status"], "warning");
    assert_eq!(d["subject"], schedule_id.as_str());
    let msg = d["message"].as_str().expect("message");
    for needle in ["daily-report-clock", "channel \"http\"", "kind http", "500"] {
        assert!(msg.contains(needle), "{needle:?} in {msg}");
    }
    assert_eq!(slo["status"], "warning");
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A webhook endpoint disabled by a 410 is listed by `GET /v1/endpoints` with `disabled_at`
/// and its last failure; re-adding the same URL and secret reuses it **still disabled** and
/// the job response says so (`webhook.disabled_at`), the job is skipped; `POST
/// /v1/endpoints/{id}/enable` enables it (404 for an unknown id) and the next job is sent.
#[tokio::test]
async fn endpoint_disabled_by_410_is_listed_stays_disabled_on_re_add_and_can_be_enabled() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(410)]);
    rx.set_default(Reply::status(200));
    let app = TestApp::start(t("2026-11-29T09:00:00Z"), TOKEN).await;
    let job_body = json!({"kind": "webhook",
        "webhook": {"url": rx.url("/hook"), "secret": SECRET},
        "payload": {"n": 1}});

    let (status, first) = post(&app, "/v1/jobs", job_body.clone()).await;
    assert_eq!(status, 201, "{first}");
    let ep_id = first["endpoint_id"].as_str().expect("endpoint").to_string();
    assert_eq!(first["webhook"]["endpoint_id"], ep_id.as_str());
    assert!(first["webhook"]["disabled_at"].is_null(), "{first}");
    app.run_jobs().await;
    assert_eq!(rx.count(), 1);

    let (status, list) = get(&app, "/v1/endpoints").await;
    assert_eq!(status, 200, "{list}");
    let eps = list["data"].as_array().expect("data");
    assert_eq!(eps.len(), 1, "{list}");
    let ep = &eps[0];
    assert_eq!(ep["id"], ep_id.as_str());
    assert_eq!(ep["url"], rx.url("/hook"));
    assert!(ep["disabled_at"].is_string(), "{ep}");
    assert_eq!(ep["disabled_reason"], "HTTP 410 Gone");
    assert!(ep["last_failure_at"].is_string(), "{ep}");
    assert!(
        ep["last_failure"]
            .as_str()
            .unwrap_or_default()
            .contains("410"),
        "{ep}"
    );
    assert!(!list.to_string().contains("whsec_"), "no secret: {list}");
    let (_, enabled_only) = get(&app, "/v1/endpoints?disabled=false").await;
    assert_eq!(enabled_only["data"], json!([]));
    let anon = app
        .http
        .get(format!("{}/v1/endpoints", app.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(anon.status(), 401);

    // The same URL and secret again: the same endpoint, still disabled, and the response
    // says so; the job is skipped and nothing is sent.
    let (status, again) = post(&app, "/v1/jobs", job_body.clone()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["endpoint_id"], ep_id.as_str());
    assert!(again["webhook"]["disabled_at"].is_string(), "{again}");
    assert_eq!(again["webhook"]["disabled_reason"], "HTTP 410 Gone");
    let again_id = again["id"].as_str().expect("id").to_string();
    app.run_jobs().await;
    let (_, j) = get(&app, &format!("/v1/jobs/{again_id}")).await;
    assert_eq!(j["state"], "skipped", "{j}");
    assert_eq!(j["reason"], "endpoint_disabled");
    assert!(j["webhook"]["disabled_at"].is_string(), "{j}");
    assert_eq!(rx.count(), 1, "nothing sent to a disabled endpoint");

    let (status, p) = post(&app, "/v1/endpoints/ep_unknown/enable", json!({})).await;
    assert_eq!(status, 404, "{p}");
    let (status, on) = post(&app, &format!("/v1/endpoints/{ep_id}/enable"), json!({})).await;
    assert_eq!(status, 200, "{on}");
    assert!(on["disabled_at"].is_null(), "{on}");
    assert!(on["disabled_reason"].is_null(), "{on}");
    let (_, shown) = get(&app, &format!("/v1/endpoints/{ep_id}")).await;
    assert!(shown["disabled_at"].is_null(), "{shown}");
    let (status, _) = get(&app, "/v1/endpoints/ep_unknown").await;
    assert_eq!(status, 404);

    let (status, third) = post(&app, "/v1/jobs", job_body).await;
    assert_eq!(status, 201, "{third}");
    assert!(third["webhook"]["disabled_at"].is_null(), "{third}");
    let third_id = third["id"].as_str().expect("id").to_string();
    app.run_jobs().await;
    let (_, j) = get(&app, &format!("/v1/jobs/{third_id}")).await;
    assert_eq!(j["state"], "succeeded", "{j}");
    assert_eq!(rx.count(), 2);
}
