//! `kairos slo` against the real binary: the JSON report and its exit codes — 0 with
//! warnings (a warning is not a red build, S3-17), 2 when the store cannot be reached.

mod common;

use chrono::Duration;
use common::kairos_cmd;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, JobKind, RetryPolicy, SystemClock};
use kairos_store::{JobInsert, Store};
use kairos_store_sqlite::SqliteStore;

/// A data dir whose database holds one job due two hours ago and never claimed.
async fn stuck_data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let now = SystemClock.now();
    let due = now - Duration::hours(2);
    store
        .job_insert(JobInsert {
            id: new_id(IdPrefix::Job, due),
            kind: JobKind::webhook(),
            payload: serde_json::json!({}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            retry: RetryPolicy::notification(),
            run_at: due,
            now: due,
        })
        .await
        .expect("insert");
    store.close().await;
    dir
}

#[tokio::test]
async fn slo_json_exits_0_with_a_warning() {
    let dir = stuck_data_dir().await;
    let out = kairos_cmd()
        .args(["slo", "--json", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run kairos slo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(v["status"], "warning");
    let checks = v["checks"].as_array().expect("checks");
    let stuck = checks
        .iter()
        .find(|c| c["check"] == "stuck_due")
        .expect("stuck_due");
    assert_eq!(stuck["status"], "warning");
    assert!(checks.iter().any(|c| c["check"] == "failure_rate"));
}

#[tokio::test]
async fn slo_table_exits_0_without_warnings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kairos_cmd()
        .args(["slo", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run kairos slo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("CHECK"), "{stdout}");
    assert!(stdout.contains("all checks ok"), "{stdout}");
}

#[tokio::test]
async fn slo_exits_2_when_the_store_is_unreachable() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kairos_cmd()
        .args(["slo", "--json", "--data-dir"])
        .arg(dir.path())
        .env(
            "KAIROS_DATABASE_URL",
            format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        )
        .output()
        .expect("run kairos slo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot reach the store"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report on stdout");
}
