//! `kairos migrate` against the real binary, on a fresh SQLite file and on one the former
//! migration runner migrated: every migration is listed with when it was applied.

mod common;

use common::run_in as run;

#[test]
fn migrate_list_shows_every_migration_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(dir.path(), &["migrate", "--list"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("is up to date"), "{out}");
    let all = kairos_store::sql::migrate::MIGRATIONS.len();
    assert!(
        out.contains(&format!("applied {all} migrations: 0001 init, ")),
        "a new database: every migration named as applied: {out}"
    );
    assert!(out.contains("VERSION") && out.contains("APPLIED"), "{out}");
    for m in kairos_store::sql::migrate::MIGRATIONS {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("{:04}", m.version)) && l.contains(m.name))
            .unwrap_or_else(|| panic!("{} {} listed: {out}", m.version, m.name));
        assert!(!line.contains("pending"), "{line}");
    }
    // Plain `migrate` says only that the database is current, and that nothing ran.
    let (code, out, err) = run(dir.path(), &["migrate"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("is up to date") && !out.contains("VERSION"),
        "{out}"
    );
    assert!(
        out.contains("nothing to apply") && !out.contains("applied"),
        "{out}"
    );
}

/// On a database the release before left (every migration but the last), `kairos migrate`
/// names the one migration it applied, in text and in JSON; run again, none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_names_the_migrations_it_applied() {
    use kairos_store::sql::{Dialect, migrate::MIGRATIONS, migrate::migrator_before};
    use sqlx::Connection;
    let last = MIGRATIONS.last().expect("migrations");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("kairos.db").display()
    );
    let mut conn = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("connect");
    migrator_before(Dialect::Sqlite, last.version)
        .run(&mut conn)
        .await
        .expect("migrate to the release before");
    conn.close().await.expect("close");

    let (code, out, err) = run(dir.path(), &["migrate"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let want = format!("applied 1 migration: {:04} {}\n", last.version, last.name);
    assert!(out.starts_with(&want), "{out}");
    assert!(
        out.contains(&format!("is up to date (schema version {})", last.version)),
        "{out}"
    );

    let (code, out, err) = run(dir.path(), &["migrate", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let m: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(
        m["applied"],
        serde_json::json!([]),
        "nothing left to apply: {m}"
    );
    assert_eq!(m["version"], last.version, "{m}");
    assert_eq!(m["up_to_date"], true, "{m}");
}

/// The same on PostgreSQL: a schema at the release before gets the last migration, named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_on_postgres_names_the_migrations_it_applied() {
    use kairos_store::sql::{Dialect, migrate::MIGRATIONS, migrate::migrator_before};
    use kairos_testkit::pg::{fresh_schema, schema_migrated};
    use sqlx::Connection;
    let Some(guard) = fresh_schema("kairos_mig_named", "This migrate test").await else {
        return;
    };
    let last = MIGRATIONS.last().expect("migrations");
    let conn = schema_migrated(&guard, &migrator_before(Dialect::Postgres, last.version)).await;
    conn.close().await.expect("close");

    let dir = tempfile::tempdir().expect("tempdir");
    let key = "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=";
    let mut cmd = common::kairos_cmd();
    cmd.args(["migrate", "--json", "--data-dir"])
        .arg(dir.path())
        .env("KAIROS_DATABASE_URL", &guard.url)
        .env("KAIROS_DATABASE_SCHEMA", &guard.schema)
        .env("KAIROS_SECRET_KEY", key);
    let out = cmd.output().expect("run kairos migrate");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(
        m["applied"],
        serde_json::json!([{"version": last.version, "name": last.name}]),
        "{m}"
    );
}

/// Run `kairos migrate --data-dir <dir>` with these variables set.
fn migrate_with(dir: &std::path::Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = common::kairos_cmd();
    cmd.args(["migrate", "--data-dir"]).arg(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kairos migrate");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn migrate_with_a_malformed_secret_key_creates_no_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = migrate_with(dir.path(), &[("KAIROS_SECRET_KEY", "not-a-key")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("KAIROS_SECRET_KEY"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read the data dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "nothing created: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_on_postgres_without_a_secret_key_migrates_nothing() {
    use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
    use sqlx::Connection;
    let url = database_url();
    if !reachable(&url, "This migrate test").await {
        return;
    }
    let guard = SchemaGuard::new(url.clone(), "kairos_mig_key");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", guard.schema.as_str()),
    ];
    let (code, err) = migrate_with(dir.path(), &db);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("KAIROS_SECRET_KEY is not set"), "{err}");
    let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
    let (tables,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM information_schema.tables WHERE table_schema = $1")
            .bind(&guard.schema)
            .fetch_one(&mut conn)
            .await
            .expect("count the schema's tables");
    assert_eq!(tables, 0, "no table created or migrated without a key");
    conn.close().await.expect("close");
}
