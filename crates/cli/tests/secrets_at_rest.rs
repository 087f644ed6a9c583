//! Secrets at rest (issue 12, finding 4) through the real `kairos` binary: the modes of the
//! data directory and the database files, and the secret key (`KAIROS_SECRET_KEY`): generated
//! on SQLite, required and checked against the database on PostgreSQL.
//!
//! The PostgreSQL test uses `KAIROS_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); it is skipped with a message when the server
//! cannot be reached, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use base64::Engine as _;
use common::{SECRET, Server, TOKEN, api, kairos_cmd};
use kairos_store::prelude::*;
use kairos_store::{EndpointUpsert, HttpAuth, HttpTargetUpsert};
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use kairos_testkit::{TestReceiver, init_crypto, verify_standard_webhook};
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// kairos.db and the companions SQLite keeps beside it while it runs (WAL mode).
const DB_FILES: [&str; 3] = ["kairos.db", "kairos.db-wal", "kairos.db-shm"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_creates_the_data_dir_0700_and_every_database_file_0600() {
    init_crypto();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("fresh").join("data");
    let server = Server::start(&data, Some(TOKEN)).await;
    // A write, so the WAL has content while the server runs.
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let res = http
        .post(format!("{}/v1/schedules", server.base))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({
            "name": "modes", "every": "1h", "kind": "webhook",
            "payload": {"url": "http://127.0.0.1:9/", "body": {}}
        }))
        .send()
        .await
        .expect("request");
    assert!(res.status().is_success() || res.status().is_client_error());
    assert_eq!(mode(&data), 0o700, "the data directory kairos created");
    for f in DB_FILES {
        let p = data.join(f);
        assert!(p.exists(), "{f} exists while serving");
        assert_eq!(mode(&p), 0o600, "{f} while serving");
    }
    let status = server.terminate(Duration::from_secs(30)).await;
    assert!(status.success());
    for f in DB_FILES {
        let p = data.join(f);
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{f} after shutdown");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_leaves_an_existing_open_data_dir_with_a_warning_and_narrows_old_db_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // A database left 0644 by an earlier version.
    {
        let first = Server::start(&data, Some(TOKEN)).await;
        assert!(first.terminate(Duration::from_secs(30)).await.success());
    }
    for f in DB_FILES {
        let p = data.join(f);
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        }
    }
    let server = Server::start(&data, Some(TOKEN)).await;
    assert_eq!(mode(&data), 0o755, "an existing directory is left as it is");
    let log = server.stderr();
    assert!(
        log.contains("has mode 0755") && log.contains("chmod 700"),
        "warns about the open directory:\n{log}"
    );
    for f in DB_FILES {
        let p = data.join(f);
        assert!(p.exists(), "{f} exists while serving");
        assert_eq!(mode(&p), 0o600, "{f} narrowed");
    }
    assert!(server.terminate(Duration::from_secs(30)).await.success());
}

/// `kairos serve` that must refuse to start: its exit code and stderr (panics if it is still
/// running after 60 s).
async fn refused(data_dir: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = tokio::process::Command::from(kairos_cmd());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("KAIROS_API_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("kairos serve should have refused to start within 60 s")
        .expect("run kairos serve");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn new_key() -> String {
    let out = kairos_cmd()
        .args(["key", "generate"])
        .output()
        .expect("run kairos key generate");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

#[test]
fn key_generate_prints_a_new_32_byte_key_in_base64_each_time() {
    let (a, b) = (new_key(), new_key());
    assert_ne!(a, b);
    for k in [a, b] {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&k)
            .expect("base64");
        assert_eq!(bytes.len(), 32, "{k}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_generates_a_0600_secret_key_file_once_and_refuses_another_key() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let first = Server::start(&data, Some(TOKEN)).await;
    let file = data.join("secret-key");
    assert_eq!(mode(&file), 0o600);
    let key = std::fs::read_to_string(&file).expect("read secret-key");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(key.trim())
        .expect("base64");
    assert_eq!(bytes.len(), 32);
    assert!(
        !first.stderr().contains(key.trim()),
        "the key is never logged"
    );
    assert!(first.terminate(Duration::from_secs(30)).await.success());

    // A later start reuses the file.
    let second = Server::start(&data, Some(TOKEN)).await;
    assert!(second.terminate(Duration::from_secs(30)).await.success());
    assert_eq!(std::fs::read_to_string(&file).expect("read"), key);

    // Another key: refused, naming the setting.
    let other = new_key();
    let (code, stderr) = refused(&data, &[("KAIROS_SECRET_KEY", other.as_str())]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("secret_key") && stderr.contains("KAIROS_SECRET_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains(&other), "the key is never printed");
    // The file's key given as the setting: accepted.
    let given = Server::start_with(&data, Some(TOKEN), &[("KAIROS_SECRET_KEY", key.trim())]).await;
    assert!(given.terminate(Duration::from_secs(30)).await.success());
    // A replaced key file: refused too.
    std::fs::write(&file, format!("{other}\n")).expect("write");
    let (code, stderr) = refused(&data, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("KAIROS_SECRET_KEY"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotate_on_sqlite_reseals_secrets_replaces_the_key_file_and_refuses_the_old_key() {
    init_crypto();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let receiver = TestReceiver::start().await;
    let first = Server::start(&data, Some(TOKEN)).await;
    two_signed_deliveries(&first, &receiver, 2).await;
    assert!(first.terminate(Duration::from_secs(30)).await.success());
    let file = data.join("secret-key");
    let old = std::fs::read_to_string(&file)
        .expect("read")
        .trim()
        .to_string();
    let rotate = |env: &[(&str, &str)]| {
        let mut c = kairos_cmd();
        c.args(["key", "rotate", "--data-dir"]).arg(&data);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("run kairos key rotate")
    };

    // No new key, or the current one: refused, nothing changed.
    let out = rotate(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KAIROS_NEW_SECRET_KEY"));
    let out = rotate(&[("KAIROS_NEW_SECRET_KEY", old.as_str())]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).expect("read").trim(), old);

    let new = new_key();
    let out = rotate(&[("KAIROS_NEW_SECRET_KEY", new.as_str())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read").trim(), new);
    assert_eq!(mode(&file), 0o600);

    assert!(
        String::from_utf8_lossy(&out.stdout).contains("re-sealed 1 endpoints and http targets")
    );

    // The rotated file starts and the re-sealed endpoint still signs; the old key is refused.
    let again = Server::start(&data, Some(TOKEN)).await;
    two_signed_deliveries(&again, &receiver, 4).await;
    assert!(again.terminate(Duration::from_secs(30)).await.success());
    let (code, stderr) = refused(&data, &[("KAIROS_SECRET_KEY", old.as_str())]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("KAIROS_SECRET_KEY"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_nodes_need_the_same_secret_key_and_refuse_none_or_another() {
    let url = database_url();
    if !reachable(&url, "This secret-key test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_sk");
    let schema = guard.schema.clone();
    let db = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", schema.as_str()),
    ];
    let dirs: Vec<_> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();

    // No key: refused, naming the setting; nothing generated.
    let (code, stderr) = refused(dirs[0].path(), &db).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("KAIROS_SECRET_KEY is not set"), "{stderr}");
    assert!(!dirs[0].path().join("secret-key").exists());

    // The first node with a key stores its check value.
    let key = new_key();
    let with = |k: &'static str, v: &str| {
        let mut e: Vec<(&str, String)> = db.iter().map(|(a, b)| (*a, b.to_string())).collect();
        e.push((k, v.to_string()));
        e
    };
    let env_a = with("KAIROS_SECRET_KEY", &key);
    let env_a: Vec<(&str, &str)> = env_a.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let a = Server::start_with(dirs[1].path(), Some(TOKEN), &env_a).await;

    // Another key: refused, naming the setting, while the first node runs.
    let other = new_key();
    let env_b = with("KAIROS_SECRET_KEY", &other);
    let env_b: Vec<(&str, &str)> = env_b.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (code, stderr) = refused(dirs[2].path(), &env_b).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("KAIROS_SECRET_KEY") && stderr.contains("not the key"),
        "{stderr}"
    );
    assert!(!stderr.contains(&other) && !stderr.contains(&key));

    // The same key on another node: starts.
    let c = Server::start_with(dirs[3].path(), Some(TOKEN), &env_a).await;
    assert!(c.terminate(Duration::from_secs(30)).await.success());
    assert!(a.terminate(Duration::from_secs(30)).await.success());
}

/// The part of [`SECRET`] after `whsec_` (the bytes the signatures are made with).
fn secret_body() -> &'static str {
    SECRET.trim_start_matches("whsec_")
}

/// The password and the query token inside [`hook_url`] (issue 33: stored sealed, like secrets).
const URL_PASSWORD: &str = "hookpass-7QxWv3";
const URL_TOKEN: &str = "qtok-9LmRt5Zp";

/// The webhook URL of these tests: with a user info and a query carrying credentials.
fn hook_url(receiver: &TestReceiver) -> String {
    receiver
        .url(&format!("/hook?token={URL_TOKEN}"))
        .replace("http://", &format!("http://hookuser:{URL_PASSWORD}@"))
}

/// Two webhook jobs to the same endpoint through `server`; every delivery the receiver has
/// (`total` once these arrived) is signed with [`SECRET`].
async fn two_signed_deliveries(server: &Server, receiver: &TestReceiver, total: usize) {
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    for n in 0..2 {
        let (status, job) = api(
            &http,
            reqwest::Method::POST,
            format!("{}/v1/jobs", server.base),
            Some(serde_json::json!({
                "kind": "webhook",
                "webhook": {"url": hook_url(receiver), "secret": SECRET},
                "payload": {"n": n},
            })),
        )
        .await;
        assert_eq!(status, 201, "{job}");
    }
    assert!(
        receiver.wait_for(total, Duration::from_secs(30)).await,
        "{total} deliveries; stderr:\n{}",
        server.stderr()
    );
    for r in receiver.received() {
        assert!(
            verify_standard_webhook(SECRET, &r, common::now_unix()),
            "{:?}",
            r.headers
        );
    }
}

/// The bearer token and a header value of the http job in [`http_call`].
const BEARER: &str = "tok_Zq8VnR2mXw5LcP0sYb7KdJ3h";
const API_KEY: &str = "key_Hf6TgU1oNa9EiQ4rWv2ZsM8c";

/// An http job with a bearer token and an `x-api-key` header through `server`; the call
/// arrives with both (the receiver has `total` requests then).
async fn http_call(server: &Server, receiver: &TestReceiver, total: usize) {
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let (status, job) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(serde_json::json!({
            "kind": "http",
            "http": {"url": receiver.url("/api"), "method": "POST",
                     "headers": {"x-api-key": API_KEY}, "body": {"a": 1},
                     "timeout": "10s", "bearer_token": BEARER},
        })),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    assert!(
        receiver.wait_for(total, Duration::from_secs(30)).await,
        "{total} requests; stderr:\n{}",
        server.stderr()
    );
    let calls: Vec<_> = receiver
        .received()
        .into_iter()
        .filter(|r| r.path == "/api")
        .collect();
    assert!(!calls.is_empty());
    for r in calls {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {BEARER}").as_str())
        );
        assert_eq!(r.header("x-api-key"), Some(API_KEY));
    }
}

/// Whether any of the SQLite files in `data` contains `needle`.
fn sqlite_files_contain(data: &Path, needle: &str) -> bool {
    DB_FILES.iter().any(|f| {
        std::fs::read(data.join(f))
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_stores_webhook_and_http_target_secrets_sealed_and_still_uses_them() {
    init_crypto();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let receiver = TestReceiver::start().await;
    let server = Server::start(&data, Some(TOKEN)).await;
    two_signed_deliveries(&server, &receiver, 2).await;
    http_call(&server, &receiver, 3).await;
    for needle in [secret_body(), BEARER, API_KEY, URL_PASSWORD, URL_TOKEN] {
        assert!(
            !sqlite_files_contain(&data, needle),
            "{needle} while serving"
        );
    }
    assert!(server.terminate(Duration::from_secs(30)).await.success());
    for needle in [secret_body(), BEARER, API_KEY, URL_PASSWORD, URL_TOKEN] {
        assert!(
            !sqlite_files_contain(&data, needle),
            "{needle} after shutdown"
        );
    }
    // One endpoint for both jobs, found by its lookup hash.
    let store = kairos_store_sqlite::SqliteStore::open(&data.join("kairos.db"))
        .await
        .expect("open");
    store.close().await;
    let mut conn =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", data.join("kairos.db").display()))
            .await
            .expect("connect");
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT secret, secret_hash FROM endpoints")
            .fetch_all(&mut conn)
            .await
            .expect("select");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].0.starts_with("kairos:v1:") && rows[0].1.is_some(),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_seals_plaintext_endpoints_and_http_targets_on_first_start_once() {
    init_crypto();
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let receiver = TestReceiver::start().await;
    // A database from before sealing: the endpoint secret in plaintext.
    {
        let store = kairos_store_sqlite::SqliteStore::open(&data.join("kairos.db"))
            .await
            .expect("open");
        store
            .endpoint_upsert(EndpointUpsert {
                id: "ep_legacy".into(),
                url: hook_url(&receiver),
                secret: SECRET.into(),
                now: chrono::Utc::now(),
            })
            .await
            .expect("upsert");
        store
            .http_target_upsert(HttpTargetUpsert {
                id: "ht_legacy".into(),
                fingerprint: "legacy-fingerprint".into(),
                url: receiver.url("/api"),
                method: "POST".into(),
                headers: [("x-api-key".to_string(), API_KEY.to_string())].into(),
                body: None,
                timeout_ms: 10_000,
                auth: HttpAuth::Bearer,
                secret: Some(BEARER.into()),
                now: chrono::Utc::now(),
            })
            .await
            .expect("http target upsert");
        store.close().await;
    }
    for needle in [secret_body(), BEARER, API_KEY, URL_PASSWORD, URL_TOKEN] {
        assert!(
            sqlite_files_contain(&data, needle),
            "{needle} in plaintext first"
        );
    }
    let server = Server::start(&data, Some(TOKEN)).await;
    two_signed_deliveries(&server, &receiver, 2).await;
    let server_log = server.stderr();
    assert!(
        server_log.contains("sealed secrets stored in plaintext"),
        "{server_log}"
    );
    assert!(server.terminate(Duration::from_secs(30)).await.success());
    for needle in [secret_body(), BEARER, API_KEY, URL_PASSWORD, URL_TOKEN] {
        assert!(
            !sqlite_files_contain(&data, needle),
            "{needle} sealed on start:\n{server_log}"
        );
    }
    // A second start finds nothing to seal and still opens it.
    let again = Server::start(&data, Some(TOKEN)).await;
    assert!(
        !again
            .stderr()
            .contains("sealed secrets stored in plaintext"),
        "nothing left to seal"
    );
    assert!(again.terminate(Duration::from_secs(30)).await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stores_webhook_and_http_target_secrets_sealed_and_still_uses_them() {
    let url = database_url();
    if !reachable(&url, "This secret-key test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_sk");
    let schema = guard.schema.clone();
    let key = new_key();
    let env = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", schema.as_str()),
        ("KAIROS_SECRET_KEY", key.as_str()),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    let server = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    two_signed_deliveries(&server, &receiver, 2).await;
    http_call(&server, &receiver, 3).await;
    let mut conn = PgConnection::connect(&url).await.expect("connect");
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT secret, secret_hash FROM \"{schema}\".endpoints"
    )))
    .fetch_all(&mut conn)
    .await
    .expect("select");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].0.starts_with("kairos:v1:") && rows[0].1.is_some(),
        "{rows:?}"
    );
    assert!(!rows[0].0.contains(secret_body()));
    for table in [
        "endpoints",
        "http_targets",
        "jobs",
        "schedules",
        "job_attempts",
    ] {
        for needle in [secret_body(), BEARER, API_KEY, URL_PASSWORD, URL_TOKEN] {
            let hits: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT count(*) FROM \"{schema}\".{table} t WHERE row_to_json(t)::text LIKE '%' || $1 || '%'"
            )))
            .bind(needle)
            .fetch_one(&mut conn)
            .await
            .expect("search");
            assert_eq!(hits, 0, "{table} holds {needle}");
        }
    }
    let _ = conn.close().await;
    assert!(server.terminate(Duration::from_secs(30)).await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_seals_plaintext_endpoints_and_http_targets_on_start_and_key_rotate_reseals_them()
{
    let url = database_url();
    if !reachable(&url, "This secret-key test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_sk");
    let schema = guard.schema.clone();
    let receiver = TestReceiver::start().await;
    // A database from before sealing: the endpoint secret in plaintext.
    {
        let store = kairos_store_postgres::PostgresStore::connect(&url, &schema)
            .await
            .expect("connect");
        store
            .endpoint_upsert(EndpointUpsert {
                id: "ep_legacy".into(),
                url: hook_url(&receiver),
                secret: SECRET.into(),
                now: chrono::Utc::now(),
            })
            .await
            .expect("upsert");
        store
            .http_target_upsert(HttpTargetUpsert {
                id: "ht_legacy".into(),
                fingerprint: "legacy-fingerprint".into(),
                url: receiver.url("/api"),
                method: "POST".into(),
                headers: [("x-api-key".to_string(), API_KEY.to_string())].into(),
                body: None,
                timeout_ms: 10_000,
                auth: HttpAuth::Bearer,
                secret: Some(BEARER.into()),
                now: chrono::Utc::now(),
            })
            .await
            .expect("http target upsert");
        store.close().await;
    }
    let http_row = |url: String, schema: String| async move {
        let mut conn = PgConnection::connect(&url).await.expect("connect");
        let row: (String, String, Option<String>) = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT fingerprint, headers::text, secret FROM \"{schema}\".http_targets WHERE id = 'ht_legacy'"
        )))
        .fetch_one(&mut conn)
        .await
        .expect("select");
        let _ = conn.close().await;
        row
    };
    let stored = |url: String, schema: String| async move {
        let mut conn = PgConnection::connect(&url).await.expect("connect");
        let rows: Vec<(String, Option<String>)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT secret, secret_hash FROM \"{schema}\".endpoints"
        )))
        .fetch_all(&mut conn)
        .await
        .expect("select");
        let _ = conn.close().await;
        rows
    };
    let old = new_key();
    let env = |key: &str| {
        vec![
            ("KAIROS_DATABASE_URL".to_string(), url.clone()),
            ("KAIROS_DATABASE_SCHEMA".to_string(), schema.clone()),
            ("KAIROS_SECRET_KEY".to_string(), key.to_string()),
        ]
    };
    let env_old = env(&old);
    let env_old: Vec<(&str, &str)> = env_old
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(dir.path(), Some(TOKEN), &env_old).await;
    two_signed_deliveries(&server, &receiver, 2).await;
    assert!(server.terminate(Duration::from_secs(30)).await.success());
    let before = stored(url.clone(), schema.clone()).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(before[0].0.starts_with("kairos:v1:") && before[0].1.is_some());
    let (fingerprint, headers, secret) = http_row(url.clone(), schema.clone()).await;
    assert!(fingerprint.starts_with("hmac:"), "{fingerprint}");
    assert!(
        headers.starts_with("\"kairos:v1:") && !headers.contains(API_KEY),
        "{headers}"
    );
    let secret = secret.expect("secret");
    assert!(secret.starts_with("kairos:v1:") && !secret.contains(BEARER));

    let new = new_key();
    let mut cmd = kairos_cmd();
    cmd.args(["key", "rotate", "--data-dir"])
        .arg(dir.path())
        .env("KAIROS_NEW_SECRET_KEY", &new);
    for (k, v) in &env_old {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kairos key rotate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("re-sealed 2 endpoints and http targets")
    );
    let after = stored(url.clone(), schema.clone()).await;
    // The http target opens under the new key.
    let new_bytes: [u8; 32] = base64::engine::general_purpose::STANDARD
        .decode(&new)
        .expect("base64")
        .try_into()
        .expect("32 bytes");
    let store = kairos_store_postgres::PostgresStore::connect(&url, &schema)
        .await
        .expect("connect")
        .with_sealer(std::sync::Arc::new(kairos_store::sealing::Sealer::new(
            &new_bytes,
        )));
    let t = store
        .http_target_get("ht_legacy")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        t.headers.get("x-api-key").map(String::as_str),
        Some(API_KEY)
    );
    assert_eq!(t.secret.as_deref(), Some(BEARER));
    store.close().await;
    assert_ne!(after[0], before[0], "sealed and hashed under the new key");

    let env_new = env(&new);
    let env_new: Vec<(&str, &str)> = env_new
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let server = Server::start_with(dir.path(), Some(TOKEN), &env_new).await;
    two_signed_deliveries(&server, &receiver, 4).await;
    assert!(server.terminate(Duration::from_secs(30)).await.success());
    assert_eq!(
        stored(url.clone(), schema.clone()).await.len(),
        1,
        "the same endpoint reused"
    );
    let (code, stderr) = refused(dir.path(), &env_old).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("KAIROS_SECRET_KEY"), "{stderr}");
}
