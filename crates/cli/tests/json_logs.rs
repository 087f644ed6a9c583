//! `kairos serve --log-format json` end to end: every stderr line is a JSON object, each
//! attempt and each scheduler firing has its own line with ids and timings and no
//! personal data; `/metrics` of the real binary counts the attempts.

mod common;

use common::{SECRET, TOKEN, api, kairos_cmd};
use kairos_testkit::TestReceiver;
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const EMAIL: &str = "alice.private@example.com";

fn find(lines: &[Value], pred: impl Fn(&Value) -> bool) -> Option<Value> {
    lines.iter().find(|l| pred(l)).cloned()
}

#[tokio::test]
async fn serve_logs_one_json_line_per_attempt_and_firing_without_personal_data() {
    kairos_testkit::init_crypto();
    let receiver = TestReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::from(kairos_cmd())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--data-dir",
        ])
        .arg(dir.path())
        .env("KAIROS_API_TOKEN", TOKEN)
        .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
        .env("KAIROS_SHUTDOWN_GRACE_SECS", "5")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn kairos serve");
    let stderr = child.stderr.take().expect("stderr");
    let raw: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let raw = raw.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                raw.lock().expect("log").push(line);
            }
        });
    }
    let parsed = |raw: &Arc<Mutex<Vec<String>>>| -> Vec<Value> {
        raw.lock()
            .expect("log")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    };
    // The address, from the JSON "listening on" line (bounded wait).
    let mut base = None;
    for _ in 0..600 {
        if let Some(l) = find(&parsed(&raw), |l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("listening on http://"))
        }) {
            let m = l["fields"]["message"].as_str().unwrap_or_default();
            base = Some(m.trim_start_matches("listening on ").to_string());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let base = base.expect("a JSON `listening on` line");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let (status, job) = api(
        &http,
        reqwest::Method::POST,
        format!("{base}/v1/jobs"),
        Some(json!({
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {"email": EMAIL}
        })),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let job_id = job["id"].as_str().expect("job id").to_string();
    let (status, sched) = api(
        &http,
        reqwest::Method::POST,
        format!("{base}/v1/schedules"),
        Some(json!({
            "name": "tick",
            "every": "1s",
            "kind": "webhook",
            "webhook": {"url": receiver.url("/tick"), "secret": SECRET},
            "payload": {"to": EMAIL}
        })),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    let sid = sched["id"].as_str().expect("schedule id").to_string();

    let mut attempt = None;
    let mut firing = None;
    for _ in 0..300 {
        let lines = parsed(&raw);
        attempt = find(&lines, |l| {
            l["target"] == "kairos::attempt" && l["fields"]["job_id"] == job_id.as_str()
        });
        firing = find(&lines, |l| {
            l["target"] == "kairos::firing" && l["fields"]["schedule_id"] == sid.as_str()
        });
        if attempt.is_some() && firing.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let attempt = attempt.expect("an attempt line");
    let f = &attempt["fields"];
    assert_eq!(f["outcome"], "succeeded", "{attempt}");
    assert_eq!(f["state"], "succeeded");
    assert_eq!(f["kind"], "webhook");
    assert_eq!(f["attempt"], 1);
    assert!(
        f["duration_ms"].is_i64() && f["lateness_ms"].is_i64(),
        "{attempt}"
    );
    let firing = firing.expect("a firing line");
    assert!(firing["fields"]["fire_at"].is_string(), "{firing}");

    // The access log: one line per request, with the route pattern (no ids, no query), the
    // status and the latency.
    let (status, _) = api(
        &http,
        reqwest::Method::GET,
        format!("{base}/v1/jobs/{job_id}?probe={}", "q-value-7"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let mut access = None;
    for _ in 0..100 {
        access = find(&parsed(&raw), |l| {
            l["target"] == "kairos::access" && l["fields"]["route"] == "/v1/jobs/{id}"
        });
        if access.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let access = access.expect("an access log line for GET /v1/jobs/{id}");
    assert_eq!(access["fields"]["method"], "GET", "{access}");
    assert_eq!(access["fields"]["status"], 200, "{access}");
    assert!(access["fields"]["latency_ms"].is_u64(), "{access}");
    let created = find(&parsed(&raw), |l| {
        l["target"] == "kairos::access" && l["fields"]["route"] == "/v1/jobs"
    })
    .expect("an access line for POST /v1/jobs");
    assert_eq!(created["fields"]["status"], 201, "{created}");

    let res = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("GET /metrics");
    let text = res.text().await.expect("body");
    assert!(
        text.lines().any(|l| l.starts_with("kairos_attempts_total{")
            && l.contains("outcome=\"succeeded\"")),
        "{text}"
    );
    assert!(text.contains("kairos_scheduler_firings_total{"), "{text}");

    let pid = child.id().expect("pid");
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    let all = raw.lock().expect("log").join("\n");
    assert!(!all.contains(EMAIL), "personal data in the logs");
    assert!(!all.contains(TOKEN), "the API token in the logs");
    assert!(!all.contains("q-value-7"), "a query value in the logs");
    assert!(
        !all.contains(&job_id.replace("job_", "/v1/jobs/job_")),
        "a path with an id in the access log"
    );
    assert!(
        !all.contains(&receiver.url("/hook")),
        "a target URL in the logs"
    );
    assert!(
        !all.contains(SECRET.trim_start_matches("whsec_")),
        "a secret in the logs"
    );
    // Every line is JSON (parsed() panics otherwise).
    assert!(!parsed(&raw).is_empty());
}
