//! The conformance suite on a real PostgreSQL server, one fresh schema per test.
//!
//! The server is `KAIROS_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/
//! postgres`). If it cannot be reached the suite is skipped with a loud message on stderr,
//! unless `KAIROS_TEST_POSTGRES=required`, which makes it a failure (CI sets it).

mod common;

use common::{database_url, open};
use kairos_store::Store;
use kairos_store::prelude::*;
use kairos_store_postgres::PostgresStore;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

async fn factory() -> Option<(Arc<dyn Store>, Box<dyn Any + Send>)> {
    let (store, guard) = open().await?;
    Some((Arc::new(store), Box::new(guard)))
}

kairos_store_conformance::store_conformance!(factory);

/// Migrations are idempotent, and concurrent start-ups of one schema do not race (the
/// advisory lock): all succeed and the schema is migrated once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connects_migrate_once() {
    let Some((store, _guard)) = open().await else {
        return;
    };
    let url = database_url();
    let schema = store.schema().to_string();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (url, schema) = (url.clone(), schema.clone());
        tasks.push(tokio::spawn(async move {
            PostgresStore::connect(&url, &schema).await
        }));
    }
    for t in tasks {
        let s = t.await.unwrap().expect("concurrent connect");
        s.migrate().await.expect("migrate again");
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(s.pool())
            .await
            .unwrap();
        // One row per embedded migration file, however many nodes raced to apply them.
        let files = std::fs::read_dir(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../store/migrations/postgres"
        ))
        .unwrap()
        .count() as i64;
        assert_eq!(n, files);
        s.close().await;
    }
}

/// A schema whose name is not `[a-z_][a-z0-9_]{0,62}` is refused before connecting.
#[tokio::test]
async fn invalid_schema_name_is_refused() {
    let e = PostgresStore::connect(&database_url(), "Bad-Name")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), kairos_store::ErrorKind::Invalid);
    assert!(e.to_string().contains("schema"), "{e}");
}

/// Inserting available jobs notifies `kairos_jobs` on commit, with the schema as payload (one
/// notification per transaction); an insert that creates nothing (an existing dedupe key) does
/// not. Other tests insert into other schemas of the same database at the same time, so
/// notifications are filtered by payload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_insert_notifies_listeners() {
    use kairos_store_conformance::fixtures::{job, t0};
    let Some((store, _guard)) = open().await else {
        return;
    };
    let mut listener = sqlx::postgres::PgListener::connect(&database_url())
        .await
        .expect("listener");
    listener.listen("kairos_jobs").await.expect("listen");
    let schema = store.schema().to_string();
    // The number of notifications for this schema that arrive within `wait`.
    let mut count_mine = async |wait: Duration| {
        let mut n = 0;
        let deadline = tokio::time::Instant::now() + wait;
        while let Ok(got) = tokio::time::timeout_at(deadline, listener.recv()).await {
            if got.expect("recv").payload() == schema {
                n += 1;
            }
        }
        n
    };
    let batch: Vec<_> = (0..50).map(|_| job(t0())).collect();
    assert_eq!(store.job_insert_many(batch).await.unwrap().len(), 50);
    assert_eq!(
        count_mine(Duration::from_millis(500)).await,
        1,
        "50 rows, one notification"
    );
    let mut dup = job(t0());
    dup.dedupe_key = Some("once".into());
    assert!(store.job_insert(dup.clone()).await.unwrap().created);
    assert_eq!(count_mine(Duration::from_millis(500)).await, 1);
    dup.id = format!("{}x", dup.id);
    assert!(!store.job_insert(dup).await.unwrap().created);
    assert_eq!(
        count_mine(Duration::from_millis(500)).await,
        0,
        "nothing created, no notification"
    );
}

/// A back door: one SQL statement through `pool` (a store's: its connections are set to the
/// test's schema).
fn raw_on(pool: sqlx::PgPool) -> kairos_store_conformance::raw::RawSql {
    Arc::new(move |sql: String| {
        let pool = pool.clone();
        Box::pin(async move {
            let out: Option<Option<String>> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_optional(&pool)
                .await
                .expect("raw statement");
            out.flatten()
        })
    })
}

/// The store and a back door through its own pool.
async fn factory_raw() -> Option<(
    Arc<dyn Store>,
    Box<dyn Any + Send>,
    kairos_store_conformance::raw::RawSql,
)> {
    let (store, guard) = open().await?;
    let raw = raw_on(store.pool().clone());
    Some((Arc::new(store), Box::new(guard), raw))
}

kairos_store_conformance::store_conformance_raw!(factory_raw);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous() {
    let Some((plain, guard)) = open().await else {
        return;
    };
    let sealed = common::second(&guard)
        .await
        .with_sealer(kairos_store_conformance::sealing::sealer());
    let raw = raw_on(plain.pool().clone());
    kairos_store_conformance::sealing::rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous(
        Arc::new(plain),
        Arc::new(sealed),
        raw,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_5_urls_with_credentials_are_stored_sealed() {
    let Some((plain, guard)) = open().await else {
        return;
    };
    let sealed = common::second(&guard)
        .await
        .with_sealer(kairos_store_conformance::sealing::sealer());
    let raw = raw_on(plain.pool().clone());
    let pass = kairos_store_conformance::sealing::seal_pass(sealed.clone());
    kairos_store_conformance::sealing::urls_with_credentials_are_stored_sealed(
        Arc::new(plain),
        Arc::new(sealed),
        raw,
        pass,
    )
    .await;
}
