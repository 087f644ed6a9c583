//! `http` jobs through the real `kairos serve` binary: a route answering 503 then 200 is
//! retried and succeeds; each attempt logs its result as one line of JSON with the
//! route's response in it, and neither the logs nor the API show the bearer token.

mod common;

use common::{Server, TOKEN, api};
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};
use std::time::Duration;

const BEARER: &str = "tok_cron_secret_123";

/// The `result` JSON of every `kairos::http` log line, in order.
fn results(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter(|l| l.contains("kairos::http"))
        .filter_map(|l| l.split_once("result=").map(|(_, r)| r.trim()))
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("not JSON ({e}): {r}")))
        .collect()
}

#[tokio::test]
async fn serve_runs_http_job_retries_503_and_logs_each_result_as_json() {
    kairos_testkit::init_crypto();
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![
        Reply::status(503).with_body(r#"{"error":"high demand"}"#),
    ]);
    rx.set_default(Reply::status(200).with_body(r#"{"built":"2026-10-21"}"#));
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let (status, job) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(json!({
            "kind": "http",
            "http": {"url": rx.url("/api/cron/digest"), "method": "POST",
                     "headers": {"x-source": "kairos"}, "body": {"day": "2026-10-21"},
                     "timeout": "10s", "bearer_token": BEARER},
            "retry": {"delays": ["200ms"], "max_attempts": 3},
        })),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().expect("id").to_string();

    let mut shown = Value::Null;
    for _ in 0..300 {
        let (_, j) = api(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/jobs/{id}", server.base),
            None,
        )
        .await;
        if j["state"] == "succeeded" {
            shown = j;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(shown["state"], "succeeded", "{}", server.stderr());
    assert_eq!(shown["attempts"][0]["status_code"], 503);
    assert_eq!(shown["attempts"][1]["status_code"], 200);
    assert!(!shown.to_string().contains(BEARER));
    assert_eq!(
        rx.last().expect("request").header("authorization"),
        Some(&*format!("Bearer {BEARER}"))
    );

    // The log line of an attempt is written just before its outcome is recorded.
    let stderr = server.stderr();
    let lines = results(&stderr);
    let mine: Vec<&Value> = lines
        .iter()
        .filter(|l| l["job_id"] == id.as_str())
        .collect();
    assert_eq!(mine.len(), 2, "{stderr}");
    assert_eq!(mine[0]["ok"], false);
    assert_eq!(mine[0]["status"], 503);
    assert_eq!(mine[0]["error_class"], "transient");
    assert_eq!(mine[0]["response"]["error"], "high demand");
    assert_eq!(mine[1]["ok"], true);
    assert_eq!(mine[1]["status"], 200);
    assert_eq!(mine[1]["response"]["built"], "2026-10-21");
    assert!(!stderr.contains(BEARER), "the token is in the logs");
    server.terminate(Duration::from_secs(20)).await;
}

/// `kairos job enqueue --kind http --http JSON` on the database directly: the job's payload
/// is only the target id (no token in the output); bad input exits 2 naming the field.
#[test]
fn cli_enqueues_http_jobs_and_names_bad_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let http = json!({"url": "https://example.com/api/cron", "method": "POST",
                      "timeout": "2m", "bearer_token": BEARER});
    let out = common::kairos_cmd()
        .args(["job", "enqueue", "--kind", "http", "--json", "--http"])
        .arg(http.to_string())
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .expect("run kairos");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(job["kind"], "http");
    assert!(
        job["payload"]["http_target_id"]
            .as_str()
            .is_some_and(|s| s.starts_with("ht_"))
    );
    assert!(!stdout.contains(BEARER));

    let bad = json!({"url": "https://example.com/api/cron", "timeout": "1h"});
    let out = common::kairos_cmd()
        .args(["job", "enqueue", "--kind", "http", "--http"])
        .arg(bad.to_string())
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .expect("run kairos");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("http.timeout"), "{stderr}");
}
