//! Endpoint secret rotation (issue 15 §3) through the real `kairos serve` on SQLite: during
//! the window each delivery carries both signatures, the previous secret is stored sealed
//! like the current one (neither is in the database files in the clear), and `kairos key
//! rotate` re-seals the previous secret too, so the rotated endpoint still signs with both.

mod common;

use common::{SECRET, Server, TOKEN, api, kairos_cmd};
use kairos_testkit::{TestReceiver, init_crypto, verify_standard_webhook};
use sqlx::Connection;
use std::path::Path;
use std::time::Duration;

const NEW_SECRET: &str = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC";
const DB_FILES: [&str; 3] = ["kairos.db", "kairos.db-wal", "kairos.db-shm"];

fn files_contain(data: &Path, needle: &str) -> bool {
    DB_FILES.iter().any(|f| {
        std::fs::read(data.join(f))
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    })
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// One job to the rotated endpoint (named by its new pair); the delivery verifies with both
/// secrets. `total`: deliveries the receiver has once it arrived.
async fn delivery_signed_by_both(server: &Server, rx: &TestReceiver, total: usize) {
    let (status, job) = api(
        &client(),
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(serde_json::json!({"kind": "webhook",
            "webhook": {"url": rx.url("/hook"), "secret": NEW_SECRET}, "payload": {"n": total}})),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    assert!(
        rx.wait_for(total, Duration::from_secs(30)).await,
        "{}",
        server.stderr()
    );
    let got = rx.last().expect("a delivery");
    let now = common::now_unix();
    let sigs = got.header("webhook-signature").unwrap_or_default();
    assert_eq!(sigs.split(' ').count(), 2, "{sigs}");
    assert!(verify_standard_webhook(NEW_SECRET, &got, now));
    assert!(verify_standard_webhook(SECRET, &got, now));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_3c_rotated_endpoint_signs_with_both_keeps_both_sealed_and_survives_key_rotate() {
    init_crypto();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let rx = TestReceiver::start().await;
    let server = Server::start(&data, Some(TOKEN)).await;
    let (status, job) = api(
        &client(),
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(serde_json::json!({"kind": "webhook",
            "webhook": {"url": rx.url("/hook"), "secret": SECRET}, "payload": {"n": 0}})),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    assert!(rx.wait_for(1, Duration::from_secs(30)).await);
    let ep = job["endpoint_id"].as_str().expect("endpoint").to_string();
    let (status, r) = api(
        &client(),
        reqwest::Method::POST,
        format!("{}/v1/endpoints/{ep}/rotate", server.base),
        Some(serde_json::json!({"secret": NEW_SECRET, "window_secs": 86400})),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    delivery_signed_by_both(&server, &rx, 2).await;
    assert!(server.terminate(Duration::from_secs(30)).await.success());
    for s in [SECRET, NEW_SECRET] {
        assert!(!files_contain(&data, s.trim_start_matches("whsec_")), "{s}");
    }
    {
        let url = format!("sqlite://{}", data.join("kairos.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("connect");
        let (secret, previous): (String, Option<String>) =
            sqlx::query_as("SELECT secret, previous_secret FROM endpoints")
                .fetch_one(&mut conn)
                .await
                .expect("select");
        assert!(secret.starts_with("kairos:v1:"), "{secret}");
        assert!(
            previous
                .as_deref()
                .is_some_and(|p| p.starts_with("kairos:v1:")),
            "{previous:?}"
        );
    }

    // A new secret key: both endpoint secrets are re-sealed and still sign.
    let out = kairos_cmd()
        .args(["key", "generate"])
        .output()
        .expect("key generate");
    let key = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string();
    let out = kairos_cmd()
        .args(["key", "rotate", "--data-dir"])
        .arg(&data)
        .env("KAIROS_NEW_SECRET_KEY", &key)
        .output()
        .expect("key rotate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again = Server::start(&data, Some(TOKEN)).await;
    delivery_signed_by_both(&again, &rx, 3).await;
    assert!(again.terminate(Duration::from_secs(30)).await.success());
}
