//! One filter vocabulary (issue 35): `GET /v1/jobs` and `/v1/dlq` take `schedule`, `topic`,
//! `recipient`, `period`, `channel`, `state`, `kind`, `created_after`, `created_before`; the
//! old `schedule_id` is an alias (also on `/v1/occurrences`); a bad value is a 422 naming
//! the filter. The real app on a real SQLite file.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use kairos_testkit::TestReceiver;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T09:00:00Z")
        .expect("instant")
        .to_utc()
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
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The ids of a page of jobs at `path`.
async fn ids(app: &TestApp, path: &str) -> Vec<String> {
    let (status, page) = call(app, reqwest::Method::GET, path, None).await;
    assert_eq!(status, 200, "{path}: {page}");
    let mut ids: Vec<String> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|j| j["id"].as_str().expect("id").to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn job_lists_take_the_shared_filter_names_and_the_old_aliases() {
    let rx = TestReceiver::start().await;
    let app = TestApp::start(t0(), TOKEN).await;
    let post = reqwest::Method::POST;
    let (status, s) = call(
        &app,
        post.clone(),
        "/v1/schedules",
        Some(json!({"name": "f", "cron": "0 6 * * *",
                    "webhook": {"url": rx.url("/s"), "secret": SECRET}})),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    let sid = s["id"].as_str().expect("id").to_string();
    let (_, fired) = call(
        &app,
        post.clone(),
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    let scheduled = fired["job_ids"][0].as_str().expect("job").to_string();
    let period = fired["period_key"].as_str().expect("period").to_string();
    let enqueue = |payload: Value| {
        let (app, post, url) = (&app, post.clone(), rx.url("/j"));
        async move {
            let (status, j) = call(
                app,
                post,
                "/v1/jobs",
                Some(json!({"kind": "webhook", "payload": payload,
                            "webhook": {"url": url, "secret": SECRET},
                            "run_at": "2027-01-01T00:00:00Z"})),
            )
            .await;
            assert_eq!(status, 201, "{j}");
            j["id"].as_str().expect("id").to_string()
        }
    };
    let weekly = enqueue(json!({"topic": "weekly", "recipient_id": "r1"})).await;
    let plain = enqueue(json!({})).await;
    let mut all = vec![scheduled.clone(), weekly.clone(), plain.clone()];
    all.sort();

    assert_eq!(
        ids(&app, &format!("/v1/jobs?schedule={sid}")).await,
        vec![scheduled.clone()]
    );
    assert_eq!(
        ids(&app, &format!("/v1/jobs?schedule_id={sid}")).await,
        vec![scheduled.clone()]
    );
    assert_eq!(
        ids(&app, "/v1/jobs?topic=weekly").await,
        vec![weekly.clone()]
    );
    assert_eq!(
        ids(&app, "/v1/jobs?recipient=r1&kind=webhook").await,
        vec![weekly.clone()]
    );
    assert_eq!(
        ids(&app, "/v1/jobs?topic=daily").await,
        Vec::<String>::new()
    );
    assert_eq!(
        // The key holds a `+` (its offset): escaped, as a query value must be.
        ids(
            &app,
            &format!(
                "/v1/jobs?period={}&state=available",
                period.replace('+', "%2B")
            )
        )
        .await,
        vec![scheduled.clone()]
    );
    assert_eq!(
        ids(&app, "/v1/jobs?created_before=2030-01-01T00:00:00Z").await,
        all
    );
    assert_eq!(
        ids(&app, "/v1/jobs?created_after=2030-01-01T00:00:00Z").await,
        Vec::<String>::new()
    );
    assert_eq!(
        ids(&app, "/v1/jobs?topic=").await,
        all,
        "an empty filter is no filter"
    );
    assert_eq!(
        ids(&app, &format!("/v1/dlq?schedule={sid}")).await,
        Vec::<String>::new()
    );
    assert_eq!(
        ids(&app, "/v1/dlq?schedule_id=sch_x&topic=weekly").await,
        Vec::<String>::new()
    );

    let (status, p) = call(
        &app,
        reqwest::Method::GET,
        "/v1/jobs?created_after=yesterday",
        None,
    )
    .await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(p["field"], "created_after", "{p}");
    let (status, p) = call(
        &app,
        reqwest::Method::GET,
        "/v1/jobs?topic=weekly&state=exploded",
        None,
    )
    .await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(p["field"], "state", "{p}");

    // Occurrences: `schedule`, and `schedule_id` as its alias, give the same answer.
    let (s1, o1) = call(
        &app,
        reqwest::Method::GET,
        &format!("/v1/occurrences?schedule={sid}"),
        None,
    )
    .await;
    let (s2, o2) = call(
        &app,
        reqwest::Method::GET,
        &format!("/v1/occurrences?schedule_id={sid}"),
        None,
    )
    .await;
    assert_eq!((s1, s2), (200, 200), "{o1} {o2}");
    assert_eq!(o1, o2);
    assert_eq!(o1["data"][0]["period_key"], period.as_str(), "{o1}");

    // The bulk filter takes `schedule` too: cancel the scheduled job by it.
    let (status, b) = call(
        &app,
        post.clone(),
        "/v1/jobs/cancel",
        Some(json!({"schedule": sid})),
    )
    .await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["matched"], 1, "{b}");
}

/// `GET /v1/occurrences?state=` filters on the occurrence's derived status (an enum in the
/// document); a status no occurrence has gives none, a bad or empty one is a 422 naming
/// `state`.
#[tokio::test]
async fn occurrences_filter_on_their_state_and_refuse_a_bad_one_i35_5() {
    let rx = TestReceiver::start().await;
    let app = TestApp::start(t0(), TOKEN).await;
    let (status, s) = call(
        &app,
        reqwest::Method::POST,
        "/v1/schedules",
        Some(json!({"name": "f", "cron": "0 6 * * *",
                    "webhook": {"url": rx.url("/s"), "secret": SECRET}})),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    let sid = s["id"].as_str().expect("id").to_string();
    let (_, fired) = call(
        &app,
        reqwest::Method::POST,
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    let period = fired["period_key"].as_str().expect("period").to_string();
    let get = |q: String| {
        let app = &app;
        async move { call(app, reqwest::Method::GET, &q, None).await }
    };
    // No worker runs in this app: the fired job waits, so its occurrence is pending.
    let (status, pending) = get(format!("/v1/occurrences?schedule={sid}&state=pending")).await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(
        pending["data"][0]["period_key"],
        period.as_str(),
        "{pending}"
    );
    assert_eq!(pending["data"].as_array().map(Vec::len), Some(1));
    for other in ["success", "failure", "missed"] {
        let (status, none) = get(format!("/v1/occurrences?schedule={sid}&state={other}")).await;
        assert_eq!(status, 200, "{none}");
        assert_eq!(none["data"], json!([]), "{other}: {none}");
    }
    for bad in ["exploded", ""] {
        let (status, p) = get(format!("/v1/occurrences?schedule={sid}&state={bad}")).await;
        assert_eq!(status, 422, "{bad:?}: {p}");
        assert_eq!(p["field"], "state", "{p}");
        assert!(
            p["detail"].as_str().is_some_and(|d| d.contains("pending")),
            "the values are named: {p}"
        );
    }
}
