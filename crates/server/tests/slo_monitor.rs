//! The monitor watched from the API (issue 30), over a real SQLite file and a real HTTP
//! server on 127.0.0.1: `GET /v1/slo` carries `monitor_last_pass_at` and warns
//! `monitor_stale` after three intervals without a pass, `/metrics` exports the last pass, and
//! `POST /v1/slo/alerts/{id}/ack` acknowledges a fixable warning.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestApp;
use kairos_engine::monitor::{Monitor, MonitorConfig};
use kairos_store::{SloAlert, SloAlertPut};
use prometheus_parse::{Scrape, Value};
use serde_json::Value as Json;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T09:00:00Z")
        .expect("instant")
        .to_utc()
}

async fn slo(app: &TestApp) -> Json {
    let res = app
        .http
        .get(format!("{}/v1/slo", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET /v1/slo");
    assert_eq!(res.status(), 200);
    res.json().await.expect("json")
}

fn check<'a>(v: &'a Json, name: &str) -> &'a Json {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v:#}"))
}

/// The gauge `metric` (without labels, or with `check`), as scraped.
async fn gauge(app: &TestApp, metric: &str, check: Option<&str>) -> f64 {
    let text = app
        .http
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("body");
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus");
    let found: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| check.is_none_or(|c| s.labels.get("check") == Some(c)))
        .collect();
    assert_eq!(found.len(), 1, "{metric} {check:?}: {found:?}");
    match found[0].value {
        Value::Gauge(v) | Value::Untyped(v) => v,
        ref other => panic!("{metric}: {other:?}"),
    }
}

/// `monitor_last_pass_at` is null before any pass and the end of the last completed pass
/// after one; three intervals (3 × 60 s) later without another, `monitor_stale` warns on the
/// API and on `/metrics`, where `kairos_monitor_last_success_timestamp_seconds` is the pass
/// (S3-17).
#[tokio::test]
async fn slo_shows_the_last_pass_and_warns_when_the_monitor_stops_s3_17() {
    let app = TestApp::start(t0(), TOKEN).await;
    let before = slo(&app).await;
    assert!(before["monitor_last_pass_at"].is_null(), "{before:#}");
    assert_eq!(
        check(&before, "monitor_stale")["status"],
        "insufficient_data"
    );
    assert_eq!(
        gauge(&app, "kairos_monitor_last_success_timestamp_seconds", None).await,
        0.0
    );

    // One background pass, as the leader's runner makes it.
    let pass = t0() + Duration::seconds(30);
    Monitor::new(MonitorConfig::default(), app.store.clone())
        .expect("monitor")
        .run_once(pass)
        .await
        .expect("pass");
    app.clock.set(pass + Duration::seconds(180));
    let fresh = slo(&app).await;
    assert_eq!(fresh["monitor_last_pass_at"], "2026-11-29T09:00:30.000Z");
    assert_eq!(check(&fresh, "monitor_stale")["status"], "ok");
    assert_eq!(fresh["warnings"], 0, "{fresh:#}");
    assert_eq!(
        gauge(&app, "kairos_monitor_last_success_timestamp_seconds", None).await,
        pass.timestamp() as f64
    );
    assert_eq!(
        gauge(&app, "kairos_slo_warning", Some("monitor_stale")).await,
        0.0
    );

    app.clock.set(pass + Duration::seconds(181));
    let stale = slo(&app).await;
    let c = check(&stale, "monitor_stale");
    assert_eq!(c["status"], "warning", "{stale:#}");
    assert_eq!(c["since"], "2026-11-29T09:00:30.000Z");
    assert_eq!(stale["status"], "warning");
    assert_eq!(stale["warnings"], 1);
    assert_eq!(
        gauge(&app, "kairos_slo_warning", Some("monitor_stale")).await,
        1.0
    );
}

fn stored(key: &str, check: &str) -> SloAlertPut {
    SloAlertPut {
        alert: SloAlert {
            key: key.into(),
            check: check.into(),
            active: true,
            since: t0(),
            message: "warned".into(),
            seq: 1,
            notified_seq: 1,
            updated_at: t0(),
            acked_at: None,
        },
    }
}

/// `GET /v1/slo/alerts` lists each alert with its id; `POST /v1/slo/alerts/{id}/ack` needs the
/// token (401), knows its ids (404), refuses a check that recovers on its own (409), and
/// answers 200 with the alert, recovered and acknowledged (S3-17).
#[tokio::test]
async fn slo_alert_ack_route_answers_200_404_409_and_401_s3_17() {
    let app = TestApp::start(t0(), TOKEN).await;
    app.store
        .slo_alert_put(stored("dead_runs:sch_1", "dead_runs"))
        .await
        .unwrap();
    app.store
        .slo_alert_put(stored("failure_rate:webhook", "failure_rate"))
        .await
        .unwrap();
    let list: Json = app
        .http
        .get(format!("{}/v1/slo/alerts", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("json");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|a| a["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["dead_runs:sch_1", "failure_rate:webhook"]);
    assert_eq!(list["data"][0]["status"], "warning");
    assert_eq!(list["data"][0]["subject"], "sch_1");

    let ack = |id: &str| format!("{}/v1/slo/alerts/{id}/ack", app.base);
    let anon = app.http.post(ack("dead_runs:sch_1")).send().await.unwrap();
    assert_eq!(anon.status(), 401);
    let unknown = app
        .http
        .post(ack("dead_runs:nope"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        unknown.headers()["content-type"],
        "application/problem+json"
    );
    let rate = app
        .http
        .post(ack("failure_rate:webhook"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(rate.status(), 409);

    app.clock.set(t0() + Duration::minutes(5));
    let res = app
        .http
        .post(ack("dead_runs:sch_1"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let a: Json = res.json().await.expect("json");
    assert_eq!(a["id"], "dead_runs:sch_1");
    assert_eq!(a["status"], "ok");
    assert_eq!(a["acked"], true);
    assert_eq!(a["acked_at"], "2026-11-29T09:05:00.000Z");
    let stored = app.store.slo_alert_list().await.unwrap();
    assert!(stored[0].acked() && !stored[0].active, "{stored:?}");
    assert!(stored[1].active, "the failure rate still warns");
}
