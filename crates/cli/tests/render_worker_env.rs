//! The template worker runs with its allocator settings (`render_worker::ALLOCATOR_ENV`): it
//! starts itself again with them, as the same process, even when started with an empty
//! environment, as the render pool starts it.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
fn the_template_worker_runs_with_its_allocator_settings() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kairos"))
        .arg("__render-worker")
        .env_clear()
        .env("KAIROS_TEMPLATE_MEMORY_MB", "256")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the worker");
    let pid = child.id();
    // The worker replaces itself at once; wait for it, boundedly.
    let mut env = Vec::new();
    for _ in 0..200 {
        env = environ(pid);
        if env.iter().any(|v| v.starts_with("MIMALLOC_")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        env.contains(&"MIMALLOC_DISALLOW_ARENA_ALLOC=1".to_string()),
        "{env:?}"
    );
    assert!(
        env.contains(&"MIMALLOC_PURGE_DELAY=0".to_string()),
        "{env:?}"
    );
    assert!(
        env.contains(&"KAIROS_TEMPLATE_MEMORY_MB=256".to_string()),
        "its own settings are kept: {env:?}"
    );
    // Still the same process, serving: it answers a request, then exits when stdin closes.
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "not json").expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("worker exits");
    assert!(
        !out.stdout.is_empty(),
        "the worker answered on the original pipe"
    );
}
