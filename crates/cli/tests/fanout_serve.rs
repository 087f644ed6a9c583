//! The seeds' fan-out through the real `kairos serve`: one firing reaches every channel, each
//! channel is retried on its own, and a channel that succeeded is never sent again (
//! S0-7); a subscriber gets one mail and one webhook per period; bad `channels` bodies
//! are 422s naming the field.

mod common;

use common::{SECRET, Server, TOKEN, api};
use kairos_testkit::{Reply, TestReceiver, init_crypto, verify_standard_webhook};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// The schedule's occurrences (newest first).
async fn occurrences(http: &reqwest::Client, base: &str, sid: &str) -> Vec<Value> {
    let (status, body) = api(
        http,
        Method::GET,
        format!("{base}/v1/occurrences?schedule={sid}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s0_7_two_webhook_channels_retry_alone_and_the_succeeded_one_is_sent_once() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let primary = TestReceiver::start().await;
    primary.respond_with(vec![Reply::status(503)]);
    let backup = TestReceiver::start().await;
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let http = client();
    let base = server.base.clone();

    // A yearly clock: the test fires it by hand, so the period is known and fixed.
    let (status, sched) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules"),
        Some(json!({
            "name": "two-channels",
            "cron": "0 9 1 1 *",
            "payload": {"reminder": "standup"},
            "channels": [
                {"name": "primary", "kind": "webhook",
                 "webhook": {"url": primary.url("/hook"), "secret": SECRET},
                 "retry": {"delays": ["1s"], "max_attempts": 3}},
                {"name": "backup", "kind": "webhook",
                 "webhook": {"url": backup.url("/hook"), "secret": SECRET},
                 "payload": {"reminder": "standup", "via": "backup"}}
            ]
        })),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    let sid = sched["id"].as_str().expect("id").to_string();
    let names: Vec<&str> = sched["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["primary", "backup"]);

    let (status, fired) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert!(status == 200 || status == 201, "{fired}");
    assert_eq!(fired["created"], 2, "{fired}");
    // Firing the same period again creates nothing new (dedupe per schedule, period, channel).
    let (_, again) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert_eq!(again["created"], 0, "{again}");

    // The occurrence is pending while the primary channel waits for its retry, then success.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen_pending = false;
    let occ = loop {
        assert!(
            Instant::now() < deadline,
            "the occurrence did not succeed within 30 s; stderr:\n{}",
            server.stderr()
        );
        let occ = occurrences(&http, &base, &sid).await;
        assert_eq!(occ.len(), 1, "{occ:?}");
        match occ[0]["status"].as_str() {
            Some("pending") => seen_pending = true,
            Some("success") => break occ[0].clone(),
            other => panic!("unexpected occurrence status {other:?}: {occ:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(seen_pending, "the occurrence was never seen pending");
    let mut channels: Vec<&str> = occ["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| c["channel"].as_str().unwrap_or_default())
        .collect();
    channels.sort();
    assert_eq!(channels, ["backup", "primary"], "{occ}");
    assert!(occ.get("failed_channels").is_none(), "{occ}");

    // Give a wrongly re-sent sibling time to arrive before counting.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(primary.count(), 2, "primary: one 503, one 200");
    assert_eq!(backup.count(), 1, "backup succeeded first time: sent once");
    let now = common::now_unix();
    for r in primary.received().iter().chain(backup.received().iter()) {
        assert!(verify_standard_webhook(SECRET, r, now), "bad signature");
    }
    let body: Value = serde_json::from_slice(&backup.received()[0].body).expect("json");
    assert_eq!(
        body["data"]["via"], "backup",
        "the channel's own payload: {body}"
    );
    let body: Value = serde_json::from_slice(&primary.received()[1].body).expect("json");
    assert_eq!(body["data"], json!({"reminder": "standup"}), "{body}");

    // Each job names its channel.
    let (_, page) = api(
        &http,
        Method::GET,
        format!("{base}/v1/jobs?schedule_id={sid}"),
        None,
    )
    .await;
    let jobs = page["data"].as_array().expect("jobs").clone();
    assert_eq!(jobs.len(), 2);
    for j in &jobs {
        let id = j["id"].as_str().expect("id");
        let (_, job) = api(&http, Method::GET, format!("{base}/v1/jobs/{id}"), None).await;
        let channel = job["channel"].as_str().expect("channel");
        let attempts = job["attempts"].as_array().map(Vec::len);
        match channel {
            "primary" => assert_eq!(attempts, Some(2), "{job}"),
            "backup" => assert_eq!(attempts, Some(1), "{job}"),
            other => panic!("unknown channel {other}"),
        }
        assert_eq!(job["state"], "succeeded");
    }
    server.terminate(Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_3_subscriber_with_email_and_webhook_gets_one_of_each_per_period() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = TestReceiver::start().await;
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let http = client();
    let base = server.base.clone();
    let call = |m: Method, path: &str, body: Option<Value>| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { api(&http, m, url, body).await }
    };

    let (s, b) = call(
        Method::PUT,
        "/v1/recipients/usr_1",
        Some(json!({"email": "ada@example.com", "timezone": "Asia/Tokyo",
                    "webhook": {"url": hook.url("/notify"), "secret": SECRET}})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["webhook_endpoint_id"].as_str().is_some(), "{b}");
    let (s, b) = call(
        Method::PUT,
        "/v1/topics/weekly",
        Some(json!({"subject": "Your week {{ period.key }}", "text": "Hello {{ recipient.id }}"})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(
        Method::PUT,
        "/v1/subscriptions/usr_1/weekly",
        Some(json!({"channels": ["email", "webhook"]})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, sched) = call(
        Method::POST,
        "/v1/schedules",
        Some(json!({"name": "weekly", "kind": "email", "topic": "weekly",
                    "cron": "0 9 * * 1", "timezone": "Asia/Tokyo", "period": "iso_week"})),
    )
    .await;
    assert_eq!(s, 201, "{sched}");
    let sid = sched["id"].as_str().expect("id").to_string();

    // The schedule fires twice for the same period.
    for _ in 0..2 {
        let (s, b) = call(Method::POST, &format!("/v1/schedules/{sid}/fire"), None).await;
        assert!(s == 200 || s == 201, "{b}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let occ = loop {
        assert!(
            Instant::now() < deadline,
            "no success within 30 s; stderr:\n{}",
            server.stderr()
        );
        let occ = occurrences(&http, &base, &sid).await;
        if occ.first().is_some_and(|o| o["status"] == "success") {
            break occ;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(occ.len(), 1, "one period: {occ:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let outbox = dir.path().join("outbox");
    let mails: Vec<_> = std::fs::read_dir(&outbox)
        .map(|d| d.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    assert_eq!(
        mails.len(),
        1,
        "one mail per period in {}",
        outbox.display()
    );
    assert_eq!(hook.count(), 1, "one webhook per period");
    let r = &hook.received()[0];
    assert!(verify_standard_webhook(SECRET, r, common::now_unix()));
    let body: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(body["type"], "notification");
    assert_eq!(body["topic"], "weekly");
    assert_eq!(body["recipient_id"], "usr_1");
    assert_eq!(body["text"], "Hello usr_1");
    let period = body["period_key"].as_str().expect("period key");
    assert_eq!(body["subject"], format!("Your week {period}"));
    assert!(
        !r.body_text().contains("ada@example.com"),
        "the address never leaves in a webhook: {}",
        r.body_text()
    );
    server.terminate(Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_channels_bodies_are_422_naming_the_field() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let http = client();
    let hook = json!({"url": "http://127.0.0.1:9/h", "secret": SECRET});
    let ch = |name: &str| json!({"name": name, "kind": "webhook", "webhook": hook});
    let many: Vec<Value> = (0..9).map(|i| ch(&format!("c{i}"))).collect();
    let cases = [
        (
            "kind and channels",
            json!({"kind": "webhook", "channels": [ch("a")]}),
            "channels",
        ),
        ("empty list", json!({"channels": []}), "channels"),
        ("nine channels", json!({"channels": many}), "channels"),
        (
            "bad name",
            json!({"channels": [ch("Not OK")]}),
            "channels[0].name",
        ),
        (
            "repeated name",
            json!({"channels": [ch("a"), ch("a")]}),
            "channels[1].name",
        ),
        (
            "missing target",
            json!({"channels": [{"name": "a", "kind": "webhook"}]}),
            "channels[0].webhook",
        ),
        (
            "unknown kind",
            json!({"channels": [{"name": "a", "kind": "fax"}]}),
            "channels[0].kind",
        ),
    ];
    for (what, mut body, field) in cases {
        body["name"] = json!(format!("bad-{what}"));
        body["cron"] = json!("0 9 * * *");
        let (status, problem) = api(
            &http,
            Method::POST,
            format!("{}/v1/schedules", server.base),
            Some(body),
        )
        .await;
        assert_eq!(status, 422, "{what}: {problem}");
        let got = problem["field"].as_str().unwrap_or_default();
        assert!(got.starts_with("channels"), "{what}: field {got:?}");
        assert_eq!(got, field, "{what}: {problem}");
    }
    // Nothing was created.
    let (_, list) = api(
        &http,
        Method::GET,
        format!("{}/v1/schedules", server.base),
        None,
    )
    .await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(0), "{list}");
    server.terminate(Duration::from_secs(15)).await;
}
