//! Scoped API tokens end to end (issue 35): `kairos token create --scope read|write|admin`,
//! a real `kairos serve` enforcing them on `/v1` (403 naming the scope needed), `kairos token
//! list` with `last_used_at`, and `kairos token revoke` (401 from then on). The node's own
//! token is `admin`.

mod common;

use common::{SECRET, Server, TOKEN, run_in};
use serde_json::{Value, json};
use std::time::Duration;

fn create(dir: &std::path::Path, name: &str, scope: &str) -> String {
    let (code, stdout, stderr) = run_in(
        dir,
        &[
            "token", "create", "--name", name, "--scope", scope, "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["scope"], scope);
    v["token"].as_str().expect("the token, once").to_string()
}

async fn call(
    http: &reqwest::Client,
    token: &str,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, url).bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_tokens_are_enforced_listed_and_revocable() {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let read = create(dir.path(), "grafana", "read");
    let write = create(dir.path(), "ci", "write");
    let admin = create(dir.path(), "ops", "admin");
    let (code, _, stderr) = run_in(
        dir.path(),
        &["token", "create", "--name", "ci", "--scope", "read"],
    );
    assert_eq!(code, Some(2), "a name is unique: {stderr}");
    assert!(stderr.contains("error: name:"), "{stderr}");

    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let (get, post, delete) = (
        reqwest::Method::GET,
        reqwest::Method::POST,
        reqwest::Method::DELETE,
    );
    let schedule = |name: &str| {
        json!({"name": name, "cron": "0 6 * * *",
               "webhook": {"url": "https://hooks.example.com/x", "secret": SECRET}})
    };
    let suppression = json!({"email": "gone@example.com"});

    // read: GET only.
    let (s, _) = call(
        &http,
        &read,
        get.clone(),
        format!("{base}/v1/schedules"),
        None,
    )
    .await;
    assert_eq!(s, 200);
    let (s, p) = call(
        &http,
        &read,
        post.clone(),
        format!("{base}/v1/schedules"),
        Some(schedule("r")),
    )
    .await;
    assert_eq!(s, 403, "{p}");
    assert_eq!(p["type"], "urn:kairos:problem:insufficient-scope", "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("needs `write`"),
        "{p}"
    );
    // write: work, but not the operator's actions.
    let (s, p) = call(
        &http,
        &write,
        post.clone(),
        format!("{base}/v1/schedules"),
        Some(schedule("w")),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let (s, p) = call(
        &http,
        &write,
        post.clone(),
        format!("{base}/v1/suppressions"),
        Some(suppression.clone()),
    )
    .await;
    assert_eq!(s, 403, "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("needs `admin`"),
        "{p}"
    );
    // admin and the node's own token: everything.
    let (s, p) = call(
        &http,
        &admin,
        post.clone(),
        format!("{base}/v1/suppressions"),
        Some(suppression.clone()),
    )
    .await;
    assert!((200..300).contains(&s), "{s} {p}");
    let (s, p) = call(
        &http,
        TOKEN,
        delete.clone(),
        format!("{base}/v1/suppressions/gone@example.com"),
        None,
    )
    .await;
    assert!((200..300).contains(&s), "{s} {p}");

    // Listed with their last use; never the token.
    let (code, stdout, stderr) = run_in(dir.path(), &["token", "list", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stdout.contains(&read) && !stdout.contains(&admin),
        "{stdout}"
    );
    let list: Value = serde_json::from_str(&stdout).expect("JSON");
    let by_name = |n: &str| {
        list["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .expect("listed")
    };
    assert!(by_name("grafana")["last_used_at"].is_string(), "{list}");
    assert!(by_name("ops")["last_used_at"].is_string(), "{list}");

    // Revoked: 401 like an unknown token, and listed as revoked.
    let (code, _, stderr) = run_in(dir.path(), &["token", "revoke", "grafana"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (s, _) = call(
        &http,
        &read,
        get.clone(),
        format!("{base}/v1/schedules"),
        None,
    )
    .await;
    assert_eq!(s, 401);
    let (code, _, _) = run_in(dir.path(), &["token", "revoke", "grafana"]);
    assert_eq!(code, Some(2), "revoked once");
    let (_, stdout, _) = run_in(dir.path(), &["token", "list"]);
    let line = stdout
        .lines()
        .find(|l| l.contains("grafana"))
        .expect("listed");
    assert!(line.trim_end().ends_with('Z'), "revoked_at shown: {line}");
    let (s, _) = call(&http, &write, get, format!("{base}/v1/schedules"), None).await;
    assert_eq!(s, 200, "the other tokens still work");
    drop(server);
}
