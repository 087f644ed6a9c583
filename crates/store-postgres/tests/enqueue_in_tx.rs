//! Transactional enqueue from an application's own transaction: the job exists iff the
//! transaction commits. Skipped loudly when PostgreSQL is not reachable (see `common`).

mod common;

use common::{database_url, open};
use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::{job, t0};
use kairos_store_postgres::job_insert_in_tx;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_in_a_transaction_exists_iff_it_commits() {
    let Some((store, _guard)) = open().await else {
        return;
    };
    let schema = store.schema().to_string();
    // The application's own pool: no search_path pointing at kairos's schema.
    let app = sqlx::PgPool::connect(&database_url())
        .await
        .expect("app pool");

    // Rolled back: the job never existed.
    let rolled = job(t0());
    let mut tx = app.begin().await.expect("begin");
    let path_before: String = sqlx::query_scalar("SHOW search_path")
        .fetch_one(&mut *tx)
        .await
        .expect("search_path");
    let inserted = job_insert_in_tx(&mut tx, &schema, rolled.clone())
        .await
        .expect("enqueue in tx");
    assert!(inserted.created);
    // The transaction's search_path is set back after the insert.
    let path_after: String = sqlx::query_scalar("SHOW search_path")
        .fetch_one(&mut *tx)
        .await
        .expect("search_path");
    assert_eq!(path_after, path_before);
    assert_eq!(inserted.job.id, rolled.id);
    assert!(
        store.job_get(&rolled.id).await.expect("get").is_none(),
        "not visible before the commit"
    );
    tx.rollback().await.expect("rollback");
    assert!(store.job_get(&rolled.id).await.expect("get").is_none());

    // Committed: the job exists, and a second enqueue with its dedupe key returns it.
    let mut committed = job(t0());
    committed.dedupe_key = Some("order-42".into());
    let mut tx = app.begin().await.expect("begin");
    let inserted = job_insert_in_tx(&mut tx, &schema, committed.clone())
        .await
        .expect("enqueue in tx");
    assert!(inserted.created);
    let mut again = job(t0());
    again.dedupe_key = Some("order-42".into());
    let dup = job_insert_in_tx(&mut tx, &schema, again)
        .await
        .expect("again");
    assert!(!dup.created);
    assert_eq!(dup.job.id, committed.id);
    tx.commit().await.expect("commit");
    let got = store
        .job_get(&committed.id)
        .await
        .expect("get")
        .expect("exists after the commit");
    assert_eq!(got.id, committed.id);

    // The caller's search_path is left alone.
    let path: String = sqlx::query_scalar("SHOW search_path")
        .fetch_one(&app)
        .await
        .expect("search_path");
    assert!(!path.contains(&schema), "{path}");

    // A bad schema name is refused.
    let mut tx = app.begin().await.expect("begin");
    let e = job_insert_in_tx(&mut tx, "Bad-Name", job(t0()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), kairos_store::ErrorKind::Invalid);
    drop(tx); // rolls back and returns the connection, which `close` waits for
    app.close().await;
}
