//! Secrets at rest (issue 12, finding 4) through the real `kairos` binary: the modes of the
//! data directory and the database files.

mod common;

use common::{Server, TOKEN};
use kairos_testkit::init_crypto;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
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
