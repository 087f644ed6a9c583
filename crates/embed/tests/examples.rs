//! The embedding examples (issue 15 §1, I15-1.3): each built example program runs to the end
//! and prints its final `ok` line. `cargo test` builds the examples beside the tests; the
//! PostgreSQL one runs in a fresh schema and is skipped loudly without a server unless
//! `KAIROS_TEST_POSTGRES=required`.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

/// The example program `name`, built by cargo next to this test's directory
/// (`target/<profile>/examples/`); built now if `cargo test` was limited to this test.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "kairos-embed", "--example", name])
            .status()
            .expect("running cargo build");
        assert!(status.success(), "building example {name}");
    }
    assert!(path.exists(), "{} was not built", path.display());
    path
}

fn last_line(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().last().unwrap_or_default().to_string()
}

#[test]
fn i15_1_3_the_sqlite_example_runs_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(example("embed_sqlite"))
        .arg(dir.path().join("app.db"))
        .output()
        .expect("running the example");
    let line = last_line(&out);
    assert_eq!(
        line,
        "embed_sqlite: ok: order 0 refused (payload: order_id must be positive); jobs ran for orders [1, 2]; the committed job is succeeded; the rolled-back job does not exist"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_3_the_postgres_example_runs_its_jobs() {
    let Some(guard) = common::pg_schema().await else {
        return;
    };
    let bin = example("embed_postgres");
    let out = tokio::process::Command::new(bin)
        .env("DATABASE_URL", common::database_url())
        .env("EMBED_SCHEMA", &guard.schema)
        .output()
        .await
        .expect("running the example");
    let line = last_line(&out);
    assert_eq!(
        line,
        format!(
            "embed_postgres: ok: jobs ran for orders [1, 2] in schema {}; the committed job is succeeded; the rolled-back job does not exist",
            guard.schema
        )
    );
}
