//! The `db_horizon` check on a real SQLite file and a manual clock: a reader in another
//! connection that keeps its snapshot while the queue commits keeps checkpoints behind; past
//! the threshold (by the engine's clock) that is one warning with subject `reader`, and it is
//! Ok again once the reader lets go and a checkpoint catches up.

mod common;

use chrono::Duration;
use common::*;
use kairos_core::Outcome;
use kairos_engine::monitor::{CheckStatus, Monitor, MonitorConfig, names};
use kairos_store::DbHealthRead;
use std::time::Duration as StdDuration;

async fn commits(h: &Harness) {
    // More than the 32 commits after which the writer asks for a checkpoint.
    for _ in 0..40 {
        h.enqueue("mail", serde_json::json!({}), None, None).await;
    }
}

async fn horizon(
    m: &Monitor,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<(CheckStatus, Option<String>)> {
    m.evaluate(now)
        .await
        .expect("evaluate")
        .checks
        .into_iter()
        .filter(|c| c.check == names::DB_HORIZON)
        .map(|c| (c.status, c.subject))
        .collect()
}

#[tokio::test]
async fn a_reader_holding_checkpoints_back_warns_after_the_threshold_and_recovers() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", TestHandler::new(|_, _| Outcome::ok()))]).await;
    let cfg = MonitorConfig {
        db_horizon: StdDuration::from_secs(300),
        ..MonitorConfig::default()
    };
    let m = Monitor::new(cfg, h.store.clone()).expect("monitor");
    assert_eq!(horizon(&m, t0).await, vec![(CheckStatus::Ok, None)]);

    let reader = rusqlite::Connection::open(h.dir.path().join("kairos.db")).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM jobs;")
        .expect("hold a snapshot");
    commits(&h).await;
    // The checkpoint runs on its own thread: wait (boundedly) until a read at t0 sees it
    // behind, which starts the clock at t0.
    let mut behind = false;
    for _ in 0..300 {
        let health = h
            .store
            .db_health_read(DbHealthRead { now: t0 })
            .await
            .expect("read");
        if !health.held.is_empty() {
            behind = true;
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    assert!(behind, "the held reader keeps checkpoints behind");
    assert_eq!(
        horizon(&m, t0 + Duration::seconds(300)).await,
        vec![(CheckStatus::Ok, None)],
        "not a warning at the threshold itself"
    );
    assert_eq!(
        horizon(&m, t0 + Duration::seconds(400)).await,
        vec![(CheckStatus::Warning, Some("reader".to_string()))],
        "a reader keeping checkpoints behind for 400 s warns"
    );

    reader.execute_batch("COMMIT").expect("let go");
    drop(reader);
    // Commits go on until a checkpoint catches up: one that ran while later commits were
    // still appending to the WAL also ends behind (it copies what was there when it began),
    // and the next is asked for 32 commits later (or the idle truncation, 30 s later).
    let mut recovered = false;
    for _ in 0..100 {
        commits(&h).await;
        tokio::time::sleep(StdDuration::from_millis(10)).await;
        if horizon(&m, t0 + Duration::seconds(500)).await == vec![(CheckStatus::Ok, None)] {
            recovered = true;
            break;
        }
    }
    assert!(recovered, "Ok again once a checkpoint caught up");
}
