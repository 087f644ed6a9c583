//! The template render pool (issue 12, finding 3) against stand-in workers written in `sh`,
//! so each way a worker can end is produced exactly: no answer (the time limit), an abort
//! after naming a template (the memory limit), an exit before serving (unavailable). The
//! real worker (`kairos __render-worker`) is tested in crates/cli/tests/template_sandbox.rs.

use kairos_channels::email::template::{Pool, PoolConfig, RenderError};
use serde_json::json;
use std::time::Duration;

/// A worker that answers `["ok"]`, sleeps on a request containing `slow`, and on one
/// containing `die` names the `html` template and aborts itself. The pool clears the
/// environment (no PATH): external programs are named by path. It also prints the limits
/// it was given, once, as its first answer's text, so the test can read them.
const STAND_IN: &str = r#"
while read -r line; do
  case "$line" in
    *slow*) /bin/sleep 30 ;;
    *die*) echo '{"reply":"start","field":"html"}'; kill -ABRT $$ ;;
    *env*) echo "{\"reply\":\"done\",\"result\":{\"Ok\":[\"$KAIROS_TEMPLATE_MEMORY_MB $KAIROS_TEMPLATE_CPU_SECS ${HOME:-none}\"]}}" ;;
    *) echo '{"reply":"done","result":{"Ok":["ok"]}}' ;;
  esac
done
"#;

fn pool(script: &str, timeout: Duration) -> Pool {
    Pool::new(PoolConfig {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        workers: 1,
        timeout,
        memory_mb: 64,
    })
}

fn one(source: &str) -> Vec<(String, String)> {
    vec![("subject".to_string(), source.to_string())]
}

fn template_error(
    r: Result<Vec<String>, RenderError>,
) -> kairos_channels::email::template::TemplateError {
    match r {
        Err(RenderError::Template(e)) => e,
        other => panic!("expected a template error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_a_render_past_the_timeout_kills_the_worker_and_the_next_is_served() {
    let p = pool(STAND_IN, Duration::from_millis(300));
    assert_eq!(p.render(one("fast"), json!({})).await.unwrap(), vec!["ok"]);
    let e = template_error(p.render(one("slow"), json!({})).await);
    assert_eq!(e.field, "subject");
    assert!(e.reason.contains("exceeded the time limit of 0.3 s"), "{e}");
    // A new worker: the killed one never answers again.
    assert_eq!(p.render(one("fast"), json!({})).await.unwrap(), vec!["ok"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_a_worker_that_dies_in_a_render_is_the_memory_limit_of_the_named_field() {
    let p = pool(STAND_IN, Duration::from_secs(30));
    let templates = vec![
        ("subject".to_string(), "fine".to_string()),
        ("html".to_string(), "die".to_string()),
    ];
    let e = template_error(p.render(templates, json!({})).await);
    assert_eq!(e.field, "html", "the field the worker named last");
    assert!(
        e.reason.contains("exceeded the memory limit of 64 MB"),
        "{e}"
    );
    assert_eq!(p.render(one("fast"), json!({})).await.unwrap(), vec!["ok"]);
    // At save time too: a check is the same exchange.
    let e = p.check("die".into(), None, None, vec![]).await.unwrap_err();
    assert!(
        matches!(e, RenderError::Template(ref t) if t.reason.contains("memory")),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_the_worker_gets_its_limits_and_nothing_else_in_its_environment() {
    // A variable the parent has (HOME) must not reach the worker.
    let p = pool(STAND_IN, Duration::from_secs(30));
    let out = p.render(one("env"), json!({})).await.unwrap();
    assert_eq!(out, vec![format!("64 {} none", p.config().cpu_secs())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_a_worker_that_exits_or_cannot_start_is_unavailable() {
    let p = pool("exit 3", Duration::from_secs(30));
    let e = p.render(one("x"), json!({})).await.unwrap_err();
    assert!(
        matches!(e, RenderError::Unavailable(ref m) if m.contains("status 3")),
        "{e:?}"
    );
    let missing = Pool::new(PoolConfig {
        program: "/nonexistent/kairos".into(),
        args: vec![],
        workers: 1,
        timeout: Duration::from_secs(1),
        memory_mb: 64,
    });
    let e = missing.render(one("x"), json!({})).await.unwrap_err();
    assert!(matches!(e, RenderError::Unavailable(_)), "{e:?}");
    // A worker that writes something other than a reply.
    let p = pool("read -r l; echo hello", Duration::from_secs(30));
    let e = p.render(one("x"), json!({})).await.unwrap_err();
    assert!(
        matches!(e, RenderError::Unavailable(ref m) if m.contains("not a reply")),
        "{e:?}"
    );
}

/// Answers one request, then kills itself: the pool finds it dead when it next takes it.
const ONE_AND_GONE: &str =
    r#"read -r line; echo '{"reply":"done","result":{"Ok":["ok"]}}'; kill -KILL $$"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_while_idle_is_not_blamed_on_the_next_template() {
    let p = pool(ONE_AND_GONE, Duration::from_secs(30));
    assert_eq!(p.render(one("x"), json!({})).await.unwrap(), vec!["ok"]);
    // Bounded wait for the idle worker to be gone before the next render takes it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The idle worker is dead before it named a template: a fresh one renders, and no
    // memory limit is reported for a template that never ran.
    for _ in 0..3 {
        assert_eq!(p.render(one("y"), json!({})).await.unwrap(), vec!["ok"]);
    }
}

/// Answers each request with its own pid.
const PID: &str =
    r#"while read -r line; do echo "{\"reply\":\"done\",\"result\":{\"Ok\":[\"$$\"]}}"; done"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_a_worker_is_reused_then_retired_after_its_quota_of_renders() {
    use kairos_channels::email::template::pool::MAX_RENDERS_PER_WORKER;
    let p = pool(PID, Duration::from_secs(30));
    let first = p.render(one("x"), json!({})).await.unwrap();
    for _ in 1..MAX_RENDERS_PER_WORKER {
        assert_eq!(p.render(one("x"), json!({})).await.unwrap(), first);
    }
    let next = p.render(one("x"), json!({})).await.unwrap();
    assert_ne!(
        next, first,
        "a new worker after {MAX_RENDERS_PER_WORKER} renders"
    );
}

/// The pool waits on pipes, not on a thread: on a one-thread runtime another task keeps
/// running while a worker takes its time.
#[tokio::test(flavor = "current_thread")]
async fn i12_3_a_render_in_a_worker_leaves_the_async_thread_free() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let slow = r#"while read -r line; do /bin/sleep 0.3; echo '{"reply":"done","result":{"Ok":["ok"]}}'; done"#;
    let p = pool(slow, Duration::from_secs(30));
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            t.fetch_add(1, Ordering::SeqCst);
        }
    });
    tokio::task::yield_now().await;
    let before = ticks.load(Ordering::SeqCst);
    assert_eq!(p.render(one("x"), json!({})).await.unwrap(), vec!["ok"]);
    let during = ticks.load(Ordering::SeqCst) - before;
    ticker.abort();
    assert!(
        during >= 1,
        "the async thread was blocked during the render"
    );
}
