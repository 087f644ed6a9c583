//! `kairos bench --rate R --duration D`: a steady-rate run of the real binary. With `--json`
//! it prints one line per second (`t`, `enqueued`, `completed`, `backlog`, claim and lateness
//! percentiles, `wal_bytes` on SQLite or `dead_tuples` on PostgreSQL) and, last, the summary
//! line with the burst bench's fields and the run's; `--plot` writes an SVG of the samples.
//! On PostgreSQL `--hold-snapshots` holds REPEATABLE READ snapshots in sessions named
//! `kairos-bench-hold` for the whole run; on SQLite it is refused.
//! The PostgreSQL tests skip loudly when it is not reachable, unless
//! `KAIROS_TEST_POSTGRES=required`.

mod common;

use common::kairos_cmd;
use kairos_testkit::pg::{database_url, reachable};
use serde_json::Value;
use sqlx::Connection;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const RATE: u64 = 200;
const SECS: u64 = 3;

/// The arguments of a 3-second run at 200 jobs/s with JSON lines and a plot at `svg`.
fn rate_args(svg: &Path) -> Vec<String> {
    [
        "bench",
        "--rate",
        &RATE.to_string(),
        "--duration",
        &format!("{SECS}s"),
        "--concurrency",
        "50",
        "--json",
        "--plot",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([svg.display().to_string()])
    .collect()
}

/// The stdout lines of a run as JSON (every line must be JSON).
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// Run `kairos bench` with the 3-second run's arguments (plot at `svg`) and `extra`; it must
/// succeed. Returns its stdout and stderr.
fn run_ok(svg: &Path, extra: &[&str]) -> (String, String) {
    let out = kairos_cmd()
        .args(rate_args(svg))
        .args(extra)
        .output()
        .expect("run kairos bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "bench failed: {stderr}\n{stdout}");
    (stdout, stderr)
}

/// What every steady run must show: per-second lines with their fields that add up to the
/// run (about R×D enqueued, every job completed, nothing left in the backlog), the summary
/// last with `process_per_sec`, and an SVG with polylines.
fn check_run(lines: &[Value], cleanup_field: &str, database: &str, svg: &Path) {
    let (summary, seconds) = lines.split_last().expect("at least a summary line");
    assert!(
        seconds.len() >= SECS as usize,
        "{} per-second lines for a {SECS} s run: {lines:?}",
        seconds.len()
    );
    let other = if cleanup_field == "wal_bytes" {
        "dead_tuples"
    } else {
        "wal_bytes"
    };
    let mut last_t = 0;
    for s in seconds {
        for f in [
            "t",
            "enqueued",
            "completed",
            "backlog",
            "claim_p50_ms",
            "claim_p99_ms",
            "lateness_p99_ms",
            cleanup_field,
        ] {
            assert!(s.get(f).is_some(), "no {f} in {s}");
        }
        assert!(s.get(other).is_none(), "{other} in a {database} line: {s}");
        assert!(
            s.get("process_per_sec").is_none(),
            "a summary before the end: {s}"
        );
        let t = s["t"].as_u64().expect("t");
        assert!(t > last_t, "t goes forward: {lines:?}");
        last_t = t;
    }
    let sum = |f: &str| -> u64 { seconds.iter().map(|s| s[f].as_u64().unwrap_or(0)).sum() };
    let want = RATE * SECS;
    assert_eq!(sum("enqueued"), want, "enqueued over the lines: {lines:?}");
    assert_eq!(
        sum("completed"),
        want,
        "completed over the lines: {lines:?}"
    );
    // Spread over the run, not one burst: jobs enqueued in at least D − 1 of the seconds,
    // none with more than 60 % of them (a loaded machine lets the producer fall behind and
    // catch up, so no second is held to exactly R).
    let busy = seconds
        .iter()
        .filter(|s| s["enqueued"].as_u64().unwrap_or(0) > 0)
        .count();
    assert!(
        busy as u64 >= SECS - 1,
        "enqueued in {busy} seconds: {lines:?}"
    );
    let most = seconds
        .iter()
        .map(|s| s["enqueued"].as_u64().unwrap_or(0))
        .max()
        .unwrap_or(0);
    assert!(
        most * 10 <= want * 6,
        "{most} jobs in one second: {lines:?}"
    );
    assert_eq!(
        seconds.last().expect("a line")["backlog"],
        0,
        "backlog at the end: {lines:?}"
    );
    // A second in which jobs started has their lateness; a busy one had claims.
    assert!(
        seconds.iter().any(|s| s["lateness_p99_ms"].is_number()),
        "{lines:?}"
    );
    assert!(
        seconds.iter().any(|s| s["claim_p99_ms"].is_number()),
        "{lines:?}"
    );
    assert!(
        seconds.iter().any(|s| s[cleanup_field].is_number()),
        "{cleanup_field} never read: {lines:?}"
    );

    for f in [
        "process_per_sec",
        "enqueue_per_sec",
        "p50_lateness_ms",
        "p99_lateness_ms",
        "started_early",
        "database",
        "concurrency",
        "jobs",
        "backlog",
        "enqueued",
        "completed",
        "max_backlog",
        "lateness_p99_ms",
        "windows_below_99pct",
    ] {
        assert!(summary.get(f).is_some(), "no {f} in the summary {summary}");
    }
    assert_eq!(summary["database"], database, "{summary}");
    assert_eq!(summary["enqueued"], want, "{summary}");
    assert_eq!(summary["completed"], want, "{summary}");
    assert_eq!(summary["jobs"], want, "{summary}");
    assert!(
        summary["process_per_sec"].as_f64().unwrap_or(0.0) > 0.0,
        "{summary}"
    );
    assert!(
        summary["max_backlog"].as_i64().unwrap_or(-1) >= 0,
        "{summary}"
    );
    // 3 s has no whole window after the first 30 s.
    assert_eq!(summary["windows_below_99pct"], 0, "{summary}");

    let svg = std::fs::read_to_string(svg).expect("the plot was written");
    let body = svg.trim();
    assert!(body.starts_with("<?xml"), "{svg}");
    assert!(body.contains("<svg") && body.ends_with("</svg>"), "{svg}");
    assert_eq!(
        body.matches('<').count(),
        body.matches('>').count(),
        "tags are closed: {svg}"
    );
    assert!(body.contains("<polyline"), "{svg}");
    assert!(body.contains("jobs per second"), "{svg}");
}

#[test]
fn bench_rate_json_lines_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("run.svg");
    let (stdout, _) = run_ok(&svg, &[]);
    check_run(&json_lines(&stdout), "wal_bytes", "sqlite", &svg);
}

/// `--warmup W`: the run goes at the rate for W before the measured D; the lines cover D only
/// (`t` from its start), the summary counts the measured run and says what the warm-up
/// enqueued and completed, and the two add up to every job of the run.
#[test]
fn bench_rate_warmup_runs_before_the_measured_lines_and_counts_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("run.svg");
    let (stdout, stderr) = run_ok(&svg, &["--warmup", "2s"]);
    assert!(stderr.contains("warming up: 2s"), "{stderr}");
    let lines = json_lines(&stdout);
    let (summary, seconds) = lines.split_last().expect("a summary line");
    // 3 measured seconds (and a part-second while the last jobs finish), not 5.
    assert!(
        (SECS as usize..=SECS as usize + 1).contains(&seconds.len()),
        "{} lines for a 3 s run after a 2 s warm-up: {lines:?}",
        seconds.len()
    );
    assert_eq!(
        seconds[0]["t"], 1,
        "t counts from the measured start: {lines:?}"
    );
    let sum = |f: &str| -> u64 { seconds.iter().map(|s| s[f].as_u64().unwrap_or(0)).sum() };
    let all = RATE * (SECS + 2);
    let warm_enq = summary["warmup_enqueued"]
        .as_u64()
        .expect("warmup_enqueued");
    let warm_done = summary["warmup_completed"]
        .as_u64()
        .expect("warmup_completed");
    // About 2 s of jobs (a few may still be in flight at the boundary).
    assert!(
        (RATE..=2 * RATE).contains(&warm_enq),
        "warm-up enqueued {warm_enq}: {summary}"
    );
    assert!(warm_done > 0 && warm_done <= warm_enq, "{summary}");
    assert_eq!(
        summary["enqueued"].as_u64(),
        Some(all - warm_enq),
        "{summary}"
    );
    assert_eq!(
        summary["completed"].as_u64(),
        Some(all - warm_done),
        "{summary}"
    );
    assert_eq!(summary["jobs"].as_u64(), Some(all - warm_enq), "{summary}");
    assert_eq!(sum("enqueued"), all - warm_enq, "{lines:?}");
    assert_eq!(sum("completed"), all - warm_done, "{lines:?}");
    assert_eq!(summary["warmup_secs"], 2.0, "{summary}");
    assert_eq!(seconds.last().expect("a line")["backlog"], 0, "{lines:?}");
    let plot = std::fs::read_to_string(&svg).expect("the plot");
    assert!(plot.contains("after a 2s warm-up"), "{plot}");
}

/// `--enqueue-batch N`: the same run, its jobs enqueued through the batch enqueue in calls of
/// at most N (fewer calls than jobs), the summary saying so.
#[test]
fn bench_rate_enqueue_batch_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("run.svg");
    let (stdout, _) = run_ok(&svg, &["--enqueue-batch", "50"]);
    let lines = json_lines(&stdout);
    check_run(&lines, "wal_bytes", "sqlite", &svg);
    let summary = lines.last().expect("summary");
    assert_eq!(summary["enqueue_batch"], 50, "{summary}");
    let calls = summary["enqueue_calls"].as_u64().expect("enqueue_calls");
    let jobs = RATE * SECS;
    assert!(
        calls >= jobs / 50 && calls < jobs,
        "{calls} calls for {jobs} jobs: {summary}"
    );
}

/// `--keep` reports what it kept and the job tables' size on every line; under a minute it
/// is refused before anything runs (the pruner keeps finished jobs at least a minute).
#[test]
fn bench_rate_keep_reports_the_job_tables_and_refuses_under_a_minute() {
    let out = kairos_cmd()
        .args([
            "bench",
            "--rate",
            "200",
            "--duration",
            "2s",
            "--keep",
            "1m",
            // Not the default warm-up of a minute (the kept window filling).
            "--warmup",
            "0s",
            "--json",
        ])
        .output()
        .expect("run kairos bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&stdout);
    let summary = lines.last().expect("summary");
    assert_eq!(summary["keep_secs"], 60, "{summary}");
    assert_eq!(summary["warmup_secs"], 0.0, "{summary}");
    assert!(
        summary["max_job_table_bytes"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    assert!(
        lines[0]["job_table_bytes"].as_u64().is_some(),
        "{}",
        lines[0]
    );
    let out = kairos_cmd()
        .args([
            "bench",
            "--rate",
            "200",
            "--duration",
            "2s",
            "--keep",
            "30s",
        ])
        .output()
        .expect("run kairos bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--keep"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn bench_rate_hold_snapshots_refused_on_sqlite() {
    let out = kairos_cmd()
        .args([
            "bench",
            "--rate",
            "200",
            "--duration",
            "3s",
            "--hold-snapshots",
            "1",
        ])
        .output()
        .expect("run kairos bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--hold-snapshots"), "{stderr}");
    assert!(stderr.contains("PostgreSQL"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn bench_rate_flags_need_each_other() {
    for (args, flag) in [
        (&["bench", "--rate", "200"][..], "--duration"),
        (&["bench", "--duration", "3s"][..], "--duration"),
        (&["bench", "--rate", "0", "--duration", "3s"][..], "--rate"),
        (&["bench", "--plot", "x.svg"][..], "--plot"),
        (&["bench", "--keep", "5m"][..], "--keep"),
        (&["bench", "--warmup", "5m"][..], "--warmup"),
        (&["bench", "--enqueue-batch", "10"][..], "--enqueue-batch"),
        (
            &[
                "bench",
                "--rate",
                "10",
                "--duration",
                "1s",
                "--enqueue-batch",
                "0",
            ][..],
            "--enqueue-batch",
        ),
        (
            &[
                "bench",
                "--rate",
                "10",
                "--duration",
                "1s",
                "--enqueue-batch",
                "1001",
            ][..],
            "--enqueue-batch",
        ),
        (
            &["bench", "--rate", "10", "--duration", "1s", "--webhook"][..],
            "--webhook",
        ),
        // Instants this far ahead overflow the clock: refused, not a panic.
        (
            &[
                "bench",
                "--rate",
                "10",
                "--duration",
                "18446744073709551615s",
            ][..],
            "--duration",
        ),
        (
            &[
                "bench",
                "--rate",
                "10",
                "--duration",
                "1s",
                "--warmup",
                "500000000000y",
            ][..],
            "--warmup",
        ),
        (
            &["bench", "--rate", "10", "--duration", "1s", "--keep", "30d"][..],
            "--warmup",
        ),
    ] {
        let out = kairos_cmd().args(args).output().expect("run kairos bench");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

/// On PostgreSQL with one snapshot held (1 s at a time, again and again): the same lines with
/// `dead_tuples`, and while the run goes on `pg_stat_activity` shows the holding session
/// (application_name `kairos-bench-hold`) with its `backend_xmin` set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_rate_json_lines_postgres_with_a_held_snapshot() {
    let url = database_url();
    if !reachable(&url, "The PostgreSQL steady-rate bench test").await {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("run.svg");
    let mut cmd = tokio::process::Command::from(kairos_cmd());
    cmd.args(rate_args(&svg))
        .args([
            "--database-url",
            url.as_str(),
            "--hold-snapshots",
            "1",
            "--hold-secs",
            "1",
            "--hold-stagger",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("start kairos bench");

    let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
    let started = Instant::now();
    let mut seen = false;
    while started.elapsed() < Duration::from_secs(60) {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'kairos-bench-hold' AND backend_xmin IS NOT NULL",
        )
        .fetch_one(&mut conn)
        .await
        .expect("pg_stat_activity");
        if n > 0 {
            seen = true;
            break;
        }
        if child.try_wait().expect("bench status").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the bench ends")
        .expect("bench output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        seen,
        "no kairos-bench-hold session with a backend_xmin during the run"
    );
    let lines = json_lines(&stdout);
    check_run(&lines, "dead_tuples", "postgres", &svg);
    let summary = lines.last().expect("summary");
    assert_eq!(summary["hold_snapshots"], 1, "{summary}");
    assert!(
        summary["snapshots_held"].as_u64().unwrap_or(0) >= 2,
        "a 1 s hold starts again within a 3 s run: {summary}"
    );
    conn.close().await.expect("close");
}
