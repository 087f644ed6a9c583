//! `kairos slo` against the real binary: the JSON report and its exit codes — 0 with
//! warnings (a warning is not a red build), 2 when the store cannot be reached.

mod common;

use chrono::Duration;
use common::kairos_cmd;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, JobKind, RetryPolicy, SystemClock};
use kairos_store::JobInsert;
use kairos_store::prelude::*;
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
            kind: JobKind::new("webhook"),
            payload: serde_json::json!({}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            retry: RetryPolicy::notification(),
            audience: Default::default(),
            retry_is_kind_default: false,
            run_at: due,
            now: due,
            concurrency: None,
            http_origin: None,
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
    // A fresh database (`kairos slo` only reads: it never creates one).
    let migrated = kairos_cmd()
        .args(["migrate", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run kairos migrate");
    assert!(migrated.status.success());
    let out = kairos_cmd()
        .args(["slo", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run kairos slo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("CHECK"), "{stdout}");
    assert!(stdout.contains("all checks ok"), "{stdout}");
    assert!(stdout.contains("last monitor pass: never"), "{stdout}");
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

/// A data dir with a daily schedule whose run died two hours ago (HTTP 500 until its attempts
/// ran out).
async fn dead_run_data_dir() -> (tempfile::TempDir, String) {
    use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec};
    use kairos_store::{Attempt, JobClaim, JobComplete, ScheduleCreate, Transition};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let now = SystemClock.now();
    let died = now - Duration::hours(2);
    let s = store
        .schedule_create(ScheduleCreate {
            id: new_id(IdPrefix::Schedule, died),
            name: "nightly-export".into(),
            kind: JobKind("http".into()),
            spec: ScheduleSpec::Cron {
                expr: "0 6 * * *".into(),
            },
            timezone: "UTC".into(),
            period: PeriodUnit::Day,
            misfire: Misfire::Skip,
            misfire_threshold: None,
            misfire_window: None,
            overlap: Default::default(),
            payload: serde_json::json!({}),
            endpoint_id: None,
            retry: None,
            channels: Vec::new(),
            paused: true,
            next_fire_at: None,
            now: died,
            concurrency: None,
        })
        .await
        .expect("schedule");
    store
        .job_insert(JobInsert {
            id: new_id(IdPrefix::Job, died),
            kind: JobKind("http".into()),
            payload: serde_json::json!({}),
            endpoint_id: None,
            schedule_id: Some(s.id.clone()),
            fire_at: Some(died),
            period_key: Some("2026-11-30".into()),
            channel: Some("http".into()),
            dedupe_key: None,
            retry: RetryPolicy::notification(),
            audience: Default::default(),
            retry_is_kind_default: false,
            run_at: died,
            now: died,
            concurrency: None,
            http_origin: None,
        })
        .await
        .expect("insert");
    let claimed = store
        .job_claim(JobClaim {
            now: died,
            limit: 1,
            node: "n".into(),
            lease_token: "lease".into(),
            lease_until: died + Duration::seconds(30),
        })
        .await
        .expect("claim");
    let j = &claimed[0];
    store
        .job_complete_many(vec![JobComplete {
            id: j.id.clone(),
            lease_token: "lease".into(),
            attempt: Attempt {
                job_id: j.id.clone(),
                attempt: j.attempt,
                started_at: died,
                finished_at: died,
                outcome: "failed".parse().expect("outcome"),
                error_class: Some("transient".parse().expect("class")),
                status_code: Some(500),
                error: Some("HTTP 500 Internal Server Error".into()),
                response: None,
                provider_id: None,
                node: Some("n".into()),
            },
            transition: Transition::Dead,
            record_exposure: false,
        }])
        .await
        .expect("complete");
    store.close().await;
    (dir, s.id)
}

/// `kairos slo --json` shows the `dead_runs` warning `GET /v1/slo` shows; the window is
/// `KAIROS_SLO_DEAD_RUNS_WINDOW`: a death older than it is not listed.
#[tokio::test]
async fn slo_json_shows_dead_runs_within_its_window() {
    let (dir, schedule_id) = dead_run_data_dir().await;
    let run = |window: Option<&str>| {
        let mut cmd = kairos_cmd();
        cmd.args(["slo", "--json", "--data-dir"]).arg(dir.path());
        if let Some(w) = window {
            cmd.env("KAIROS_SLO_DEAD_RUNS_WINDOW", w);
        }
        let out = cmd.output().expect("run kairos slo");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|c| c["check"] == "dead_runs")
            .cloned()
            .collect::<Vec<_>>()
    };
    let dead = run(None);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["status"], "warning");
    assert_eq!(dead[0]["subject"], schedule_id.as_str());
    let msg = dead[0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("nightly-export") && msg.contains("HTTP 500"),
        "{msg}"
    );
    assert!(
        run(Some("1h")).is_empty(),
        "a death 2 h ago is outside a 1 h window"
    );
}

/// `kairos slo ack <id>` acknowledges a dead-run warning (it recovers, shown as acknowledged),
/// and an unknown id is a usage error naming the id (exit 2) (S3-17).
#[tokio::test]
async fn slo_ack_acknowledges_a_dead_run_warning_s3_17() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let now = SystemClock.now();
    store
        .slo_alert_put(kairos_store::SloAlertPut {
            alert: kairos_store::SloAlert {
                key: "dead_runs:sch_1".into(),
                check: "dead_runs".into(),
                active: true,
                since: now - Duration::hours(30),
                message: "1 job(s) ended dead".into(),
                seq: 1,
                notified_seq: 1,
                updated_at: now - Duration::hours(30),
                acked_at: None,
            },
        })
        .await
        .expect("alert");
    store.close().await;
    let out = kairos_cmd()
        .args(["slo", "--json", "--data-dir"])
        .arg(dir.path())
        .args(["ack", "dead_runs:sch_1"])
        .output()
        .expect("run kairos slo ack");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["id"], "dead_runs:sch_1");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["acked"], true);

    let unknown = kairos_cmd()
        .args(["slo", "--data-dir"])
        .arg(dir.path())
        .args(["ack", "dead_runs:nope"])
        .output()
        .expect("run kairos slo ack");
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("id"), "{stderr}");
}
