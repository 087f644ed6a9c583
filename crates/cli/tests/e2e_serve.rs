//! The real `kairos` binary end to end: `serve` on port 0 with a schedule firing every second
//! at a capturing receiver that fails once; the retry succeeds with the same `webhook-id`;
//! SIGTERM exits 0. Plus `kairos cron next`, direct database commands and exit codes.

mod common;

use common::{SECRET, Server, TOKEN, api, kairos_cmd};
use kairos_testkit::{Reply, TestReceiver, init_crypto, verify_standard_webhook};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_retries_a_failed_webhook_with_the_same_id_and_exits_0_on_sigterm() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    receiver.respond_with(vec![Reply::status(503)]);
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    assert!(!server.stderr().contains("generated an API token"));
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let (status, _) = api(
        &http,
        reqwest::Method::GET,
        format!("{}/healthz", server.base),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, sched) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/schedules", server.base),
        Some(json!({
            "name": "every-second",
            "every": "1s",
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {"hello": "world"},
            "retry": {"delays": ["1s"], "max_attempts": 3}
        })),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    let sid = sched["id"].as_str().expect("schedule id").to_string();

    // Poll (bounded) until the schedule's first job has succeeded.
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        assert!(
            Instant::now() < deadline,
            "no succeeded first job within 30 s; stderr:\n{}",
            server.stderr()
        );
        let (_, page) = api(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/jobs?schedule_id={sid}&limit=1000", server.base),
            None,
        )
        .await;
        if let Some(first) = page["data"].as_array().and_then(|d| d.last()) {
            let id = first["id"].as_str().expect("job id");
            let (_, job) = api(
                &http,
                reqwest::Method::GET,
                format!("{}/v1/jobs/{id}", server.base),
                None,
            )
            .await;
            if job["state"] == "succeeded" {
                break job;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    let id = job["id"].as_str().expect("id").to_string();
    let attempts = job["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{job}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["status_code"], 503);
    assert_eq!(attempts[1]["outcome"], "succeeded");
    assert_eq!(attempts[1]["status_code"], 200);

    let received = receiver.received();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("time")
        .as_secs() as i64;
    for r in &received {
        assert!(
            verify_standard_webhook(SECRET, r, now),
            "a delivery failed signature verification: {:?}",
            r.headers
        );
    }
    let deliveries: Vec<_> = received
        .iter()
        .filter(|r| r.header("webhook-id") == Some(id.as_str()))
        .collect();
    assert_eq!(
        deliveries.len(),
        2,
        "the first job is delivered twice, same webhook-id"
    );
    assert_eq!(received[0].header("webhook-id"), Some(id.as_str()));
    assert_eq!(
        serde_json::from_slice::<Value>(&deliveries[1].body).expect("json body"),
        serde_json::from_slice::<Value>(&deliveries[0].body).expect("json body"),
    );

    let stderr_before = server.stderr();
    let status = server.terminate(Duration::from_secs(15)).await;
    assert_eq!(status.code(), Some(0), "{stderr_before}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_generates_a_token_once_and_requires_it() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None).await;
    let token = std::fs::read_to_string(dir.path().join("api-token"))
        .expect("token file")
        .trim()
        .to_string();
    assert!(token.starts_with("kairos_"));
    // Issue 12, finding 6: the token file's path is printed, never the token.
    let stderr = server.stderr();
    assert!(
        stderr.contains("generated an API token")
            && stderr.contains(&dir.path().join("api-token").display().to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains(&token), "the token was printed: {stderr}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let res = http
        .get(format!("{}/v1/jobs", server.base))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 401);
    let res = http
        .get(format!("{}/v1/jobs", server.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(
        server.terminate(Duration::from_secs(15)).await.code(),
        Some(0)
    );

    let again = Server::start(dir.path(), None).await;
    assert!(
        !again.stderr().contains(&token),
        "not printed on later starts"
    );
    assert_eq!(
        again.terminate(Duration::from_secs(15)).await.code(),
        Some(0)
    );
}

#[test]
fn cron_next_prints_local_instants_across_dst() {
    let out = kairos_cmd()
        .args([
            "cron",
            "next",
            "30 2 * * *",
            "--tz",
            "America/New_York",
            "-n",
            "3",
            "--from",
            "2026-03-07T00:00:00-05:00",
        ])
        .output()
        .expect("run kairos");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "2026-03-07T02:30:00-05:00\n2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n"
    );
}

#[test]
fn cron_next_with_a_bad_zone_exits_2_naming_timezone() {
    let out = kairos_cmd()
        .args(["cron", "next", "0 9 * * *", "--tz", "Mars/Olympus_Mons"])
        .output()
        .expect("run kairos");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: timezone: "), "{err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"));
}

#[test]
fn schedule_and_job_commands_work_on_the_database_directly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        kairos_cmd()
            .args(args)
            .arg("--data-dir")
            .arg(dir.path())
            .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
            .output()
            .expect("run kairos")
    };
    let out = run(&[
        "schedule",
        "add",
        "--name",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Berlin",
        "--url",
        "http://127.0.0.1:9/h",
        "--secret",
        SECRET,
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = created["id"].as_str().expect("id").to_string();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));

    let out = run(&["schedule", "list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));

    let out = run(&["schedule", "fire", &id, "--json"]);
    let fired: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(fired["created"], 1);
    let out = run(&["schedule", "fire", &id, "--json"]);
    let fired: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(fired["created"], 0);

    let out = run(&["job", "list", "--json"]);
    let page: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(page["data"].as_array().map(Vec::len), Some(1));

    // Validation errors exit 2 naming the field; a missing record exits 1.
    let out = run(&["schedule", "add", "--name", "bad", "--cron", "99 * * * *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cron: "));
    let out = run(&["job", "show", "job_missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    let out = kairos_cmd()
        .args(["job", "list", "--data-dir"])
        .arg(dir.path())
        .env("KAIROS_DATABASE_URL", "mysql://127.0.0.1/kairos")
        .output()
        .expect("run kairos");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: database_url: ") && stderr.contains("not supported"),
        "{stderr}"
    );
}

#[test]
fn serve_with_an_api_token_shorter_than_32_characters_refuses_to_start_naming_the_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kairos_cmd()
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("KAIROS_API_TOKEN", "short-token")
        .output()
        .expect("run kairos");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: api_token: ") && err.contains("KAIROS_API_TOKEN"),
        "{err}"
    );
    assert!(!err.contains("short-token"), "the token is echoed: {err}");
}
