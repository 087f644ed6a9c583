//! Docs that run as written (issue 35): every shell block of the README and of the tutorials
//! runs, in order, in one `bash` session per document, against a live `kairos serve` on a
//! fresh data directory, and a `console` block's output is checked against what the doc shows.
//! Each document runs twice: on SQLite (one node), and on two PostgreSQL nodes sharing one
//! fresh schema behind a round-robin proxy (`docs_run/stack.rs`), so a doc holds nothing to
//! adapt between the two but ports and paths. Without PostgreSQL the second run skips
//! loudly, unless `KAIROS_TEST_POSTGRES=required`.
//!
//! The convention, for writers (the README's "Documentation" section says it too):
//! - ```` ```sh ```` blocks run as they are; ```` ```console ```` blocks hold `$ command`
//!   lines, each followed by its output (`…` stands for any text, a line of `…` for any lines);
//! - ```` ```sh norun ```` marks a block that is shown, not run (a build, a deployment, a
//!   command that serves forever): each document's count of them is pinned below;
//! - the session runs in the (first) server's data directory (so `cat api-token` reads its
//!   token), with `KAIROS_URL` (the server's base URL, or the proxy's, a shell variable, not
//!   exported, as the docs set it), `KAIROS_API_TOKEN`, `KAIROS_DATA_DIR` (so the
//!   `kairos` commands work on the server's database; on PostgreSQL `KAIROS_DATABASE_URL`,
//!   `KAIROS_DATABASE_SCHEMA` and `KAIROS_SECRET_KEY` too), `APP_URL` (a local HTTP receiver
//!   standing for the reader's application) and `FEED` (an RSS feed it serves), and `kairos`
//!   on the `PATH`; the server and the shell run with `KAIROS_ALLOW_PRIVATE_TARGETS=1`, since
//!   the receiver is on 127.0.0.1;
//! - a command that exits non-zero fails the test, and so does an HTTP error answer: `curl`
//!   runs with `--fail-with-body`.
//!
//! Docs may use `curl` and `jq` (`.ci/run` installs `jq`); without them the tests skip loudly,
//! unless `CI=true`.

#[path = "docs_run/blocks.rs"]
mod blocks;
mod common;
#[path = "docs_run/stack.rs"]
mod stack;

use kairos_testkit::{Reply, TestReceiver};
use stack::{Db, Stack};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The longest one document's blocks may take.
const DOC_TIMEOUT: Duration = Duration::from_secs(240);

/// A minimal RSS feed: the receiver answers it on every path, so a digest in a doc built from
/// `$APP_URL/…` feeds succeeds without leaving the machine.
const FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Local news</title><link>http://127.0.0.1/</link><description>d</description><item><title>kairos docs run</title><link>http://127.0.0.1/a</link><description>Every shell block of the docs runs in a test.</description><pubDate>Sat, 05 Dec 2026 06:00:00 GMT</pubDate></item></channel></rss>"#;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What running one document did; its servers still run.
struct DocRun {
    stack: Stack,
    receiver: TestReceiver,
}

impl DocRun {
    /// `GET {base}{path}` with the server's token: the status and the JSON body.
    async fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let res = reqwest::Client::new()
            .get(format!("{}{path}", self.stack.base))
            .bearer_auth(&self.stack.token)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// Requests the receiver got on `path`, after waiting (at most 30 s) for at least `n`.
    async fn received_on(&self, path: &str, n: usize) -> Vec<kairos_testkit::Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let got: Vec<_> = self
                .receiver
                .received()
                .into_iter()
                .filter(|r| r.path == path)
                .collect();
            if got.len() >= n || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stop the servers; each must exit cleanly. On PostgreSQL, both nodes must have
    /// served some of the document's requests (the proxy alternates).
    async fn finish(self) {
        if let Some(p) = &self.stack.proxy {
            let per_node: Vec<usize> = p.forwarded.iter().map(|n| n.load(Relaxed)).collect();
            assert!(per_node.iter().all(|n| *n > 0), "{per_node:?}");
        }
        self.stack.finish().await;
    }
}

/// Whether the tools the docs use (`curl`, `jq`) are installed; without them the tests skip
/// loudly, unless `CI=true` (`.ci/run` installs them), where they fail.
fn tools_present() -> bool {
    let missing: Vec<&str> = ["curl", "jq"]
        .into_iter()
        .filter(|t| {
            !std::process::Command::new(t)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!("{missing:?} not installed: the docs' shell blocks did not run");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED (loudly): {msg}");
    false
}

/// Run the document `doc` (a path from the repository's root) on `db`, which must have
/// `norun` blocks not run and at least one block that runs; `None` when the tools or
/// PostgreSQL are missing.
async fn run_doc(doc: &str, norun: usize, db: Db) -> Option<DocRun> {
    if !tools_present() {
        return None;
    }
    kairos_testkit::init_crypto();
    let text = std::fs::read_to_string(repo_root().join(doc)).expect("read the doc");
    let all = blocks::blocks(&text);
    let counted = all.iter().filter(|b| b.norun).count();
    assert_eq!(
        counted, norun,
        "{doc}: {counted} blocks are marked norun, the test expects {norun}; a block that \
         cannot run is marked deliberately"
    );
    assert!(all.iter().any(|b| !b.norun), "{doc}: no shell block runs");
    let (script, steps) = blocks::script(doc, &all);

    let out_dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    receiver.set_default(
        Reply::ok()
            .with_header("content-type", "application/rss+xml")
            .with_body(FEED),
    );
    let stack = Stack::start(db, doc).await?;
    let bin_dir = Path::new(common::BIN).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script_file = out_dir.path().join("doc.sh");
    // `KAIROS_URL` is a shell variable for the docs' `curl` lines, not exported: a reader who
    // sets it as the docs do (`KAIROS_URL=${KAIROS_URL:-…}`) runs the `kairos` commands on the
    // node's database, not through the server (`kairos --server`, `KAIROS_URL` exported).
    let script = format!("export -n KAIROS_URL\n{script}");
    std::fs::write(&script_file, &script).expect("write the script");

    let mut cmd = tokio::process::Command::new("bash");
    for (k, _) in std::env::vars() {
        if k.starts_with("KAIROS_") {
            cmd.env_remove(&k);
        }
    }
    cmd.arg("--noprofile")
        .arg("--norc")
        .arg(&script_file)
        .current_dir(stack.data_dir.path())
        .env("PATH", path)
        .env("KAIROS_URL", &stack.base)
        .env("KAIROS_API_TOKEN", &stack.token)
        .env("KAIROS_DATA_DIR", stack.data_dir.path())
        .env("APP_URL", receiver.url(""))
        .env("FEED", receiver.url("/feed.xml"))
        .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
        .env("DOCS_OUT", out_dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in &stack.env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("run bash");
    let out = match tokio::time::timeout(DOC_TIMEOUT, child.wait_with_output()).await {
        Ok(out) => out.expect("bash"),
        Err(_) => panic!("{doc}: its blocks did not finish within {DOC_TIMEOUT:?}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{doc} ({db:?}): a block failed ({})\n--- stderr ---\n{stderr}\n--- stdout ---\n{stdout}\n--- servers ---\n{}",
        out.status,
        stack.stderr()
    );
    for (i, step) in steps.iter().enumerate() {
        let actual =
            std::fs::read_to_string(out_dir.path().join(i.to_string())).unwrap_or_default();
        assert!(
            blocks::output_matches(&step.expected, &actual),
            "{doc}:{}: `{}` printed\n{actual}\nbut the doc shows\n{}",
            step.line,
            step.command,
            step.expected.join("\n")
        );
    }
    assert!(
        stderr.contains("docs_run: every block ran"),
        "{doc}: {stderr}"
    );
    Some(DocRun { stack, receiver })
}

async fn readme(db: Db) {
    let Some(run) = run_doc("README.md", 2, db).await else {
        return;
    };
    let (status, page) = run.get("/v1/schedules").await;
    assert_eq!(status, 200);
    assert!(
        page["data"]
            .as_array()
            .is_some_and(|d| d.iter().any(|s| s["name"] == "weekday-report")),
        "{page}"
    );
    run.finish().await;
}

#[tokio::test]
async fn readme_shell_blocks_run_as_written_against_a_live_serve() {
    readme(Db::Sqlite).await;
}

#[tokio::test]
async fn readme_shell_blocks_run_as_written_on_two_postgres_nodes_i35_10() {
    readme(Db::Postgres).await;
}

async fn http_jobs(db: Db) {
    let Some(run) = run_doc("docs/http-jobs.md", 0, db).await else {
        return;
    };
    // The API's job and the CLI's job both call the application.
    let calls = run.received_on("/api/rebuild", 2).await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls.iter().all(|c| c.method == "POST"));
    run.finish().await;
}

#[tokio::test]
async fn http_jobs_doc_runs_as_written_and_its_jobs_call_the_application() {
    http_jobs(Db::Sqlite).await;
}

#[tokio::test]
async fn http_jobs_doc_runs_as_written_on_two_postgres_nodes_i35_10() {
    http_jobs(Db::Postgres).await;
}

async fn daily_digest(db: Db) {
    let Some(run) = run_doc("docs/daily-digest.md", 1, db).await else {
        return;
    };
    let (status, artifact) = run.get("/v1/artifacts/ai-news/2026-10-20").await;
    assert_eq!(status, 200, "{artifact}");
    assert!(!run.received_on("/feed.xml", 1).await.is_empty());
    // The fired schedule built today's digest and announced it to the application.
    let events = run.received_on("/hooks/kairos", 1).await;
    assert!(
        events
            .iter()
            .any(|e| e.body_text().contains("digest.created")),
        "{events:?}"
    );
    run.finish().await;
}

#[tokio::test]
async fn daily_digest_doc_runs_as_written_builds_the_digest_and_sends_digest_created() {
    daily_digest(Db::Sqlite).await;
}

#[tokio::test]
async fn daily_digest_doc_runs_as_written_on_two_postgres_nodes_i35_10() {
    daily_digest(Db::Postgres).await;
}

async fn weekly_summary(db: Db) {
    let Some(run) = run_doc("docs/weekly-summary.md", 0, db).await else {
        return;
    };
    // The tutorial's later PUTs give every field again: Aki keeps her zone and name.
    let (status, aki) = run.get("/v1/recipients/usr_42").await;
    assert_eq!(status, 200, "{aki}");
    assert_eq!(aki["timezone"], "Asia/Tokyo", "{aki}");
    assert_eq!(aki["attributes"]["name"], "Aki", "{aki}");
    let (_, sub) = run.get("/v1/subscriptions/usr_42/weekly").await;
    assert_eq!(sub["target"], "team-7", "{sub}");
    let (_, mgr) = run.get("/v1/subscriptions/mgr_7/weekly").await;
    assert_eq!(
        mgr["targets"],
        serde_json::json!(["usr_42", "usr_43"]),
        "{mgr}"
    );
    run.finish().await;
}

#[tokio::test]
async fn weekly_summary_doc_runs_as_written_and_its_puts_keep_every_field() {
    weekly_summary(Db::Sqlite).await;
}

#[tokio::test]
async fn weekly_summary_doc_runs_as_written_on_two_postgres_nodes_i35_10() {
    weekly_summary(Db::Postgres).await;
}

async fn scheduling(db: Db) {
    let Some(run) = run_doc("docs/scheduling.md", 0, db).await else {
        return;
    };
    let (_, page) = run.get("/v1/schedules").await;
    let names: Vec<&str> = page["data"]
        .as_array()
        .map(|d| d.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.contains(&"reminder") && names.contains(&"standup-reminder"),
        "{names:?}"
    );
    run.finish().await;
}

#[tokio::test]
async fn scheduling_doc_runs_as_written_and_cron_next_prints_what_it_shows() {
    scheduling(Db::Sqlite).await;
}

#[tokio::test]
async fn scheduling_doc_runs_as_written_on_two_postgres_nodes_i35_10() {
    scheduling(Db::Postgres).await;
}
