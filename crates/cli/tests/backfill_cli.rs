//! `kairos schedule backfill` against the real binary (issue 34): a range of 2,500 firings
//! is split into calls of at most 1,000, the totals are printed (`--json` too), a second run
//! fires nothing, and a bad range is refused naming the field.

mod common;

use common::{SECRET, kairos_cmd};
use serde_json::Value;

fn run(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = kairos_cmd()
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
        .output()
        .expect("run kairos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn schedule_backfill_splits_a_long_range_and_a_second_run_fires_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(
        dir.path(),
        &[
            "--json",
            "schedule",
            "add",
            "--name",
            "minutely",
            "--cron",
            "* * * * *",
            "--url",
            "http://127.0.0.1:9/h",
            "--secret",
            SECRET,
            "--overlap",
            "skip",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let created: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(created["overlap"], "skip", "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    // 2026-01-01T00:00 to 2026-01-02T17:39, both included: 2,500 minutes, three calls.
    let range = [
        "--from",
        "2026-01-01T00:00:00Z",
        "--to",
        "2026-01-02T17:39:00Z",
    ];
    let mut args = vec!["--json", "schedule", "backfill", &id];
    args.extend(range);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (v["fired"].as_u64(), v["skipped"].as_u64()),
        (Some(2500), Some(0)),
        "{v}"
    );
    // Again, as text: every period ran already.
    let mut args = vec!["schedule", "backfill", &id];
    args.extend(range);
    let (code, out, err) = run(dir.path(), &args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("fired 0, skipped 2500") && out.contains("3 call(s)"),
        "{out}"
    );
    // A reversed range, a range reaching into the future: usage errors naming the field.
    let (code, _, err) = run(
        dir.path(),
        &[
            "schedule",
            "backfill",
            &id,
            "--from",
            "2026-01-02T00:00:00Z",
            "--to",
            "2026-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("error: from: "), "{err}");
    let (code, _, err) = run(
        dir.path(),
        &[
            "schedule",
            "backfill",
            &id,
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "9999-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("error: to: "), "{err}");
}
