//! `kairos recipient delete` and `kairos job cancel-matching|retry-matching` against the real
//! binary on a SQLite data directory: the erasure reaches the database and the outbox, and the
//! bulk actions report the jobs acted on.

mod common;

use common::kairos_cmd;
use serde_json::Value;
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = kairos_cmd()
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
        .output()
        .expect("run kairos");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn recipient_delete_erases_and_keeps_the_suppression_as_a_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (ok, _, err) = run(
        d,
        &[
            "recipient",
            "put",
            "usr_1",
            "--email",
            "Erin@Example.com",
            "--attributes",
            r#"{"name": "Erin"}"#,
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(d, &["suppression", "add", "erin@example.com"]);
    assert!(ok, "{err}");
    // A message the file transport wrote to the recipient, and one to someone else.
    let outbox = d.join("outbox");
    std::fs::create_dir_all(&outbox).expect("outbox");
    std::fs::write(
        outbox.join("job_a.eml"),
        "To: erin@example.com\r\n\r\nHi Erin",
    )
    .expect("write");
    std::fs::write(
        outbox.join("job_b.eml"),
        "To: otto@example.com\r\n\r\nHi Otto",
    )
    .expect("write");

    let (ok, out, err) = run(d, &["recipient", "delete", "usr_1", "--json"]);
    assert!(ok, "{err}");
    let e: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(e["suppressions_hashed"], 1, "{out}");
    assert_eq!(e["outbox_files_deleted"], 1, "{out}");
    assert!(!outbox.join("job_a.eml").exists());
    assert!(outbox.join("job_b.eml").exists());
    let (ok, _, err) = run(d, &["recipient", "delete", "usr_1"]);
    assert!(!ok, "a second delete finds nothing");
    assert!(err.contains("usr_1"), "{err}");

    let (ok, out, err) = run(d, &["suppression", "list", "--json"]);
    assert!(ok, "{err}");
    let list: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(list[0]["email"], Value::Null, "{out}");
    assert_eq!(list[0]["erased"], true);
    assert!(!out.to_lowercase().contains("erin"), "{out}");
    let (ok, _, err) = run(
        d,
        &[
            "suppression",
            "remove",
            "ERIN@example.com",
            "--reason",
            "asked",
        ],
    );
    assert!(ok, "the address still finds its hashed entry: {err}");
}

#[test]
fn job_cancel_matching_and_retry_matching_report_the_jobs_acted_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for _ in 0..3 {
        let (ok, _, err) = run(
            d,
            &[
                "job",
                "enqueue",
                "--url",
                "http://127.0.0.1:9/hook",
                "--secret",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "--run-at",
                "2099-01-01T00:00:00Z",
            ],
        );
        assert!(ok, "{err}");
    }
    let (ok, out, err) = run(
        d,
        &[
            "job",
            "cancel-matching",
            "--kind",
            "webhook",
            "--reason",
            "storm",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "cancelled 3 job(s)");
    let (ok, out, _) = run(
        d,
        &["job", "retry-matching", "--state", "cancelled", "--json"],
    );
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&out).expect("json")["matched"],
        3
    );
    let (ok, _, err) = run(d, &["job", "cancel-matching", "--state", "sleeping"]);
    assert!(!ok);
    assert!(err.contains("state"), "{err}");
    // Issue 33: no filter acts on nothing unless --all says every job.
    for cmd in ["cancel-matching", "retry-matching"] {
        let (ok, _, err) = run(d, &["job", cmd]);
        assert!(!ok, "{cmd} without a filter");
        assert!(err.contains("all"), "{err}");
    }
    let (ok, out, err) = run(d, &["job", "cancel-matching", "--all"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "cancelled 3 job(s)");
}
