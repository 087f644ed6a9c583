//! The misfire settings over the API (issue 30): `misfire_threshold` and `misfire_window`
//! accepted, validated with a 422 naming the field, shown on the schedule; and
//! `GET /v1/occurrences?schedule=` listing a recorded gap as `"status": "missed"`.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use serde_json::{Value, json};

const TOKEN: &str = "misfire-api-test-token";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

async fn call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app
        .http
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn body(name: &str, extra: Value) -> Value {
    let mut b = json!({
        "name": name,
        "cron": "0 9 * * *",
        "kind": "webhook",
        "webhook": {"url": "http://127.0.0.1:9/hook", "secret": SECRET},
    });
    b.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    b
}

/// Accepted and shown; the defaults are `once`, the node's threshold (null) and `7d`; a bad
/// duration, a threshold longer than the window, or a window past 366 days is a 422 naming
/// the field, and creates nothing.
#[tokio::test]
async fn misfire_threshold_and_window_are_accepted_validated_and_shown() {
    let app = TestApp::start(t("2026-06-01T08:00:00Z"), TOKEN).await;
    let post = reqwest::Method::POST;
    let (status, v) = call(
        &app,
        post.clone(),
        "/v1/schedules",
        Some(body(
            "tuned",
            json!({"misfire": "all:3", "misfire_threshold": "5m", "misfire_window": "2d"}),
        )),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        (&v["misfire"], &v["misfire_threshold"], &v["misfire_window"]),
        (&json!("all:3"), &json!("5m"), &json!("2d"))
    );
    let (status, v) = call(
        &app,
        post.clone(),
        "/v1/schedules",
        Some(body("plain", json!({}))),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        (&v["misfire"], &v["misfire_threshold"], &v["misfire_window"]),
        (&json!("once"), &Value::Null, &json!("7d"))
    );
    for (extra, field) in [
        (json!({"misfire_threshold": "soon"}), "misfire_threshold"),
        (json!({"misfire_threshold": "0s"}), "misfire_threshold"),
        (json!({"misfire_window": "forever"}), "misfire_window"),
        (json!({"misfire_window": "400d"}), "misfire_window"),
        (
            json!({"misfire_threshold": "2h", "misfire_window": "1h"}),
            "misfire_threshold",
        ),
        (json!({"misfire_threshold": "8d"}), "misfire_threshold"),
        (json!({"misfire": "sometimes"}), "misfire"),
    ] {
        let (status, v) = call(
            &app,
            post.clone(),
            "/v1/schedules",
            Some(body("bad", extra.clone())),
        )
        .await;
        assert_eq!(status, 422, "{extra}: {v}");
        assert_eq!(v["field"], field, "{extra}: {v}");
    }
    let (_, list) = call(&app, reqwest::Method::GET, "/v1/schedules", None).await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(2), "{list}");
}

/// A one-shot missed with `skip` is listed among its schedule's occurrences as `missed`, with
/// the reason, first and last period and count.
#[tokio::test]
async fn occurrences_list_a_missed_gap_with_reason_periods_and_count() {
    let app = TestApp::start(t("2026-06-01T09:00:00Z"), TOKEN).await;
    let (status, s) = call(
        &app,
        reqwest::Method::POST,
        "/v1/schedules",
        Some(json!({
            "name": "reminder",
            "at": "2026-06-01T09:01:00Z",
            "kind": "webhook",
            "webhook": {"url": "http://127.0.0.1:9/hook", "secret": SECRET},
            "misfire": "skip",
            "period": "day",
        })),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    let tick = app
        .engine
        .scheduler()
        .run_once(t("2026-06-01T09:04:00Z"))
        .await
        .expect("tick");
    assert_eq!(tick.misfires_skipped, 1, "{tick:?}");
    let id = s["id"].as_str().unwrap();
    let (status, v) = call(
        &app,
        reqwest::Method::GET,
        &format!("/v1/occurrences?schedule={id}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{v}");
    let o = &data[0];
    assert_eq!(o["status"], "missed", "{o}");
    assert_eq!(o["reason"], "skip");
    assert_eq!(o["first_period"], "2026-06-01");
    assert_eq!(o["last_period"], "2026-06-01");
    assert_eq!(o["first_fire_at"], "2026-06-01T09:01:00.000Z");
    assert_eq!(o["last_fire_at"], "2026-06-01T09:01:00.000Z");
    assert_eq!(o["count"], 1);
}
