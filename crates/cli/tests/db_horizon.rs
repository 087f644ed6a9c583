//! The monitor sees rot coming: a real `kairos serve` on PostgreSQL, with
//! `KAIROS_SLO_DB_HORIZON_SECS=1`, shows a `db_horizon` warning in `GET /v1/slo` whose subject
//! is the pid of another session that holds a `REPEATABLE READ` snapshot, and `/metrics`
//! exports its age and the dead row versions; on SQLite, `/metrics` exports the WAL's size.
//! Skipped loudly when PostgreSQL is not reachable, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use common::{Server, TOKEN, api};
use kairos_testkit::init_crypto;
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use sqlx::Connection;
use std::time::Duration;

const SECRET_KEY: &str = "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=";

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_horizon_names_the_session_holding_a_snapshot_on_postgres() {
    let url = database_url();
    if !reachable(&url, "The db_horizon test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_dbh");
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", guard.schema.as_str()),
        ("KAIROS_SECRET_KEY", SECRET_KEY),
        ("KAIROS_SLO_DB_HORIZON_SECS", "1"),
    ];
    let server = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    // Another session (an "analytics query") takes a snapshot and keeps it.
    let (mut holder, pid) = kairos_testkit::pg::hold_snapshot(&url, "nightly-report").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let subject = pid.to_string();

    let (status, slo) = api(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/slo", server.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{slo}");
    let checks = slo["checks"].as_array().expect("checks");
    let warning = checks
        .iter()
        .find(|c| c["check"] == "db_horizon" && c["subject"].as_str() == Some(subject.as_str()))
        .unwrap_or_else(|| panic!("no db_horizon warning for session {pid}: {slo}"));
    assert_eq!(warning["status"], "warning", "{warning}");
    let message = warning["message"].as_str().expect("message");
    assert!(message.contains("nightly-report"), "{message}");
    assert!(message.contains("transaction started"), "{message}");

    let text = http
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    let age = metric(&text, "kairos_db_oldest_snapshot_age_seconds").expect("age metric");
    assert!(age >= 1.0, "{age}");
    assert!(
        text.contains("kairos_db_dead_tuples{table=\"jobs\"}"),
        "dead tuples per table"
    );

    // Ended: the warning is gone.
    sqlx::query("COMMIT")
        .execute(&mut holder)
        .await
        .expect("commit");
    let (_, slo) = api(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/slo", server.base),
        None,
    )
    .await;
    assert!(
        !slo["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .any(|c| c["check"] == "db_horizon" && c["subject"].as_str() == Some(subject.as_str())),
        "{slo}"
    );
    holder.close().await.expect("close");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_metrics_export_the_wal_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let text = http
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    assert!(metric(&text, "kairos_sqlite_wal_bytes").is_some(), "{text}");
    assert_eq!(
        metric(&text, "kairos_db_oldest_snapshot_age_seconds"),
        Some(0.0)
    );
    drop(server);
}
