//! `kairos bench --concurrency-keys N --key-max M`: every job of the bench carries
//! `concurrency: {"key": "k{n mod N}", "max": M}`, so the lead can measure what keys cost
//! (issue 34: 1,000 keys of max 1 against no keys). A debug smoke run only: the numbers are
//! measured on a release build (docs/benchmarks.md).

mod common;

use common::kairos_cmd;
use serde_json::Value;

/// Run `kairos <args>`, require success, and return its last line as JSON.
fn bench(args: &[&str]) -> Value {
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

#[test]
fn bench_concurrency_keys_gives_every_job_a_key_and_reports_the_waits() {
    // 3 keys of max 1 and 10 handler slots: at most 3 jobs run at once, so claims put jobs
    // back for their key (a run without keys puts none back).
    let r = bench(&[
        "bench",
        "--jobs",
        "60",
        "--concurrency",
        "10",
        "--lateness-jobs",
        "10",
        "--concurrency-keys",
        "3",
        "--key-max",
        "1",
    ]);
    assert_eq!(r["jobs"], 60, "{r}");
    assert_eq!(r["concurrency_keys"], 3, "{r}");
    assert_eq!(r["key_max"], 1, "{r}");
    // Claims skip a key at its max instead of claiming and putting back: on one node the
    // put-backs are rare, but the field is always there.
    assert!(r["key_waits"].as_i64().is_some_and(|w| w >= 0), "{r}");
    assert!(r["process_per_sec"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
}

#[test]
fn bench_without_keys_reports_no_key_fields() {
    let r = bench(&[
        "bench",
        "--jobs",
        "20",
        "--concurrency",
        "10",
        "--lateness-jobs",
        "10",
    ]);
    assert!(r.get("concurrency_keys").is_none(), "{r}");
    assert!(r.get("key_waits").is_none(), "{r}");
}

#[test]
fn bench_key_flags_are_checked_before_anything_runs() {
    for (args, flag) in [
        (&["bench", "--key-max", "2"][..], "--key-max"),
        (
            &["bench", "--concurrency-keys", "0"][..],
            "--concurrency-keys",
        ),
        (
            &["bench", "--concurrency-keys", "5", "--key-max", "0"][..],
            "--key-max",
        ),
        (
            &[
                "bench",
                "--concurrency-keys",
                "5",
                "--rate",
                "10",
                "--duration",
                "1s",
            ][..],
            "--concurrency-keys",
        ),
    ] {
        let out = kairos_cmd().args(args).output().expect("run kairos bench");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing ran");
    }
}
