//! PostgreSQL for server tests: a fresh schema per test (dropped when the test ends), and a
//! loud skip when the server is not reachable unless `KAIROS_TEST_POSTGRES=required`. The
//! server is `KAIROS_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).

use kairos_store_postgres::PostgresStore;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use std::time::Duration;

/// The server's URL.
pub fn database_url() -> String {
    std::env::var("KAIROS_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// Drops the test's schema when dropped (on a thread with its own runtime: drop cannot await).
pub struct SchemaGuard {
    url: String,
    /// The schema.
    pub schema: String,
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(10), async {
                    let mut conn = PgConnection::connect(&url).await.ok()?;
                    // The name was generated below: safe to splice.
                    conn.execute(AssertSqlSafe(format!(
                        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                    )))
                    .await
                    .ok()?;
                    conn.close().await.ok()
                })
                .await
                .ok()
                .flatten()
            })
        });
        if done.join().ok().flatten().is_none() {
            eprintln!("warning: could not drop test schema {}", self.schema);
        }
    }
}

/// A store in a fresh schema and its guard; `None` to skip.
pub async fn open() -> Option<(PostgresStore, SchemaGuard)> {
    let url = database_url();
    let probe = tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(&url)).await;
    let why = match probe {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            None
        }
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some("connecting timed out after 5 s".to_string()),
    };
    if let Some(why) = why {
        if std::env::var("KAIROS_TEST_POSTGRES").is_ok_and(|v| v == "required") {
            panic!("PostgreSQL not reachable at {url} and KAIROS_TEST_POSTGRES=required: {why}");
        }
        eprintln!(
            "\n{bar}\nSKIPPED: PostgreSQL not reachable at {url} ({why}); set KAIROS_TEST_POSTGRES=required to fail instead\n{bar}\n",
            bar = "!".repeat(100)
        );
        return None;
    }
    let schema = format!("kairos_srv_{}", uuid::Uuid::new_v4().simple());
    let guard = SchemaGuard {
        url: url.clone(),
        schema: schema.clone(),
    };
    let store = PostgresStore::connect(&url, &schema)
        .await
        .unwrap_or_else(|e| panic!("opening the PostgreSQL store in schema {schema}: {e}"));
    Some((store, guard))
}
