//! `kairos migrate` against the real binary, on a fresh SQLite file and on one the former
//! migration runner migrated: every migration is listed with when it was applied.

mod common;

use common::run_in as run;

#[test]
fn migrate_list_shows_every_migration_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(dir.path(), &["migrate", "--list"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("is up to date"), "{out}");
    assert!(out.contains("VERSION") && out.contains("APPLIED"), "{out}");
    for m in kairos_store::sql::migrate::MIGRATIONS {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("{:04}", m.version)) && l.contains(m.name))
            .unwrap_or_else(|| panic!("{} {} listed: {out}", m.version, m.name));
        assert!(!line.contains("pending"), "{line}");
    }
    // Plain `migrate` says only that the database is current.
    let (code, out, err) = run(dir.path(), &["migrate"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("is up to date") && !out.contains("VERSION"),
        "{out}"
    );
}
