//! One identity per cluster on PostgreSQL: real `kairos serve` processes on one schema,
//! started without `KAIROS_API_TOKEN`. The first node stores its token in the database;
//! the second takes it (and saves it to its own `api-token`), so a request and an admin
//! session are accepted by either node; a node given another `KAIROS_API_TOKEN` refuses to
//! start and says why.
//!
//! Needs PostgreSQL (`KAIROS_TEST_DATABASE_URL`); skipped loudly without it unless
//! `KAIROS_TEST_POSTGRES=required`.

mod common;

use common::{Server, kairos_cmd};
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use std::time::Duration;

/// The secret key every node is given (`kairos key generate`).
const SECRET_KEY: &str = "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=";

fn env<'a>(url: &'a str, schema: &'a str, node: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("KAIROS_DATABASE_URL", url),
        ("KAIROS_DATABASE_SCHEMA", schema),
        ("KAIROS_NODE", node),
        ("KAIROS_SECRET_KEY", SECRET_KEY),
    ]
}

fn saved_token(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("api-token"))
        .expect("api-token written")
        .trim()
        .to_string()
}

async fn status(http: &reqwest::Client, url: String, token: &str) -> u16 {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_without_a_token_share_the_first_nodes_token_and_admin_sessions() {
    let url = database_url();
    if !reachable(&url, "The cluster identity test").await {
        return;
    }
    kairos_testkit::init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_id");
    let schema = guard.schema.clone();
    let (d1, d2, d3) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let n1 = Server::start_with(d1.path(), None, &env(&url, &schema, "node1")).await;
    let token = saved_token(d1.path());
    assert!(
        n1.stderr().contains("generated an API token"),
        "{}",
        n1.stderr()
    );
    let n2 = Server::start_with(d2.path(), None, &env(&url, &schema, "node2")).await;
    assert_eq!(
        saved_token(d2.path()),
        token,
        "node 2 saved the cluster's token"
    );
    assert!(
        n2.stderr().contains("using the cluster's API token"),
        "{}",
        n2.stderr()
    );

    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    for base in [&n1.base, &n2.base] {
        assert_eq!(
            status(&http, format!("{base}/v1/schedules"), &token).await,
            200
        );
        assert_eq!(
            status(
                &http,
                format!("{base}/v1/schedules"),
                "x".repeat(40).as_str()
            )
            .await,
            401
        );
    }

    // An admin session opened on node 1 is valid on node 2.
    let login = http
        .post(format!("{}/admin/login", n1.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        // The token is `kairos_` and base64url: nothing to escape in a form.
        .body(format!("token={token}"))
        .send()
        .await
        .expect("login");
    assert_eq!(login.status().as_u16(), 303, "login redirects");
    let cookie = login
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_string();
    for base in [&n1.base, &n2.base] {
        let page = http
            .get(format!("{base}/admin/schedules"))
            .header(reqwest::header::COOKIE, &cookie)
            .send()
            .await
            .expect("admin page");
        assert_eq!(page.status().as_u16(), 200, "session valid on {base}");
    }
    let anon = http
        .get(format!("{}/admin/schedules", n2.base))
        .send()
        .await
        .expect("admin page");
    assert_eq!(anon.status().as_u16(), 401, "no session, no page");

    // A node given another token refuses to start, says why, and serves nothing.
    let mut cmd = kairos_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(d3.path())
        .env(
            "KAIROS_API_TOKEN",
            "another-token-of-at-least-thirty-two-chars",
        );
    for (k, v) in env(&url, &schema, "node3") {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || cmd.output().expect("run kairos serve")),
    )
    .await
    .expect("node 3 exits within 60 s")
    .expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("KAIROS_API_TOKEN is not this cluster's API token"),
        "{stderr}"
    );
    assert!(!stderr.contains(&token), "the token is never printed");
    assert!(!d3.path().join("api-token").exists());

    // A restarted node given the cluster's token explicitly starts.
    drop(n2);
    let n2 = Server::start_with(d2.path(), Some(&token), &env(&url, &schema, "node2")).await;
    assert_eq!(
        status(&http, format!("{}/v1/schedules", n2.base), &token).await,
        200
    );
    drop(n1);
}
