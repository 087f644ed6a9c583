//! The HTTP API end to end: the real app on a real SQLite file in a tempdir, served on
//! 127.0.0.1:0, driven with reqwest; jobs run by the real executor (`run_once` on a manual
//! clock) against a capturing webhook receiver.

use chrono::{DateTime, Duration, Utc};
use kairos_testkit::{Reply, TestReceiver};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Mutex;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
/// The Standard Webhooks specification's example secret.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// The secret's key part: it must not appear in any response either.
const SECRET_KEY: &str = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

mod common;

use common::TestApp;

struct Api {
    app: TestApp,
    bodies: Mutex<Vec<String>>,
}

impl std::ops::Deref for Api {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

struct Resp {
    status: StatusCode,
    content_type: String,
    headers: reqwest::header::HeaderMap,
    json: Value,
}

fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-05T10:00:00Z")
        .expect("instant")
        .to_utc()
}

impl Api {
    async fn start() -> Api {
        Api {
            app: TestApp::start(start_time(), TOKEN).await,
            bodies: Mutex::new(Vec::new()),
        }
    }

    async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Resp {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let res = req.send().await.expect("request");
        let status = res.status();
        let headers = res.headers().clone();
        let content_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let text = res.text().await.expect("body");
        self.bodies.lock().expect("lock").push(text.clone());
        let json = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
        };
        Resp {
            status,
            content_type,
            headers,
            json,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        let body = body.map(|b| serde_json::to_vec(&b).expect("json"));
        self.raw(method, path, Some(TOKEN), body).await
    }
    async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(body)).await
    }

    fn assert_no_secret(&self) {
        for b in self.bodies.lock().expect("lock").iter() {
            assert!(
                !b.contains(SECRET_KEY),
                "a response body shows the webhook secret: {b}"
            );
        }
    }
}

fn schedule_body(name: &str, url: &str) -> Value {
    json!({
        "name": name,
        "cron": "0 9 * * *",
        "timezone": "Europe/Berlin",
        "kind": "webhook",
        "webhook": {"url": url, "secret": SECRET},
        "payload": {"report": "daily"},
        "retry": {"delays": ["1s", "2s"], "max_attempts": 3},
        "misfire": "skip"
    })
}

fn job_body(url: &str, retry: Value) -> Value {
    json!({
        "kind": "webhook",
        "webhook": {"url": url, "secret": SECRET},
        "payload": {"hello": "world"},
        "retry": retry
    })
}

fn assert_problem(r: &Resp, status: u16) {
    assert_eq!(r.status.as_u16(), status, "{}", r.json);
    assert_eq!(r.content_type, "application/problem+json");
    assert_eq!(r.json["status"], status);
    assert!(r.json["type"].is_string() && r.json["title"].is_string());
    assert!(r.json["detail"].is_string());
}

/// Issue 12, finding 6: errors outside `/v1` — axum's own 404, 405, 413 and query rejections
/// on the public `/hooks/*` and `/unsubscribe` — are problem documents like `/v1`'s, not plain
/// text; HTML pages stay HTML.
#[tokio::test]
async fn errors_outside_v1_are_problem_documents() {
    let api = Api::start().await;
    let big = vec![b' '; 2 << 20];
    for path in [
        "/hooks/resend",
        "/hooks/standard/billing",
        "/unsubscribe?token=x",
    ] {
        let r = api.raw(Method::POST, path, None, Some(big.clone())).await;
        assert_problem(&r, 413);
        assert_eq!(r.json["type"], "urn:kairos:problem:too-large", "{path}");
    }
    for (method, path) in [
        (Method::GET, "/hooks/resend"),
        (Method::PUT, "/unsubscribe"),
        (Method::DELETE, "/healthz"),
    ] {
        let r = api.raw(method, path, None, None).await;
        assert_problem(&r, 405);
        assert!(r.headers.get("allow").is_some(), "{path}: {:?}", r.headers);
    }
    for path in ["/hooks/nothing", "/hooks/standard", "/nothing-here"] {
        let r = api.raw(Method::POST, path, None, None).await;
        assert_problem(&r, 404);
    }
    let r = api
        .raw(Method::GET, "/unsubscribe?token=a&token=b", None, None)
        .await;
    assert_problem(&r, 400);
    // HTML stays HTML.
    let res = api
        .http
        .get(format!("{}/admin/jobs", api.base))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let ct = res.headers()["content-type"].to_str().expect("ascii");
    assert!(ct.starts_with("text/html"), "{ct}");
}

#[tokio::test]
async fn health_needs_no_token_and_v1_needs_the_right_one() {
    let api = Api::start().await;
    let r = api.raw(Method::GET, "/healthz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json, json!({"status": "ok"}));
    let r = api.raw(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);

    for path in ["/v1/schedules", "/v1/jobs", "/v1/dlq", "/v1/jobs/job_x"] {
        let r = api.raw(Method::GET, path, None, None).await;
        assert_problem(&r, 401);
        let r = api.raw(Method::GET, path, Some("wrong-token"), None).await;
        assert_problem(&r, 401);
        let r = api
            .raw(
                Method::GET,
                path,
                Some("test-token-of-at-least-thirty-two-chars-and-more"),
                None,
            )
            .await;
        assert_problem(&r, 401);
    }
    // Unauthenticated writes are refused before the body is read.
    let r = api
        .raw(Method::POST, "/v1/jobs", None, Some(b"{".to_vec()))
        .await;
    assert_problem(&r, 401);
    let r = api.get("/v1/jobs").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json, json!({"data": [], "next_before": null}));
}

#[tokio::test]
async fn schedule_crud_shows_next_fire_and_upcoming_without_the_secret() {
    let api = Api::start().await;
    let r = api
        .post(
            "/v1/schedules",
            schedule_body("daily", "http://127.0.0.1:9/h"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("sch_"));
    // 09:00 Berlin on 2026-01-05 is 08:00Z, before the clock's 10:00Z: the next is tomorrow.
    assert_eq!(r.json["next_fire_at"], "2026-01-06T08:00:00.000Z");
    assert_eq!(r.json["webhook"]["url"], "http://127.0.0.1:9/h");

    let r = api.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!(r.status, StatusCode::OK);
    let upcoming = r.json["upcoming"].as_array().expect("upcoming");
    assert_eq!(upcoming.len(), 5);
    assert_eq!(upcoming[4], "2026-01-10T08:00:00.000Z");

    let r = api.get("/v1/schedules").await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));

    let r = api
        .post(&format!("/v1/schedules/{id}/pause"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json["state"], "paused");
    assert_eq!(r.json["paused"], true);
    let r = api
        .post(&format!("/v1/schedules/{id}/resume"), json!({}))
        .await;
    assert_eq!(r.json["state"], "active");
    assert_eq!(r.json["next_fire_at"], "2026-01-06T08:00:00.000Z");

    let mut replaced = schedule_body("daily", "http://127.0.0.1:9/h");
    replaced["cron"] = json!("30 6 * * *");
    let r = api
        .call(Method::PUT, &format!("/v1/schedules/{id}"), Some(replaced))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["cron"], "30 6 * * *");
    assert_eq!(r.json["next_fire_at"], "2026-01-06T05:30:00.000Z");

    // The same name again is a conflict.
    let r = api
        .post(
            "/v1/schedules",
            schedule_body("daily", "http://127.0.0.1:9/h"),
        )
        .await;
    assert_problem(&r, 409);

    let r = api
        .call(Method::DELETE, &format!("/v1/schedules/{id}"), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = api.get(&format!("/v1/schedules/{id}")).await;
    assert_problem(&r, 404);
    api.assert_no_secret();
}

#[tokio::test]
async fn bad_input_is_a_problem_naming_the_field() {
    let api = Api::start().await;
    let mut body = schedule_body("bad", "http://127.0.0.1:9/h");
    body["cron"] = json!("61 * * * *");
    let r = api.post("/v1/schedules", body).await;
    assert_problem(&r, 422);
    assert_eq!(r.json["field"], "cron");

    let mut body = schedule_body("bad", "http://127.0.0.1:9/h");
    body["timezone"] = json!("Mars/Olympus");
    let r = api.post("/v1/schedules", body).await;
    assert_problem(&r, 422);
    assert_eq!(r.json["field"], "timezone");

    let mut body = schedule_body("bad", "http://127.0.0.1:9/h");
    body["colour"] = json!("blue");
    let r = api.post("/v1/schedules", body).await;
    assert_problem(&r, 400);
    let detail = r.json["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("unknown field `colour`"), "{detail}");

    let r = api
        .raw(
            Method::POST,
            "/v1/jobs",
            Some(TOKEN),
            Some(b"{\"kind\": ".to_vec()),
        )
        .await;
    assert_problem(&r, 400);

    let r = api.get("/v1/jobs?state=sleeping").await;
    assert_problem(&r, 422);
    assert_eq!(r.json["field"], "state");
    let r = api.get("/v1/jobs?limit=many").await;
    assert_problem(&r, 400);

    let big = vec![b' '; 2 << 20];
    let r = api
        .raw(Method::POST, "/v1/jobs", Some(TOKEN), Some(big))
        .await;
    assert_problem(&r, 413);

    let r = api.get("/v1/nothing-here").await;
    assert_problem(&r, 404);
    let r = api.get("/v1/jobs/job_missing").await;
    assert_problem(&r, 404);
    api.assert_no_secret();
}

#[tokio::test]
async fn fire_now_twice_creates_the_period_once() {
    let api = Api::start().await;
    let r = api
        .post(
            "/v1/schedules",
            schedule_body("fire", "http://127.0.0.1:9/h"),
        )
        .await;
    let id = r.json["id"].as_str().expect("id").to_string();
    let r = api
        .post(&format!("/v1/schedules/{id}/fire"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["created"], 1);
    assert_eq!(r.json["job_ids"].as_array().map(Vec::len), Some(1));
    assert_eq!(r.json["fire_at"], "2026-01-05T08:00:00.000Z");
    let key = r.json["period_key"].clone();
    assert!(key.is_string());
    let r = api
        .post(&format!("/v1/schedules/{id}/fire"), json!({}))
        .await;
    assert_eq!(r.json["created"], 0);
    assert_eq!(r.json["period_key"], key);
    let r = api.get(&format!("/v1/jobs?schedule_id={id}")).await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));
    api.assert_no_secret();
}

#[tokio::test]
async fn enqueue_with_an_idempotency_key_twice_returns_the_same_job() {
    let api = Api::start().await;
    let mut body = job_body("http://127.0.0.1:9/h", json!({"delays": ["1s"]}));
    body["idempotency_key"] = json!("order-42");
    body["run_at"] = json!("2026-02-01T00:00:00Z");
    let first = api.post("/v1/jobs", body.clone()).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.json);
    let second = api.post("/v1/jobs", body).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.json);
    assert_eq!(first.json["id"], second.json["id"]);
    assert_eq!(first.json["run_at"], "2026-02-01T00:00:00.000Z");
    assert_eq!(first.json["idempotency_key"], "order-42");
    api.assert_no_secret();
}

#[tokio::test]
async fn a_job_shows_its_attempts_and_a_succeeded_job_cannot_be_retried() {
    let api = Api::start().await;
    let receiver = TestReceiver::start().await;
    receiver.respond_with(vec![Reply::status(503)]);
    let r = api
        .post(
            "/v1/jobs",
            job_body(
                &receiver.url("/hook"),
                json!({"delays": ["1s"], "max_attempts": 2}),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_string();
    assert_eq!(r.json["state"], "available");

    api.run_jobs().await;
    let r = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(r.json["state"], "available");
    assert_eq!(r.json["attempt"], 1);
    assert!(r.json["last_error"].is_string());

    api.clock.advance(Duration::seconds(2));
    api.run_jobs().await;
    let r = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(r.json["state"], "succeeded", "{}", r.json);
    for key in [
        "id",
        "kind",
        "state",
        "attempt",
        "run_at",
        "created_at",
        "finished_at",
        "schedule_id",
        "period_key",
        "last_error",
        "reason",
        "payload",
        "attempts",
    ] {
        assert!(r.json.get(key).is_some(), "missing {key}: {}", r.json);
    }
    let attempts = r.json["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["status_code"], 503);
    assert_eq!(attempts[0]["error_class"], "transient");
    assert_eq!(attempts[1]["outcome"], "succeeded");
    assert_eq!(attempts[1]["status_code"], 200);
    for key in ["started_at", "finished_at", "error", "response"] {
        assert!(attempts[0].get(key).is_some(), "missing {key}");
    }
    // Times are RFC 3339 UTC with milliseconds.
    let started = attempts[1]["started_at"].as_str().expect("started_at");
    assert!(started.ends_with('Z') && started.len() == 24, "{started}");

    let ids: Vec<_> = receiver
        .received()
        .iter()
        .map(|m| m.header("webhook-id").map(str::to_string))
        .collect();
    assert_eq!(ids, vec![Some(id.clone()), Some(id.clone())]);

    let r = api.post(&format!("/v1/jobs/{id}/retry"), json!({})).await;
    assert_problem(&r, 409);
    let r = api
        .call(Method::POST, &format!("/v1/jobs/{id}/cancel"), None)
        .await;
    assert_problem(&r, 409);
    api.assert_no_secret();
}

#[tokio::test]
async fn dead_jobs_are_filtered_listed_in_the_dlq_and_replayed() {
    let api = Api::start().await;
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::status(500));
    let dead = api
        .post(
            "/v1/jobs",
            job_body(
                &receiver.url("/dead"),
                json!({"delays": [], "max_attempts": 1}),
            ),
        )
        .await;
    let dead_id = dead.json["id"].as_str().expect("id").to_string();
    let mut later = job_body(&receiver.url("/later"), json!({"delays": ["1s"]}));
    later["run_at"] = json!("2026-03-01T00:00:00Z");
    let later = api.post("/v1/jobs", later).await;
    let later_id = later.json["id"].as_str().expect("id").to_string();
    api.run_jobs().await;

    let r = api.get("/v1/jobs?state=dead&kind=webhook").await;
    let ids: Vec<_> = r.json["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|j| j["id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids, vec![dead_id.clone()]);
    assert_eq!(r.json["next_before"], Value::Null);
    let r = api.get("/v1/jobs?state=available").await;
    assert_eq!(r.json["data"][0]["id"], later_id.as_str());
    let r = api.get("/v1/dlq").await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(r.json["data"][0]["state"], "dead");

    // Paging: one per page.
    let r = api.get("/v1/jobs?limit=1").await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));
    let next = r.json["next_before"]
        .as_str()
        .expect("next_before")
        .to_string();
    let r = api.get(&format!("/v1/jobs?limit=1&before={next}")).await;
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1));
    assert_ne!(r.json["data"][0]["id"].as_str(), Some(next.as_str()));

    let r = api.post("/v1/dlq/replay", json!({})).await;
    assert_problem(&r, 422);
    let r = api.post("/v1/dlq/replay", json!({"all": true})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["replayed"], 1);
    assert_eq!(r.json["job_ids"], json!([dead_id.clone()]));
    let r = api.get(&format!("/v1/jobs/{dead_id}")).await;
    assert_eq!(r.json["state"], "available");

    let r = api
        .post(
            &format!("/v1/jobs/{later_id}/cancel"),
            json!({"reason": "not needed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["state"], "cancelled");
    assert_eq!(r.json["reason"], "not needed");
    let r = api
        .post("/v1/dlq/replay", json!({"ids": [later_id, "job_missing"]}))
        .await;
    assert_eq!(r.json["replayed"], 1);
    assert_eq!(r.json["failed"][0]["id"], "job_missing");
    api.assert_no_secret();
}

#[tokio::test]
async fn service_unavailable_problems_carry_retry_after() {
    // The mapping itself: an unavailable store is 503 with Retry-After.
    use axum::response::IntoResponse;
    let e = kairos_engine::OpsError::new(kairos_engine::OpsErrorKind::Unavailable, "db down");
    let res = kairos_server::problem::Problem::from(e).into_response();
    assert_eq!(res.status().as_u16(), 503);
    assert!(res.headers().get("retry-after").is_some());
    // An internal error never leaks its message.
    let e = kairos_engine::OpsError::new(kairos_engine::OpsErrorKind::Internal, "secret sauce");
    let p = kairos_server::problem::Problem::from(e);
    assert_eq!(p.status, 500);
    assert!(!p.detail.contains("secret sauce"));
    let api = Api::start().await;
    let r = api.get("/readyz").await;
    assert!(r.headers.get("retry-after").is_none());
}
