//! What the migration tests share: a database file migrated up to just before the version
//! under test, with a connection to fill it as the release before left it.

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
    #[allow(
        dead_code,
        reason = "each test binary compiles this module; not all reconnect"
    )]
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
