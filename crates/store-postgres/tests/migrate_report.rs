//! What a store reports as the migrations it applied: nodes that start together on a new
//! schema run every migration once between them, and each says only what it ran.

mod common;

use kairos_store::sql::migrate::MIGRATIONS;
use kairos_store_postgres::PostgresStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_each_report_only_the_migrations_they_ran() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig_report", "This migrate test").await
    else {
        return;
    };
    let connect = || PostgresStore::connect(&guard.url, &guard.schema);
    let (a, b, c) = tokio::join!(connect(), connect(), connect());
    let stores = [a, b, c].map(|s| s.expect("connect"));
    let mut ran: Vec<Vec<i64>> = stores
        .iter()
        .map(|s| s.migrated().iter().map(|m| m.version).collect())
        .collect();
    ran.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let all: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(ran[0], all, "one node ran every migration, in order");
    assert!(
        ran[1].is_empty() && ran[2].is_empty(),
        "the others ran none and say so: {ran:?}"
    );
    let again = connect().await.expect("connect again");
    assert!(again.migrated().is_empty(), "a current schema: nothing ran");
    for s in stores.iter().chain([&again]) {
        s.close().await;
    }
}
