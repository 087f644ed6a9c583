//! `kairos endpoint list|show|enable|rotate` against the real binary: a webhook endpoint
//! disabled by a 410 is listed with `disabled_at` and its last failure, and enabled again; an
//! unknown id is an error naming it; `show` prints the health; `rotate` prints a new secret
//! once and opens the window.

mod common;

use chrono::Duration;
use common::run_in as run;
use kairos_core::{Clock, SystemClock};
use kairos_store::prelude::*;
use kairos_store::{EndpointDisable, EndpointFailureRecord, EndpointUpsert};
use kairos_store_sqlite::SqliteStore;

#[tokio::test]
async fn endpoint_list_shows_disabled_and_last_failure_and_enable_clears_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let now = SystemClock.now() - Duration::minutes(5);
    for (id, secret) in [
        ("ep_gone", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        ("ep_fine", "whsec_AAAA9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ] {
        store
            .endpoint_upsert(EndpointUpsert {
                id: id.into(),
                url: format!("https://example.com/{id}"),
                secret: secret.into(),
                now,
            })
            .await
            .expect("upsert");
    }
    store
        .endpoint_failure_record(EndpointFailureRecord {
            id: "ep_gone".into(),
            error: "endpoint answered 410 Gone; disabling it".into(),
            now,
        })
        .await
        .expect("failure");
    store
        .endpoint_disable(EndpointDisable {
            id: "ep_gone".into(),
            reason: "HTTP 410 Gone".into(),
            now,
        })
        .await
        .expect("disable");
    store.close().await;

    let (code, out, err) = run(dir.path(), &["--json", "endpoint", "list", "--disabled"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["id"], "ep_gone");
    assert!(rows[0]["disabled_at"].is_string(), "{v}");
    assert!(
        rows[0]["last_failure"]
            .as_str()
            .unwrap_or_default()
            .contains("410"),
        "{v}"
    );
    assert!(!out.contains("whsec_"), "no secret: {out}");

    let (code, out, err) = run(dir.path(), &["endpoint", "list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ep_gone") && out.contains("ep_fine"), "{out}");

    let (code, out, err) = run(dir.path(), &["endpoint", "enable", "ep_gone"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("enabled ep_gone"), "{out}");
    let (_, out, _) = run(dir.path(), &["--json", "endpoint", "list", "--disabled"]);
    assert_eq!(out.trim(), "[]");

    let (code, _, err) = run(dir.path(), &["endpoint", "enable", "ep_nope"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("ep_nope"), "{err}");
}

/// I15-3a / I15-3c: `kairos endpoint show` prints the health (never the secret) and `kairos
/// endpoint rotate --window-secs` generates a secret, prints it once, and opens the window;
/// a window out of range is refused naming the flag's field, with nothing changed.
#[tokio::test]
async fn endpoint_show_prints_health_and_rotate_opens_a_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let old = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    store
        .endpoint_upsert(EndpointUpsert {
            id: "ep_rot".into(),
            url: "https://example.com/rot".into(),
            secret: old.into(),
            now: SystemClock.now() - Duration::minutes(5),
        })
        .await
        .expect("upsert");
    store.close().await;

    let (code, out, err) = run(dir.path(), &["endpoint", "show", "ep_rot"]);
    assert_eq!(code, Some(0), "{err}");
    for needle in [
        "consecutive_failures        0",
        "attempts_24h                0",
        "failure_rate_24h            -",
        "previous_secret_expires_at  -",
    ] {
        assert!(out.contains(needle), "{needle:?} in {out}");
    }
    assert!(!out.contains("whsec_"), "{out}");

    let (code, _, err) = run(
        dir.path(),
        &["endpoint", "rotate", "ep_rot", "--window-secs", "2592001"],
    );
    assert_ne!(code, Some(0));
    assert!(err.contains("window_secs"), "{err}");

    let (code, out, err) = run(
        dir.path(),
        &[
            "--json",
            "endpoint",
            "rotate",
            "ep_rot",
            "--window-secs",
            "600",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let secret = v["secret"].as_str().expect("the new secret").to_string();
    assert!(secret.starts_with("whsec_") && secret != old, "{v}");
    assert!(
        v["endpoint"]["previous_secret_expires_at"].is_string(),
        "{v}"
    );

    let (code, out, err) = run(dir.path(), &["--json", "endpoint", "show", "ep_rot"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !out.contains("whsec_"),
        "the secret is shown once only: {out}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["previous_secret_expires_at"].is_string(), "{v}");
    assert_eq!(v["health"]["consecutive_failures"], 0);

    let (code, _, err) = run(dir.path(), &["endpoint", "rotate", "ep_nope"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("ep_nope"), "{err}");
}
