//! Migration 0022 on a database created at the previous migration: a schedule stored with
//! `skip` (the old default) reads back as `once`, with the default threshold and window.

use kairos_core::schedule::Misfire;
use kairos_store::prelude::*;
use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

#[tokio::test]
async fn schedule_stored_with_skip_reads_back_as_once_after_migration_0022() {
    // The schema as the release before 0022 left it.
    let common::Before {
        _dir,
        path,
        mut conn,
        ..
    } = common::before(22).await;
    for (id, misfire) in [("sch_old_skip", "skip"), ("sch_old_all", "all:3")] {
        sqlx::query(
            "INSERT INTO schedules (id, name, kind, spec, timezone, period, misfire, payload, state, next_fire_at, created_at, updated_at)
             VALUES (?1, ?1, 'webhook', '{\"type\":\"cron\",\"expr\":\"0 9 * * *\"}', 'UTC', 'occurrence', ?2, '{}', 'active', 0, 0, 0)",
        )
        .bind(id)
        .bind(misfire)
        .execute(&mut conn)
        .await
        .expect("insert an old schedule");
    }
    conn.close().await.expect("close");

    // Opening the store applies 0022.
    let store = SqliteStore::open(&path).await.expect("open and migrate");
    let s = store
        .schedule_get("sch_old_skip")
        .await
        .unwrap()
        .expect("kept");
    assert_eq!(s.misfire, Misfire::Once);
    assert_eq!((s.misfire_threshold, s.misfire_window), (None, None));
    let s = store
        .schedule_get("sch_old_all")
        .await
        .unwrap()
        .expect("kept");
    assert_eq!(s.misfire, Misfire::All { cap: 3 }, "only skip moves");
    store.close().await;
}
