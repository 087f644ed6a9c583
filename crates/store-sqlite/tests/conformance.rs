//! The conformance suite on a real SQLite file per test.

use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use std::any::Any;
use std::sync::Arc;

async fn factory() -> Option<(Arc<dyn Store>, Box<dyn Any + Send>)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open sqlite");
    Some((Arc::new(store), Box::new(dir)))
}

kairos_store_conformance::store_conformance!(factory);

/// A back door: one SQL statement on the file at `path` through a connection of its own (WAL
/// lets it read and write beside the store's).
fn raw_on(path: std::path::PathBuf) -> kairos_store_conformance::raw::RawSql {
    use sqlx::Connection;
    Arc::new(move |sql: String| {
        let path = path.clone();
        Box::pin(async move {
            let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                .await
                .expect("raw connection");
            let out: Option<Option<String>> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_optional(&mut conn)
                .await
                .expect("raw statement");
            conn.close().await.expect("close");
            out.flatten()
        })
    })
}

/// The store and a back door to its file.
async fn factory_raw() -> Option<(
    Arc<dyn Store>,
    Box<dyn Any + Send>,
    kairos_store_conformance::raw::RawSql,
)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let store = SqliteStore::open(&path).await.expect("open sqlite");
    Some((Arc::new(store), Box::new(dir), raw_on(path)))
}

kairos_store_conformance::store_conformance_raw!(factory_raw);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let plain = SqliteStore::open(&path).await.expect("open sqlite");
    let sealed = SqliteStore::open(&path)
        .await
        .expect("open sqlite")
        .with_sealer(kairos_store_conformance::sealing::sealer());
    kairos_store_conformance::sealing::rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous(
        Arc::new(plain),
        Arc::new(sealed),
        raw_on(path),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i33_5_urls_with_credentials_are_stored_sealed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let plain = SqliteStore::open(&path).await.expect("open sqlite");
    let sealed = SqliteStore::open(&path)
        .await
        .expect("open sqlite")
        .with_sealer(kairos_store_conformance::sealing::sealer());
    let pass = kairos_store_conformance::sealing::seal_pass(sealed.clone());
    kairos_store_conformance::sealing::urls_with_credentials_are_stored_sealed(
        Arc::new(plain),
        Arc::new(sealed),
        raw_on(path),
        pass,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_retried_while_its_quarter_is_read_is_counted_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open sqlite");
    kairos_store_conformance::slo::a_job_retried_while_its_quarter_is_read_is_counted_once(
        Arc::new(store),
    )
    .await;
}
