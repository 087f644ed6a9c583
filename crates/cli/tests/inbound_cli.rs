//! The inbound issue against the real binary: `POST /hooks/resend` with
//! `KAIROS_RESEND_WEBHOOK_SECRET` feeding `GET /v1/suppressions` (the contract), `kairos
//! maintenance on|off|status` reaching a running server through the database and
//! `KAIROS_MAINTENANCE=1`, and `kairos suppression add|list|export|remove`.

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::{SECRET, Server, TOKEN, api, now_unix};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// An independent Svix signer (not kairos's signing module).
fn sign(id: &str, ts: i64, body: &str) -> String {
    let key = STANDARD.decode(&SECRET["whsec_".len()..]).expect("key");
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).expect("hmac");
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

fn run(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let (code, out, err) = common::run_in(dir, args);
    (code == Some(0), out, err)
}

/// Poll `GET /v1/schedules` (at most 400 × 25 ms) until it answers `want`.
async fn wait_for_status(http: &reqwest::Client, base: &str, want: u16) -> reqwest::Response {
    for _ in 0..400 {
        let res = http
            .get(format!("{base}/v1/schedules"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("request");
        if res.status().as_u16() == want {
            return res;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("/v1/schedules never answered {want}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resend_webhook_feeds_the_suppression_list_and_maintenance_cli_reaches_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        dir.path(),
        Some(TOKEN),
        &[
            ("KAIROS_RESEND_WEBHOOK_SECRET", SECRET),
            ("KAIROS_POLL_INTERVAL_MS", "50"),
        ],
    )
    .await;
    kairos_testkit::init_crypto();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let body = json!({"type": "email.bounced", "created_at": "2026-11-30T03:00:00Z",
        "data": {"email_id": "re_1", "to": ["Gone@Example.com"],
                 "bounce": {"type": "Permanent", "subType": "General"}}})
    .to_string();
    let ts = now_unix();
    let hook = |sig: String| {
        http.post(format!("{}/hooks/resend", server.base))
            .header("svix-id", "msg_cli_1")
            .header("svix-timestamp", ts.to_string())
            .header("svix-signature", sig)
            .body(body.clone())
            .send()
    };
    assert_eq!(hook("v1,AAAA".into()).await.expect("post").status(), 401);
    assert_eq!(
        hook(sign("msg_cli_1", ts, &body))
            .await
            .expect("post")
            .status(),
        200
    );
    let (s, list) = api(
        &http,
        Method::GET,
        format!("{}/v1/suppressions", server.base),
        None,
    )
    .await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(
        list["data"][0],
        json!({"email": "gone@example.com", "erased": false, "reason": "hard_bounce",
               "event_id": "msg_cli_1", "created_at": list["data"][0]["created_at"]})
    );
    assert!(
        !server.stderr().to_lowercase().contains("gone@example.com"),
        "addresses are never logged"
    );

    // Maintenance from another process reaches the running server.
    let (ok, out, err) = run(dir.path(), &["maintenance", "on"]);
    assert!(ok, "{err}");
    assert!(out.contains("maintenance: on"), "{out}");
    let res = wait_for_status(&http, &server.base, 503).await;
    assert!(res.headers().get("retry-after").is_some());
    let health = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status(), 200);
    let (ok, out, _) = run(dir.path(), &["maintenance", "status", "--json"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (v["on"].as_bool(), v["stored"].as_bool()),
        (Some(true), Some(true))
    );
    let (ok, _, err) = run(dir.path(), &["maintenance", "off"]);
    assert!(ok, "{err}");
    wait_for_status(&http, &server.base, 200).await;
    server.terminate(Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kairos_maintenance_env_forces_503_on_the_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_MAINTENANCE", "1")]).await;
    kairos_testkit::init_crypto();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let (s, p) = api(&http, Method::GET, format!("{}/v1/jobs", server.base), None).await;
    assert_eq!(s, 503, "{p}");
    assert_eq!(p["type"], "urn:kairos:problem:maintenance");
    let health = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status(), 200);
    server.terminate(Duration::from_secs(30)).await;
}

#[test]
fn suppression_cli_adds_lists_exports_and_removes_with_a_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (ok, _, err) = run(
        d,
        &["suppression", "add", "b@example.com", "--reason", "asked"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(d, &["suppression", "add", "A@Example.com"]);
    assert!(ok, "{err}");
    let (ok, out, _) = run(d, &["suppression", "list", "--json"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v[0]["email"], "a@example.com");
    assert_eq!(v[0]["reason"], "manual");
    assert_eq!(v[1]["reason"], "asked");
    let (ok, csv, _) = run(d, &["suppression", "export"]);
    assert!(ok);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "email,reason,event_id,created_at");
    assert!(lines[1].starts_with("a@example.com,manual,,"), "{csv}");
    assert_eq!(lines.len(), 3);
    let (ok, jsonl, _) = run(d, &["suppression", "export", "--format", "jsonl"]);
    assert!(ok);
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["email"], "b@example.com");
    let (ok, _, err) = run(
        d,
        &["suppression", "remove", "b@example.com", "--reason", "typo"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(
        d,
        &[
            "suppression",
            "remove",
            "b@example.com",
            "--reason",
            "again",
        ],
    );
    assert!(!ok, "removing twice is an error");
    assert!(
        !err.contains("b@example.com"),
        "the address is not echoed: {err}"
    );
    let (ok, _, err) = run(d, &["suppression", "add", "not-an-address"]);
    assert!(!ok);
    assert!(err.contains("email"), "{err}");
}
