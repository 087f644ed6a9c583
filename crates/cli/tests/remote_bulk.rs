//! The CLI through a server does the long operations as the local mode does (issue 35): a
//! `schedule backfill` of more firings than one API call takes is planned by the server
//! (`GET /v1/schedules/{id}/backfill`) and sent in calls of at most 1,000, and `dlq replay
//! --all` repeats the server's bounded `{"all": true}` request while it says more remain.
//!
//! A real `kairos serve` on SQLite, 127.0.0.1 port 0, and a local webhook receiver.

mod common;

use common::{SECRET, Server, TOKEN, api, kairos_cmd};
use kairos_testkit::{Reply, TestReceiver};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// `kairos --server <base> --token <token> <args>` from a folder with no database: exit
/// code, stdout, stderr.
fn remote(base: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let nowhere = tempfile::tempdir().expect("tempdir");
    let out = kairos_cmd()
        .args(["--server", base, "--token", TOKEN])
        .args(args)
        .current_dir(nowhere.path())
        .output()
        .expect("run kairos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many jobs of `state` the server lists (at most 1,000).
async fn count(http: &reqwest::Client, base: &str, state: &str) -> usize {
    let (s, page) = api(
        http,
        Method::GET,
        format!("{base}/v1/jobs?state={state}&limit=1000"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{page}");
    page["data"].as_array().map_or(0, Vec::len)
}

/// Wait (at most 120 s) until no job is available or running.
async fn settle(http: &reqwest::Client, base: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while count(http, base, "available").await + count(http, base, "running").await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the jobs did not finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_and_replay_all_through_the_server_go_past_one_calls_limit_i35_8() {
    kairos_testkit::init_crypto();
    let rx = TestReceiver::start().await;
    // Every first delivery is refused for good: each backfilled job dies at once.
    rx.set_default(Reply::status(400));
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let (s, sch) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules"),
        // Paused: a backfill still fires it, and no live firing joins the 1,200 dead jobs
        // when the test crosses a minute.
        Some(
            json!({"name": "minutely", "cron": "* * * * *", "paused": true,
                    "webhook": {"url": rx.url("/hook"), "secret": SECRET},
                    "retry": {"max_attempts": 1}}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{sch}");
    let id = sch["id"].as_str().expect("id").to_string();

    // 2026-01-01T00:00 to 19:59, both included: 1,200 minutes, two calls of the API's 1,000.
    let range = [
        "--from",
        "2026-01-01T00:00:00Z",
        "--to",
        "2026-01-01T19:59:00Z",
    ];
    let mut args = vec!["--json", "schedule", "backfill", &id];
    args.extend(range);
    let (code, out, err) = remote(&base, &args);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (v["fired"].as_u64(), v["skipped"].as_u64()),
        (Some(1200), Some(0)),
        "{v}"
    );
    let mut args = vec!["schedule", "backfill", &id];
    args.extend(range);
    let (code, out, err) = remote(&base, &args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("fired 0, skipped 1200") && out.contains("2 call(s)"),
        "{out}"
    );
    // The plan is checked like a backfill: a range into the future is refused naming `to`.
    let (code, _, err) = remote(
        &base,
        &[
            "schedule",
            "backfill",
            &id,
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "9999-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("error: to: "), "{err}");

    // 1,200 dead jobs; the server replays at most 500 per request: three requests.
    settle(&http, &base).await;
    assert_eq!(
        count(&http, &base, "dead").await,
        1000,
        "a full page of dead"
    );
    rx.set_default(Reply::ok());
    let (code, out, err) = remote(&base, &["dlq", "replay", "--all"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("replayed 1200 job(s)"), "{out}");
    assert!(!err.contains("more dead jobs remain"), "{err}");
    settle(&http, &base).await;
    assert_eq!(count(&http, &base, "dead").await, 0);
    assert_eq!(count(&http, &base, "succeeded").await, 1000, "a full page");
    let status = server.terminate(Duration::from_secs(30)).await;
    assert!(status.success(), "kairos serve exited with {status}");
}
