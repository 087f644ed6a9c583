//! Overlap policies and backfill over the API (issue 34), on SQLite and on PostgreSQL:
//! `overlap` accepted, validated and shown on schedules, each policy seen through the API
//! after scheduler ticks on a manual clock; `POST /v1/schedules/{id}/backfill` creating the
//! firings of a past range once, and refusing a bad range naming the field.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use reqwest::Method;
use serde_json::{Value, json};

const TOKEN: &str = "overlap-backfill-test-token";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

async fn start(t0: DateTime<Utc>, postgres: bool) -> Option<TestApp> {
    if postgres {
        TestApp::start_postgres(t0, TOKEN).await
    } else {
        Some(TestApp::start(t0, TOKEN).await)
    }
}

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
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

fn body(name: &str, cron: &str, extra: Value) -> Value {
    let mut b = json!({
        "name": name,
        "cron": cron,
        "kind": "webhook",
        "webhook": {"url": "http://127.0.0.1:9/hook", "secret": SECRET},
    });
    b.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    b
}

async fn create(app: &TestApp, b: Value) -> Value {
    let (status, v) = call(app, Method::POST, "/v1/schedules", Some(b)).await;
    assert_eq!(status, 201, "{v}");
    v
}

async fn tick(app: &TestApp, at: &str) -> kairos_engine::scheduler::SchedulerReport {
    app.clock.set(t(at));
    let r = app.engine.scheduler().run_once(t(at)).await.expect("tick");
    assert_eq!(r.errors, 0, "{r:?}");
    r
}

/// The jobs of a schedule, by nominal firing.
async fn jobs_of(app: &TestApp, id: &str) -> Vec<kairos_core::Job> {
    let mut v = app
        .store
        .job_list(kairos_store::JobList {
            schedule_id: Some(id.into()),
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap();
    v.sort_by_key(|j| j.fire_at);
    v
}

async fn overlap_policies(postgres: bool) {
    let Some(app) = start(t("2026-06-01T08:59:30Z"), postgres).await else {
        return;
    };
    let every_minute = |name: &str, overlap: Option<&str>| {
        body(
            name,
            "* * * * *",
            overlap.map_or(json!({}), |o| json!({"overlap": o})),
        )
    };
    let allow = create(&app, every_minute("allow", None)).await;
    assert_eq!(allow["overlap"], "allow", "the default");
    let skip = create(&app, every_minute("skip", Some("skip"))).await;
    assert_eq!(skip["overlap"], "skip");
    let buffer = create(&app, every_minute("buffer", Some("buffer_one"))).await;
    assert_eq!(buffer["overlap"], "buffer_one");
    assert_eq!(buffer["buffered_fire_at"], Value::Null);
    let cancel = create(&app, every_minute("cancel", Some("allow"))).await;
    // PUT changes the policy.
    let cid = cancel["id"].as_str().unwrap().to_string();
    let (status, v) = call(
        &app,
        Method::PUT,
        &format!("/v1/schedules/{cid}"),
        Some(every_minute("cancel", Some("cancel_previous"))),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["overlap"], "cancel_previous");
    // A bad policy is a 422 naming the field, on create and on replace; nothing changes.
    let (status, v) = call(
        &app,
        Method::POST,
        "/v1/schedules",
        Some(every_minute("bad", Some("buffer_all"))),
    )
    .await;
    assert_eq!((status, &v["field"]), (422, &json!("overlap")), "{v}");
    let (status, v) = call(
        &app,
        Method::PUT,
        &format!("/v1/schedules/{cid}"),
        Some(every_minute("cancel", Some("sometimes"))),
    )
    .await;
    assert_eq!((status, &v["field"]), (422, &json!("overlap")), "{v}");
    let (_, v) = call(&app, Method::GET, &format!("/v1/schedules/{cid}"), None).await;
    assert_eq!(v["overlap"], "cancel_previous", "{v}");
    let (_, list) = call(&app, Method::GET, "/v1/schedules", None).await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(4), "{list}");

    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    let (allow, skip, buffer) = (id(&allow), id(&skip), id(&buffer));
    // 09:00: every schedule fires; nobody runs the jobs, so at 09:01 each occurrence is open.
    assert_eq!(tick(&app, "2026-06-01T09:00:00Z").await.jobs_created, 4);
    let r = tick(&app, "2026-06-01T09:01:00Z").await;
    assert_eq!(
        (
            r.jobs_created,
            r.overlap_skipped,
            r.buffered,
            r.overlap_cancelled
        ),
        (2, 1, 1, 1),
        "{r:?}"
    );
    // allow: beside it.
    assert_eq!(jobs_of(&app, &allow).await.len(), 2);
    // skip: a missed occurrence with reason `overlap`.
    assert_eq!(jobs_of(&app, &skip).await.len(), 1);
    let (status, v) = call(
        &app,
        Method::GET,
        &format!("/v1/occurrences?schedule={skip}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let missed: Vec<&Value> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["status"] == "missed")
        .collect();
    assert_eq!(missed.len(), 1, "{v}");
    assert_eq!(missed[0]["reason"], "overlap");
    assert_eq!(missed[0]["first_fire_at"], "2026-06-01T09:01:00.000Z");
    // buffer_one: held, shown on the schedule; it runs once the 09:00 job is cancelled.
    let (_, v) = call(&app, Method::GET, &format!("/v1/schedules/{buffer}"), None).await;
    assert_eq!(v["buffered_fire_at"], "2026-06-01T09:01:00.000Z", "{v}");
    let first = jobs_of(&app, &buffer).await[0].id.clone();
    let (status, v) = call(
        &app,
        Method::POST,
        &format!("/v1/jobs/{first}/cancel"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let r = tick(&app, "2026-06-01T09:01:30Z").await;
    assert_eq!((r.buffers_released, r.jobs_created), (1, 1), "{r:?}");
    let (_, v) = call(&app, Method::GET, &format!("/v1/schedules/{buffer}"), None).await;
    assert_eq!(v["buffered_fire_at"], Value::Null, "{v}");
    assert_eq!(v["last_fire_at"], "2026-06-01T09:01:00.000Z", "{v}");
    // cancel_previous: the 09:00 job is cancelled with a reason, the 09:01 one waits.
    let jobs = jobs_of(&app, &cid).await;
    assert_eq!(jobs.len(), 2);
    let (_, v) = call(&app, Method::GET, &format!("/v1/jobs/{}", jobs[0].id), None).await;
    assert_eq!(v["state"], "cancelled", "{v}");
    assert!(
        v.to_string().contains("cancel_previous"),
        "the reason says why: {v}"
    );
    let (_, v) = call(&app, Method::GET, &format!("/v1/jobs/{}", jobs[1].id), None).await;
    assert_eq!(v["state"], "available", "{v}");
}

#[tokio::test]
async fn overlap_policies_over_the_api_sqlite() {
    overlap_policies(false).await;
}

#[tokio::test]
async fn overlap_policies_over_the_api_postgres() {
    overlap_policies(true).await;
}

async fn backfill(app: &TestApp, id: &str, from: &str, to: &str) -> (u16, Value) {
    call(
        app,
        Method::POST,
        &format!("/v1/schedules/{id}/backfill"),
        Some(json!({"from": from, "to": to})),
    )
    .await
}

async fn backfill_range(postgres: bool) {
    let Some(app) = start(t("2026-06-10T12:00:00Z"), postgres).await else {
        return;
    };
    let daily = create(
        &app,
        body(
            "daily",
            "0 9 * * *",
            json!({"period": "day", "overlap": "skip"}),
        ),
    )
    .await;
    let id = daily["id"].as_str().unwrap().to_string();
    // Today's period ran already (a manual firing).
    let (status, v) = call(
        &app,
        Method::POST,
        &format!("/v1/schedules/{id}/fire"),
        None,
    )
    .await;
    assert_eq!((status, &v["created"]), (200, &json!(1)), "{v}");
    // June 1st to now: ten 09:00 firings, one of which ran.
    let (status, v) = backfill(&app, &id, "2026-06-01T00:00:00Z", "2026-06-10T12:00:00Z").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, json!({"fired": 9, "skipped": 1}));
    let jobs = jobs_of(&app, &id).await;
    assert_eq!(jobs.len(), 10);
    let periods: std::collections::BTreeSet<_> =
        jobs.iter().filter_map(|j| j.period_key.clone()).collect();
    assert_eq!(periods.len(), 10, "one job per day: {periods:?}");
    assert_eq!(jobs[0].fire_at, Some(t("2026-06-01T09:00:00Z")));
    assert!(jobs.iter().all(|j| j.run_at <= t("2026-06-10T12:00:00Z")));
    // The same backfill again fires nothing.
    let (status, v) = backfill(&app, &id, "2026-06-01T00:00:00Z", "2026-06-10T12:00:00Z").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, json!({"fired": 0, "skipped": 10}));

    // Bad ranges: a 422 naming the field, nothing stored.
    let minutely = create(&app, body("minutely", "* * * * *", json!({}))).await;
    let mid = minutely["id"].as_str().unwrap().to_string();
    for (from, to, field) in [
        ("2026-06-05T00:00:00Z", "2026-06-04T00:00:00Z", "from"),
        ("2026-06-01T00:00:00Z", "2026-06-11T00:00:00Z", "to"),
        ("yesterday", "2026-06-04T00:00:00Z", "from"),
        ("2026-06-01T00:00:00Z", "2026-06-04", "to"),
        // 1,001 minutes, both ends included.
        ("2026-06-09T00:00:00Z", "2026-06-09T16:40:00Z", "to"),
    ] {
        let (status, v) = backfill(&app, &mid, from, to).await;
        assert_eq!(
            (status, &v["field"]),
            (422, &json!(field)),
            "{from}..{to}: {v}"
        );
    }
    assert!(jobs_of(&app, &mid).await.is_empty());
    // 1,000 firings is one call.
    let (status, v) = backfill(&app, &mid, "2026-06-09T00:00:00Z", "2026-06-09T16:39:00Z").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, json!({"fired": 1000, "skipped": 0}));
    assert_eq!(jobs_of(&app, &mid).await.len(), 1000);
    // Unknown schedule: 404; an unknown field: 400; neither stores anything.
    let (status, v) = backfill(
        &app,
        "sch_nope",
        "2026-06-01T00:00:00Z",
        "2026-06-02T00:00:00Z",
    )
    .await;
    assert_eq!(status, 404, "{v}");
    let (status, v) = call(
        &app,
        Method::POST,
        &format!("/v1/schedules/{id}/backfill"),
        Some(json!({"from": "2026-05-01T00:00:00Z", "to": "2026-05-02T00:00:00Z", "overlap": "skip"})),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(jobs_of(&app, &id).await.len(), 10);
}

#[tokio::test]
async fn schedule_backfill_fires_a_past_range_once_sqlite() {
    backfill_range(false).await;
}

#[tokio::test]
async fn schedule_backfill_fires_a_past_range_once_postgres() {
    backfill_range(true).await;
}
