//! What the tests of the schema share: a database file migrated up to just before the version
//! under test, with a connection to fill it as the release before left it; and the program
//! SQLite compiles for a statement.
#![allow(dead_code)] // each test binary uses a different part of this module

use kairos_store::sql::Dialect;
use kairos_store::sql::migrate::migrator_before;
use sqlx::Connection;
use std::path::PathBuf;

/// A SQLite file in its own temporary directory, migrated to the version before `version`.
pub struct Before {
    /// Keeps the directory (and the file) until the test ends.
    pub _dir: tempfile::TempDir,
    /// The file.
    pub path: PathBuf,
    /// Its sqlx URL, to connect again after the store migrated it.
    pub url: String,
    /// An open connection on it.
    pub conn: sqlx::SqliteConnection,
}

/// A database as the release before migration `version` left it.
pub async fn before(version: i64) -> Before {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kairos.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("connect");
    migrator_before(Dialect::Sqlite, version)
        .run(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("migrate to before {version}: {e}"));
    Before {
        _dir: dir,
        path,
        url,
        conn,
    }
}

/// The opcodes SQLite would run for `sql` (its `EXPLAIN`) on the database at `path`, on a
/// native connection; the statement's parameters are bound to NULL.
pub fn opcodes(path: &std::path::Path, sql: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("open natively");
    let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).expect("explain");
    let nulls = std::iter::repeat_n(rusqlite::types::Null, stmt.parameter_count());
    stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(1))
        .expect("explain rows")
        .collect::<rusqlite::Result<Vec<_>>>()
        .expect("opcodes")
}
