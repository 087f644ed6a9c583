//! `http` jobs through the API (issue 6 contract): the real app on a real
//! SQLite file served on 127.0.0.1:0; the job runs by the real executor on a manual clock
//! against a local HTTP server; the attempts are read back with their status codes and
//! response excerpts. No response ever carries the token or the signing secret.

use chrono::{DateTime, Utc};
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
const BEARER: &str = "tok_do_not_show_me";

mod common;

use common::TestApp;

struct Api {
    app: TestApp,
}

impl std::ops::Deref for Api {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-10-20T21:00:00Z")
        .expect("instant")
        .to_utc()
}

impl Api {
    async fn start() -> Api {
        Api {
            app: TestApp::start(t0(), TOKEN).await,
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let res = req.bearer_auth(TOKEN).send().await.expect("request");
        let status = res.status().as_u16();
        let text = res.text().await.expect("body");
        assert!(!text.contains(BEARER), "a response shows the token: {text}");
        assert!(
            !text.contains("whsec_"),
            "a response shows a secret: {text}"
        );
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body))
            .await
    }
    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }
    async fn run_at(&self, at: DateTime<Utc>) {
        self.clock.set(at);
        self.engine.executor().run_once(at).await.expect("executor");
    }
}

/// The issue's contract body: `POST /v1/jobs {"kind": "http", "http": {url, method, headers,
/// body, timeout}, "retry": {…}}`; a 503 then a 200; `GET /v1/jobs/{id}` shows both attempts
/// with `status_code` and the `response` excerpt, and the job `succeeded`.
#[tokio::test]
async fn post_http_job_and_read_the_attempts_back() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(503).with_body(r#"{"error":"high demand"}"#),
    ]);
    rx.set_default(Reply::status(200).with_body(r#"{"digest":"2026-10-21","items":12}"#));
    let api = Api::start().await;
    let (status, job) = api
        .post(
            "/v1/jobs",
            json!({
                "kind": "http",
                "http": {
                    "url": rx.url("/api/cron/digest"),
                    "method": "POST",
                    "headers": {"X-Source": "kairos"},
                    "body": {"date": "2026-10-21"},
                    "timeout": "2m",
                    "bearer_token": BEARER,
                },
                "retry": {"transient": {"delays": ["15s", "45s", "135s"]}, "permanent": {"delays": ["1s", "2s"]}},
            }),
        )
        .await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().expect("id").to_string();
    assert_eq!(job["kind"], "http");
    assert_eq!(job["max_attempts"], 4);

    api.run_at(t0()).await;
    let (_, j) = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(j["state"], "available", "{j}");
    assert_eq!(j["attempts"][0]["status_code"], 503);
    assert_eq!(j["attempts"][0]["outcome"], "failed");
    assert_eq!(j["attempts"][0]["error_class"], "transient");
    assert_eq!(j["attempts"][0]["response"], r#"{"error":"high demand"}"#);
    let run_at = DateTime::parse_from_rfc3339(j["run_at"].as_str().expect("run_at"))
        .expect("instant")
        .to_utc();
    assert!(run_at >= t0() + chrono::Duration::seconds(15), "{run_at}");

    api.run_at(run_at).await;
    let (_, j) = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(j["state"], "succeeded", "{j}");
    let attempts = j["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[1]["status_code"], 200);
    assert_eq!(
        attempts[1]["response"],
        r#"{"digest":"2026-10-21","items":12}"#
    );
    let req = rx.last().expect("a request");
    assert_eq!(
        req.header("authorization"),
        Some(&*format!("Bearer {BEARER}"))
    );
    assert_eq!(req.header("x-source"), Some("kairos"));
    assert_eq!(req.body_text(), r#"{"date":"2026-10-21"}"#);
    // The listing shows no secret either (checked in `send`).
    api.get("/v1/jobs?kind=http").await;
}

/// `POST /v1/schedules` with `"kind": "http"` and the same `http` object; a budget over the
/// deadline is a 422 problem naming `retry` with the arithmetic.
#[tokio::test]
async fn post_http_schedule_and_budget_rejection() {
    let rx = TestReceiver::start().await;
    let api = Api::start().await;
    let http = json!({
        "url": rx.url("/api/cron/digest"),
        "method": "GET",
        "timeout": "5m",
        "deadline": "15m",
        "signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    });
    let (status, p) = api
        .post(
            "/v1/schedules",
            json!({"name": "digest-clock", "kind": "http", "cron": "0 6 * * *",
                   "timezone": "Asia/Tokyo", "period": "day", "http": http}),
        )
        .await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(p["field"], "retry");
    let detail = p["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("4 attempts × 5m timeout"), "{detail}");

    let mut http = http;
    http["timeout"] = json!("2m");
    // The delays fit, but a 15-minute Retry-After on every wait (plus jitter) does not.
    let (status, p) = api
        .post(
            "/v1/schedules",
            json!({"name": "digest-clock", "kind": "http", "cron": "0 6 * * *",
                   "timezone": "Asia/Tokyo", "period": "day", "http": http}),
        )
        .await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(p["field"], "retry");
    let detail = p["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("Retry-After of up to 15m"), "{detail}");
    let (status, s) = api
        .post(
            "/v1/schedules",
            json!({"name": "digest-clock", "kind": "http", "cron": "0 6 * * *",
                   "timezone": "Asia/Tokyo", "period": "day", "http": http,
                   "retry": {"retry_after_cap": "1m"}}),
        )
        .await;
    assert_eq!(status, 201, "{s}");
    assert_eq!(s["kind"], "http");
    assert!(s["payload"]["http_target_id"].is_string(), "{s}");
}

/// Issue 35 contract: `GET /v1/schedules/{id}` and `GET /v1/jobs/{id}` of an `http` schedule
/// and its job show the URL and method, the password of the URL's user info and every query
/// value masked (`https://user:***@host/path?token=***`); no response holds the password or
/// a query value.
#[tokio::test]
async fn http_schedule_and_job_views_show_the_masked_url_and_method() {
    let rx = TestReceiver::start().await;
    let api = Api::start().await;
    let host = rx
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let url = format!("http://ops:pa55word@{host}/api/run?token=q-secret-1&v=2");
    let masked = format!("http://ops:***@{host}/api/run?token=***&v=***");
    let (status, s) = api
        .post(
            "/v1/schedules",
            json!({"name": "visible-http", "kind": "http", "cron": "0 6 * * *",
                   "http": {"url": url, "method": "PUT", "headers": {"X-Api-Key": "k-secret-2"},
                            "body": "x", "bearer_token": BEARER}}),
        )
        .await;
    assert_eq!(status, 201, "{s}");
    let id = s["id"].as_str().expect("id").to_string();
    let (status, shown) = api.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["http"]["url"], masked.as_str(), "{shown}");
    assert_eq!(shown["http"]["method"], "PUT");
    assert_eq!(shown["http"]["auth"], "bearer");
    // Names only (the body added its content type), never a value.
    assert_eq!(
        shown["http"]["headers"],
        json!(["content-type", "x-api-key"])
    );
    let (status, fired) = api
        .post(&format!("/v1/schedules/{id}/fire"), json!({}))
        .await;
    assert_eq!(status, 200, "{fired}");
    let job_id = fired["job_ids"][0].as_str().expect("a job").to_string();
    let (status, job) = api.get(&format!("/v1/jobs/{job_id}")).await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["http"]["url"], masked.as_str(), "{job}");
    assert_eq!(job["http"]["method"], "PUT");
    for text in [shown.to_string(), job.to_string()] {
        for secret in ["pa55word", "q-secret-1", "k-secret-2"] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
    }
    // A job enqueued directly shows its target too; a webhook job has no `http`.
    let (status, direct) = api
        .post(
            "/v1/jobs",
            json!({"kind": "http", "http": {"url": url, "method": "GET"}}),
        )
        .await;
    assert_eq!(status, 201, "{direct}");
    assert_eq!(direct["http"]["url"], masked.as_str(), "{direct}");
    assert_eq!(direct["http"]["method"], "GET");
    let (_, list) = api.get("/v1/jobs?kind=http").await;
    assert!(!list.to_string().contains("pa55word"), "{list}");
}
