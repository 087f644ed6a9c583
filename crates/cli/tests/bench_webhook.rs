//! `kairos bench --webhook`: every job is a real signed webhook, delivered through the executor
//! to the bench's own receiver on 127.0.0.1, which verifies each signature. The result line
//! keeps every field of `kairos bench` and adds `deliveries_per_sec` and `verified`.

mod common;

use common::kairos_cmd;
use serde_json::Value;
use std::ffi::OsStr;

/// Run `kairos <args>`, require success, and return its last line as JSON.
fn bench(args: &[&OsStr]) -> Value {
    let out = kairos_cmd().args(args).output().expect("run kairos bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().expect("a result line");
    serde_json::from_str(last).expect("the last line is JSON")
}

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

#[test]
fn bench_webhook_delivers_and_verifies_every_signature() {
    const N: u64 = 40;
    // No KAIROS_ALLOW_PRIVATE_TARGETS: the bench allows its own receiver by itself.
    let n = N.to_string();
    let mut args = os(&[
        "bench",
        "--webhook",
        "--concurrency",
        "10",
        "--lateness-jobs",
        "10",
    ]);
    args.extend([OsStr::new("--jobs"), OsStr::new(&n)]);
    let r = bench(&args);
    for field in [
        "process_per_sec",
        "enqueue_per_sec",
        "p50_lateness_ms",
        "p99_lateness_ms",
        "started_early",
        "database",
        "concurrency",
        "jobs",
        "backlog",
        "deliveries_per_sec",
        "verified",
    ] {
        assert!(r.get(field).is_some(), "no {field} in {r}");
    }
    assert_eq!(r["verified"], N, "{r}");
    assert_eq!(r["rejected"], 0, "{r}");
    assert_eq!(r["jobs"], N, "{r}");
    assert_eq!(r["database"], "sqlite", "{r}");
    assert_eq!(r["started_early"], 0, "{r}");
    assert!(r["deliveries_per_sec"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
}

#[test]
fn bench_without_webhook_keeps_its_fields_and_adds_none() {
    let r = bench(&os(&[
        "bench",
        "--jobs",
        "20",
        "--concurrency",
        "10",
        "--lateness-jobs",
        "10",
    ]));
    assert_eq!(r["jobs"], 20, "{r}");
    assert!(r.get("process_per_sec").is_some(), "{r}");
    assert!(r.get("verified").is_none(), "{r}");
}

/// Behind a backlog (checkpointed into the database file before phase 1: `SqliteStore::checkpoint`
/// has its own test) the bench runs to
/// its result line, and the backlog is left queued, untouched.
#[test]
fn bench_behind_a_backlog_runs_and_leaves_it_queued() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut args = os(&[
        "bench",
        "--jobs",
        "20",
        "--backlog",
        "300",
        "--concurrency",
        "10",
        "--lateness-jobs",
        "10",
        "--dir",
    ]);
    args.push(dir.path().as_os_str());
    let r = bench(&args);
    assert_eq!(r["backlog"], 300, "{r}");
    assert_eq!(r["started_early"], 0, "{r}");
    let db = available_jobs(&dir.path().join("kairos.db"));
    assert_eq!(db, 300, "the backlog is still queued");
}

/// Jobs still available in the bench's database file, counted through the store.
fn available_jobs(path: &std::path::Path) -> i64 {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        use kairos_store::prelude::*;
        let store = kairos_store_sqlite::SqliteStore::open(path)
            .await
            .expect("open the bench's database");
        let n = store
            .job_count_by_state()
            .await
            .expect("counts")
            .into_iter()
            .filter(|(state, _)| state == "available")
            .map(|(_, n)| n)
            .sum();
        store.close().await;
        n
    })
}
