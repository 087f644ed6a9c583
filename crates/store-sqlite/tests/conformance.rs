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

/// The store and a back door: one SQL statement on the same file through a connection of its
/// own (WAL lets it read and write beside the store's).
async fn factory_raw() -> Option<(
    Arc<dyn Store>,
    Box<dyn Any + Send>,
    kairos_store_conformance::raw::RawSql,
)> {
    use sqlx::Connection;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let store = SqliteStore::open(&path).await.expect("open sqlite");
    let raw: kairos_store_conformance::raw::RawSql = Arc::new(move |sql: String| {
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
    });
    Some((Arc::new(store), Box::new(dir), raw))
}

kairos_store_conformance::store_conformance_raw!(factory_raw);
