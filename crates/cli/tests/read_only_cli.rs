//! Read-only CLI commands never create a database: run in a folder without one they exit
//! non-zero, name the folder they looked in, and leave it empty (no `kairos.db`, no
//! `secret-key`). An empty table printed from a database created on the spot once made an
//! operator conclude the dead-letter queue was empty.

mod common;

use common::kairos_cmd;

/// Every command that only reads, as run by an operator.
const READ_ONLY: &[&[&str]] = &[
    &["dlq", "list"],
    &["job", "list"],
    &["schedule", "list"],
    &["job", "show", "job_0000000000000000000000000"],
    &["schedule", "show", "sch_0000000000000000000000000"],
    &["endpoint", "list"],
    &["suppression", "list"],
    &["maintenance", "status"],
    &["recipient", "list"],
    &["slo"],
];

fn run(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = kairos_cmd()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run kairos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn read_only_commands_in_a_folder_without_a_database_fail_name_it_and_create_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shown = dir.path().display().to_string();
    for args in READ_ONLY {
        for json in [false, true] {
            let mut a = args.to_vec();
            if json {
                a.push("--json");
            }
            let (code, stdout, stderr) = run(dir.path(), &a);
            assert_eq!(code, Some(2), "{a:?}: {stdout}{stderr}");
            assert!(
                stderr.contains(&format!("no kairos database in {shown}")),
                "{a:?} names the folder: {stderr}"
            );
            assert!(stdout.is_empty(), "{a:?} printed no table: {stdout}");
            assert_eq!(entries(dir.path()), Vec::<String>::new(), "{a:?}");
        }
    }
    // --data-dir to a folder that does not exist: named, and not created.
    let missing = dir.path().join("not-here");
    let (code, _, stderr) = run(
        dir.path(),
        &[
            "dlq",
            "list",
            "--data-dir",
            missing.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(!missing.exists());

    // Once the folder holds a database, the same commands read it.
    let (code, _, stderr) = run(dir.path(), &["migrate"]);
    assert_eq!(code, Some(0), "{stderr}");
    for args in [
        &["dlq", "list"][..],
        &["job", "list"],
        &["schedule", "list"],
    ] {
        let (code, stdout, stderr) = run(dir.path(), args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(stdout.starts_with("ID"), "{args:?}: {stdout}");
    }
}
