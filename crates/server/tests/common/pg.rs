//! PostgreSQL for server tests: a store in a fresh schema per test (dropped when the test
//! ends), over `kairos_testkit::pg` (the server, the loud skip, the schema guard).

use kairos_store_postgres::PostgresStore;
#[allow(unused_imports)] // not every test binary uses both
pub use kairos_testkit::pg::{SchemaGuard, database_url};

/// A store in a fresh schema and its guard; `None` to skip.
pub async fn open() -> Option<(PostgresStore, SchemaGuard)> {
    let guard =
        kairos_testkit::pg::fresh_schema("kairos_srv", "This PostgreSQL server test").await?;
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "opening the PostgreSQL store in schema {}: {e}",
                guard.schema
            )
        });
    Some((store, guard))
}
