//! Request bodies are JSON objects, as the OpenAPI document says: schemathesis found
//! `PUT /v1/subscriptions/{recipient_id}/{topic}` accepting `[null, null]` (serde reads an
//! array as a struct's fields in order).

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use serde_json::Value;

const TOKEN: &str = "json-bodies-test-token-of-at-least-32-chars";

fn t0() -> DateTime<Utc> {
    "2026-11-29T12:00:00Z".parse().expect("instant")
}

#[tokio::test]
async fn json_bodies_that_are_arrays_are_refused_with_400() {
    let app = TestApp::start(t0(), TOKEN).await;
    for (method, path, body) in [
        (
            reqwest::Method::PUT,
            "/v1/subscriptions/rcpt_1/weekly",
            "[null, null]",
        ),
        (reqwest::Method::POST, "/v1/jobs/cancel", "[]"),
        (
            reqwest::Method::POST,
            "/v1/dlq/replay",
            " [[\"job_1\"], true]",
        ),
        (reqwest::Method::PUT, "/v1/topics/weekly", "[\"Hi\"]"),
    ] {
        let r = app
            .http
            .request(method.clone(), format!("{}{path}", app.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status().as_u16(), 400, "{method} {path} {body}");
        let p: Value = r.json().await.expect("problem");
        assert!(
            p["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("JSON object"),
            "{p}"
        );
    }
}
