//! The statement that advances a schedule at each firing, as SQLite compiles it on the current
//! schema: a recurring schedule's firing writes no `state`, so the state check (a list of three
//! names, which SQLite codes as a temporary b-tree) is not evaluated.

mod common;

use common::opcodes;
use kairos_store::sql::{Dialect, schedules::fire_statement};

#[tokio::test]
async fn recurring_firing_builds_no_temporary_btree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kairos.db");
    let store = kairos_store_sqlite::SqliteStore::open(&path)
        .await
        .expect("open and migrate");
    store.close().await;
    let recurring = opcodes(&path, &fire_statement(Dialect::Sqlite, false));
    assert!(
        !recurring.iter().any(|o| o == "OpenEphemeral"),
        "a recurring firing evaluates no state check: {recurring:?}"
    );
    // The one-shot's last firing sets `state`, and its check still runs (so the probe above
    // would see the b-tree if the statement wrote `state`).
    let finishing = opcodes(&path, &fire_statement(Dialect::Sqlite, true));
    assert!(
        finishing.iter().any(|o| o == "OpenEphemeral"),
        "the finishing firing checks the state it writes: {finishing:?}"
    );
}
