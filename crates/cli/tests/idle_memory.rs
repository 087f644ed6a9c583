//! What an idle node costs in memory: the private memory (`RssAnon` of `/proc/<pid>/status`:
//! heap, stacks, written data) of `kairos serve` on SQLite plus every process it started (the
//! template render workers, `kairos __render-worker`), 60 s after start: at most 12 MB in all
//! (issue 32). File-backed pages (the executable's code, mapped read-only) are left out: they
//! are page cache that the kernel reclaims and the processes share.
//!
//! - `idle_private_memory_counts_the_server_and_every_process_it_started` runs in every test
//!   run on the test build: the measure finds a render worker the server started, and counts it.
//! - `idle_private_memory_of_a_release_build_is_at_most_12_mb` measures a release binary, the
//!   one users run: `cargo build --release -p kairos`, then
//!   `KAIROS_RELEASE_BIN=target/release/kairos cargo test -p kairos --test idle_memory -- --nocapture`
//!   (about 70 s). Without `KAIROS_RELEASE_BIN` it skips, loudly: a debug build's memory says
//!   nothing about the goal.

mod common;

use common::{Server, TOKEN, api};
use reqwest::Method;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// The goal: 12 MB (decimal) of private memory in all.
const IDLE_PRIVATE_MAX_BYTES: u64 = 12_000_000;

/// `pid` and every process it started, and theirs (`/proc/<pid>/task/*/children`), at most
/// 64 processes.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() && out.len() < 64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", out[i])) else {
            i += 1;
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
        i += 1;
    }
    out.truncate(64);
    out
}

/// A process's private resident memory in bytes: `RssAnon` of `/proc/<pid>/status` (kB there
/// are KiB). `None` once the process is gone.
fn rss_anon_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The private memory of `pid` and every process it started: the sum, and each process's
/// (pid, bytes, command line).
fn private_memory(pid: u32) -> (u64, Vec<(u32, u64, String)>) {
    let each: Vec<(u32, u64, String)> = process_tree(pid)
        .into_iter()
        .filter_map(|p| {
            let bytes = rss_anon_bytes(p)?;
            let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            Some((p, bytes, cmd.trim().to_string()))
        })
        .collect();
    (each.iter().map(|(_, b, _)| b).sum(), each)
}

fn client() -> reqwest::Client {
    kairos_testkit::init_crypto();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_private_memory_counts_the_server_and_every_process_it_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_TEMPLATE_WORKERS", "1")]).await;
    let pid = server.child.id().expect("pid");
    // Saving a topic checks its template in a render worker, which stays for the next render.
    let (s, b) = api(
        &client(),
        Method::PUT,
        format!("{}/v1/topics/weekly", server.base),
        Some(json!({"subject": "Hi {{ recipient.id }}", "text": "ok"})),
    )
    .await;
    assert_eq!(s, 200, "{b}");

    let (total, each) = private_memory(pid);
    eprintln!("private memory (RssAnon) {total} bytes: {each:?}");
    assert_eq!(each[0].0, pid, "the server first: {each:?}");
    assert!(each[0].1 > 0, "the server's RssAnon was read: {each:?}");
    let worker = each
        .iter()
        .find(|(_, _, cmd)| cmd.ends_with("__render-worker"))
        .unwrap_or_else(|| panic!("the render worker is counted: {each:?}"));
    assert!(worker.1 > 0, "the worker's RssAnon was read: {each:?}");
    assert_eq!(
        total,
        each.iter().map(|(_, b, _)| b).sum::<u64>(),
        "the total is the server's and the worker's"
    );
    assert!(total > each[0].1, "the worker adds to the server's memory");
    server.terminate(Duration::from_secs(15)).await;
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_private_memory_of_a_release_build_is_at_most_12_mb() {
    let Ok(bin) = std::env::var("KAIROS_RELEASE_BIN") else {
        eprintln!(
            "SKIPPED: set KAIROS_RELEASE_BIN to a `cargo build --release -p kairos` binary \
             to measure an idle node's private memory"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_bin(Path::new(&bin), dir.path(), Some(TOKEN), &[]).await;
    let pid = server.child.id().expect("pid");
    // 60 s after start: the listening line comes within a second or so of it.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (total, each) = private_memory(pid);
    eprintln!(
        "idle `kairos serve` on SQLite, 60 s after start: {total} bytes of private memory \
         ({:.1} MB) in {} process(es): {each:?}",
        total as f64 / 1e6,
        each.len()
    );
    assert!(
        total <= IDLE_PRIVATE_MAX_BYTES,
        "an idle node holds {total} bytes of private memory (RssAnon of the server and every \
         process it started), over the {IDLE_PRIVATE_MAX_BYTES} of the goal: {each:?}"
    );
    server.terminate(Duration::from_secs(15)).await;
}
