//! `POST /v1/dlq/replay {"all": true}` does bounded work per request (issue 12, finding 6 for
//! the API): at most `REPLAY_ALL_MAX` dead jobs, and the answer says how many were replayed
//! and whether more remain.

mod common;

use chrono::{DateTime, Utc};
use common::TestApp;
use kairos_core::Clock;
use kairos_server::routes::dlq::REPLAY_ALL_MAX;
use serde_json::{Value, json};

const TOKEN: &str = "dlq-replay-test-token-of-at-least-32-chars";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t0() -> DateTime<Utc> {
    "2026-11-29T12:00:00Z".parse().expect("instant")
}

async fn replay_all(app: &TestApp, body: Value) -> Value {
    let r = app
        .http
        .post(format!("{}/v1/dlq/replay", app.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    r.json().await.expect("json")
}

async fn dead_count(app: &TestApp) -> usize {
    app.kairos.dead_job_ids(None).await.expect("dead ids").len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_replay_all_is_bounded_per_request_and_says_how_many_and_whether_more_remain() {
    let app = TestApp::start(t0(), TOKEN).await;
    let total = REPLAY_ALL_MAX + 3;
    for i in 0..total {
        app.kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                // Nothing listens on port 1: refused at once, and with one attempt, dead.
                webhook: Some(kairos_engine::ops::WebhookTarget {
                    url: "http://127.0.0.1:1/hook".into(),
                    secret: SECRET.into(),
                }),
                payload: Some(json!({"n": i})),
                retry: Some(serde_json::from_value(json!({"max_attempts": 1})).expect("retry")),
                ..Default::default()
            })
            .await
            .expect("enqueue");
    }
    for _ in 0..50 {
        let r = app
            .engine
            .executor()
            .run_once(app.clock.now())
            .await
            .expect("executor");
        if r.claimed == 0 {
            break;
        }
    }
    assert_eq!(dead_count(&app).await, total);

    let first = replay_all(&app, json!({"all": true})).await;
    assert_eq!(first["replayed"], REPLAY_ALL_MAX);
    assert_eq!(
        first["job_ids"].as_array().map(Vec::len),
        Some(REPLAY_ALL_MAX)
    );
    assert_eq!(first["more"], true);
    assert_eq!(first["limit"], REPLAY_ALL_MAX);
    assert_eq!(dead_count(&app).await, 3);

    let second = replay_all(&app, json!({"all": true})).await;
    assert_eq!(second["replayed"], 3);
    assert_eq!(second["more"], false);
    assert_eq!(dead_count(&app).await, 0);

    // Nothing dead: nothing to do, nothing more.
    let third = replay_all(&app, json!({"all": true, "kind": "webhook"})).await;
    assert_eq!(third["replayed"], 0);
    assert_eq!(third["more"], false);
    // With ids, `more` is false and there is no per-request maximum to report.
    let ids = replay_all(&app, json!({"ids": ["job_missing"]})).await;
    assert_eq!(ids["more"], false);
    assert!(ids.get("limit").is_none(), "{ids}");
}
