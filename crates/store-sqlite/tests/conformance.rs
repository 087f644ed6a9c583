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
