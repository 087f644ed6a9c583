//! kairos embedded on an SQLite file (issue 15 §1): typed handlers, enqueue through the
//! facade's validation, transactional enqueue on the application's own pool, shutdown.

mod common;

use chrono::TimeZone;
use common::{Greet, finished, next, with_greet};
use kairos_core::ErrorClass;
use kairos_embed::sqlx::{self, SqlitePool};
use kairos_embed::{
    Context, EnqueueOptions, ErrorKind, JobArgs, JobError, JobState, Node, NodeBuilderExt,
    RetrySpec,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

fn greet(name: &str) -> Greet {
    Greet {
        name: name.into(),
        times: 2,
    }
}

async fn app_pool(node: &Node) -> SqlitePool {
    SqlitePool::connect_with(node.sqlite_connect_options().expect("an SQLite node"))
        .await
        .expect("the application's pool")
}

async fn job_count(pool: &SqlitePool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(pool)
        .await
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_1_a_typed_handler_runs_an_enqueued_job() {
    let dir = tempfile::tempdir().unwrap();
    let (b, mut seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let e = node.enqueue(greet("ada")).await.expect("enqueue");
    assert!(e.created);
    assert_eq!(e.job.kind.as_str(), "greet");
    let s = next(&mut seen).await;
    assert_eq!(s.args, greet("ada"));
    assert_eq!(s.ctx.job_id, e.job.id);
    assert_eq!(s.ctx.attempt, 1);
    assert_eq!(finished(&node, &e.job.id).await.state, JobState::Succeeded);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_finished_times_out_on_a_job_not_yet_due_and_names_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let later = node
        .enqueue_with(
            greet("later"),
            EnqueueOptions {
                run_at: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
                ..EnqueueOptions::default()
            },
        )
        .await
        .expect("enqueue");
    let e = node
        .wait_finished(&later.job.id, Duration::from_millis(150))
        .await
        .expect_err("not due for an hour");
    assert_eq!(e.kind(), &ErrorKind::Timeout, "{e}");
    assert!(e.to_string().contains(&later.job.id), "{e}");
    let e = node
        .wait_finished("job_does_not_exist", Duration::from_secs(5))
        .await
        .expect_err("no such job");
    assert_eq!(e.kind(), &ErrorKind::NotFound, "{e}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_1_a_payload_that_does_not_fit_the_type_fails_permanently_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let bad = serde_json::json!({"name": "grace", "times": "private-value"});
    // Enqueued through the untyped API, as another program could: the kind's check refuses it.
    let e = node
        .kairos()
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("greet".into()),
            payload: Some(bad.clone()),
            ..Default::default()
        })
        .await
        .map_err(kairos_embed::Error::from)
        .unwrap_err();
    assert_eq!(e.field(), Some("payload"), "{e}");
    assert!(!e.to_string().contains("private-value"), "{e}");
    // Stored before the type changed (written straight to the store): it fails when it runs.
    let now = kairos_core::Clock::now(&kairos_core::SystemClock);
    let policy = RetrySpec {
        max_attempts: Some(1),
        ..Default::default()
    }
    .to_policy(&kairos_embed::RetryPolicy::notification())
    .expect("policy");
    let job = node
        .kairos()
        .store()
        .job_insert(kairos_store::JobInsert {
            id: kairos_core::new_id(kairos_core::IdPrefix::Job, now),
            kind: kairos_core::JobKind::new("greet"),
            payload: bad,
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            retry: policy,
            audience: Default::default(),
            retry_is_kind_default: false,
            run_at: now,
            now,
            concurrency: None,
            http_origin: None,
        })
        .await
        .expect("insert")
        .job;
    node.wake();
    let done = finished(&node, &job.id).await;
    assert_eq!(done.state, JobState::Dead);
    let err = done.last_error.expect("an error");
    assert!(err.contains("does not deserialize into"), "{err}");
    assert!(err.contains("Greet"), "{err}");
    assert!(
        !err.contains("private-value"),
        "the value is not repeated: {err}"
    );
    let attempts = node.kairos().job_get(&job.id).await.unwrap().1;
    assert_eq!(attempts[0].error_class, Some(ErrorClass::Permanent));
    node.shutdown().await;
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Flaky {
    fail_permanently: bool,
}

impl JobArgs for Flaky {
    const KIND: &'static str = "flaky";
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_1_job_errors_map_to_retry_and_permanent() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let node = Node::sqlite(dir.path().join("k.db"))
        .poll_interval(Duration::from_millis(50))
        .handler(move |job: Flaky, ctx: Context| {
            c.fetch_add(1, Ordering::SeqCst);
            async move {
                if job.fail_permanently {
                    Err(JobError::permanent("the order is cancelled"))
                } else if ctx.attempt == 1 {
                    Err(JobError::retry("the mail server is down"))
                } else {
                    Ok(())
                }
            }
        })
        .start()
        .await
        .expect("start");
    let opts = || EnqueueOptions {
        retry: Some(RetrySpec {
            delays: Some(vec!["10ms".into()]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let retried = node
        .enqueue_with(
            Flaky {
                fail_permanently: false,
            },
            opts(),
        )
        .await
        .unwrap();
    let done = finished(&node, &retried.job.id).await;
    assert_eq!(done.state, JobState::Succeeded);
    assert_eq!(done.attempt, 2);
    let attempts = node.kairos().job_get(&done.id).await.unwrap().1;
    assert_eq!(attempts[0].error_class, Some(ErrorClass::Transient));
    assert_eq!(
        attempts[0].error.as_deref(),
        Some("the mail server is down")
    );

    let dead = node
        .enqueue_with(
            Flaky {
                fail_permanently: true,
            },
            EnqueueOptions {
                max_attempts: Some(1),
                ..opts()
            },
        )
        .await
        .unwrap();
    let done = finished(&node, &dead.job.id).await;
    assert_eq!(done.state, JobState::Dead);
    assert_eq!(done.last_error.as_deref(), Some("the order is cancelled"));
    let attempts = node.kairos().job_get(&done.id).await.unwrap().1;
    assert_eq!(attempts[0].error_class, Some(ErrorClass::Permanent));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    node.shutdown().await;
}

#[derive(serde::Serialize, serde::Deserialize)]
struct BadName;
impl JobArgs for BadName {
    const KIND: &'static str = "Not A Kind";
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Builtin;
impl JobArgs for Builtin {
    const KIND: &'static str = "webhook";
}

async fn noop<A>(_: A, _: Context) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn i15_1_1_a_bad_kind_name_or_setting_fails_start_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.db");
    let e = Node::sqlite(&file)
        .handler(noop::<BadName>)
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("kind"), "{e}");
    let e = Node::sqlite(&file)
        .handler(noop::<Builtin>)
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("kind"), "{e}");
    assert!(e.to_string().contains("built-in"), "{e}");
    let e = Node::sqlite(&file)
        .handler(noop::<Greet>)
        .handler(noop::<Greet>)
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("kind"), "{e}");
    let e = Node::sqlite(&file)
        .concurrency(0)
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("executor.concurrency"), "{e}");
    assert!(!file.exists(), "nothing was opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_2_sqlite_a_job_enqueued_in_a_transaction_exists_iff_it_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (b, mut seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let pool = app_pool(&node).await;
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap();

    // Rolled back: neither the order nor the job ever existed.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO orders (id) VALUES (1)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let rolled = node
        .enqueue_tx(&mut tx, greet("rolled"))
        .await
        .expect("enqueue in tx");
    assert!(rolled.created);
    tx.rollback().await.unwrap();
    assert!(node.job(&rolled.job.id).await.unwrap().is_none());

    // Committed: the job runs through the typed handler.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO orders (id) VALUES (2)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let committed = node
        .enqueue_tx(&mut tx, greet("committed"))
        .await
        .expect("enqueue in tx");
    assert!(
        node.job(&committed.job.id).await.unwrap().is_none(),
        "not visible to the node before the commit"
    );
    tx.commit().await.unwrap();
    node.wake();
    let s = next(&mut seen).await;
    assert_eq!(s.args, greet("committed"));
    assert_eq!(s.ctx.job_id, committed.job.id);
    assert_eq!(
        finished(&node, &committed.job.id).await.state,
        JobState::Succeeded
    );
    assert_eq!(
        job_count(&pool).await,
        1,
        "only the committed job is stored"
    );
    pool.close().await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_2_sqlite_a_job_committed_without_a_wake_runs_at_the_next_poll() {
    let dir = tempfile::tempdir().unwrap();
    let (b, mut seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let pool = app_pool(&node).await;
    let mut tx = pool.begin().await.unwrap();
    let e = node.enqueue_tx(&mut tx, greet("polled")).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(next(&mut seen).await.ctx.job_id, e.job.id);
    pool.close().await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_2_sqlite_bad_args_in_a_transaction_name_the_field_and_insert_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let pool = app_pool(&node).await;
    let mut tx = pool.begin().await.unwrap();
    let huge = Greet {
        name: "x".repeat(300 * 1024),
        times: 1,
    };
    let e = node.enqueue_tx(&mut tx, huge).await.unwrap_err();
    assert_eq!(e.field(), Some("payload"), "{e}");
    for (opts, field) in [
        (
            EnqueueOptions {
                idempotency_key: Some(String::new()),
                ..Default::default()
            },
            "idempotency_key",
        ),
        (
            EnqueueOptions {
                run_at: Some(chrono::Utc.with_ymd_and_hms(10000, 1, 1, 0, 0, 0).unwrap()),
                ..Default::default()
            },
            "run_at",
        ),
        (
            EnqueueOptions {
                retry: Some(RetrySpec {
                    delays: Some(vec!["soon".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "retry.delays[0]",
        ),
    ] {
        let e = node
            .enqueue_tx_with(&mut tx, greet("bad"), opts)
            .await
            .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Invalid { .. }), "{e}");
        assert_eq!(e.field(), Some(field), "{e}");
    }
    // The transaction is still usable, and commits nothing of kairos's.
    sqlx::query("CREATE TABLE t (x)")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(job_count(&pool).await, 0);
    // The same validation outside a transaction.
    let e = node
        .enqueue_with(
            greet("bad"),
            EnqueueOptions {
                idempotency_key: Some("k\u{0}".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("idempotency_key"), "{e}");
    assert_eq!(job_count(&pool).await, 0);
    pool.close().await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_2_sqlite_an_idempotency_key_in_a_transaction_answers_with_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    let pool = app_pool(&node).await;
    let keyed = || EnqueueOptions {
        idempotency_key: Some("order-7".into()),
        ..Default::default()
    };
    let outside = node.enqueue_with(greet("a"), keyed()).await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    let inside = node
        .enqueue_tx_with(&mut tx, greet("b"), keyed())
        .await
        .unwrap();
    assert!(!inside.created);
    assert_eq!(inside.job.id, outside.job.id);
    // A new key used twice in one transaction: created once.
    let other = || EnqueueOptions {
        idempotency_key: Some("order-8".into()),
        ..Default::default()
    };
    let first = node
        .enqueue_tx_with(&mut tx, greet("c"), other())
        .await
        .unwrap();
    let second = node
        .enqueue_tx_with(&mut tx, greet("c"), other())
        .await
        .unwrap();
    assert!(first.created && !second.created);
    assert_eq!(first.job.id, second.job.id);
    tx.commit().await.unwrap();
    assert_eq!(job_count(&pool).await, 2);

    // A key whose job was pruned (only its tombstone is left) creates nothing: a conflict
    // that says so, as the API answers. The tombstone is recent: one finished in 1970 is past
    // the pruner's retention, and the node's pruner could forget it before the enqueue.
    sqlx::query(
        "INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at) VALUES ('idem:order-1', 'job_x', ?1)",
    )
    .bind(chrono::Utc::now().timestamp_millis())
    .execute(&pool)
    .await
    .unwrap();
    let mut tx = pool.begin().await.unwrap();
    let e = node
        .enqueue_tx_with(
            &mut tx,
            greet("d"),
            EnqueueOptions {
                idempotency_key: Some("order-1".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("pruned"), "{e}");
    drop(tx);
    assert_eq!(job_count(&pool).await, 2);
    pool.close().await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_2_sqlite_a_transaction_on_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _seen) = with_greet(Node::sqlite(dir.path().join("k.db")));
    let node = b.start().await.expect("start");
    // Another kairos database: the insert works there, and no node of this one would see it.
    let other = dir.path().join("other.db");
    kairos_store_sqlite::SqliteStore::open(&other)
        .await
        .unwrap()
        .close()
        .await;
    let pool = SqlitePool::connect_with(kairos_store_sqlite::connect_options(&other))
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    let e = node.enqueue_tx(&mut tx, greet("lost")).await.unwrap_err();
    assert_eq!(e.field(), Some("tx"), "{e}");
    drop(tx);
    pool.close().await;
    node.shutdown().await;
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Slow;
impl JobArgs for Slow {
    const KIND: &'static str = "slow";
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i15_1_1_shutdown_lets_a_running_handler_finish() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.db");
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let node = Node::sqlite(&file)
        .shutdown_grace(Duration::from_secs(60))
        .handler(move |_: Slow, _ctx: Context| {
            let (started_tx, r) = (started_tx.clone(), r.clone());
            async move {
                let _ = started_tx.send(());
                r.notified().await;
                Ok(())
            }
        })
        .start()
        .await
        .expect("start");
    let e = node.enqueue(Slow).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), started.recv())
        .await
        .expect("the handler started");
    // Shut down while the handler runs: `join!` polls `shutdown` first, which stops the
    // node (cancels) before the handler is released, and it finishes only then.
    tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(node.shutdown(), async { release.notify_one() })
    })
    .await
    .expect("shutdown returned");
    // Its outcome was recorded before the node closed its database.
    let store = kairos_store_sqlite::SqliteStore::open(&file).await.unwrap();
    use kairos_store::JobStore;
    let job = store.job_get(&e.job.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Succeeded);
    store.close().await;
}

/// A kind whose arguments bring their own retry default and check.
#[derive(serde::Serialize, serde::Deserialize)]
struct Charge {
    cents: u64,
}

impl JobArgs for Charge {
    const KIND: &'static str = "charge";

    fn retry() -> Option<kairos_embed::RetryPolicy> {
        Some(kairos_embed::RetryPolicy::http_call())
    }

    fn validate(&self) -> Result<(), String> {
        if self.cents == 0 {
            return Err("cents must be more than 0".into());
        }
        Ok(())
    }
}

/// Kinds are values a node owns: an application's kind registered in one call brings its
/// retry default and its request check, which hold for the library and for the facade the
/// API uses; a second node in the same process without the kind does not know it.
#[tokio::test]
async fn i32_an_application_kind_brings_its_retry_default_and_request_check() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::sqlite(dir.path().join("k.db"))
        .poll_interval(Duration::from_secs(60))
        .handler(noop::<Charge>)
        .start()
        .await
        .expect("start");
    let pool = app_pool(&node).await;

    let e = node.enqueue(Charge { cents: 0 }).await.unwrap_err();
    assert_eq!(e.field(), Some("payload"), "{e}");
    assert!(e.to_string().contains("cents must be more than 0"), "{e}");
    // Through the facade, as `POST /v1/jobs` enqueues: a payload that is not a `Charge`.
    let e = node
        .kairos()
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("charge".into()),
            payload: Some(serde_json::json!({"cents": "ten"})),
            ..Default::default()
        })
        .await
        .map_err(kairos_embed::Error::from)
        .unwrap_err();
    assert_eq!(e.field(), Some("payload"), "{e}");
    assert!(e.to_string().contains("Charge"), "{e}");
    assert_eq!(job_count(&pool).await, 0, "nothing stored");

    let ok = node.enqueue(Charge { cents: 250 }).await.expect("enqueue");
    assert_eq!(
        node.kairos().kinds().retry_of(&ok.job),
        kairos_embed::RetryPolicy::http_call(),
        "the kind's own retry default"
    );
    assert_ne!(
        kairos_embed::RetryPolicy::http_call(),
        kairos_embed::RetryPolicy::notification()
    );

    // Another node in this process, on another file, was given no such kind.
    let other = Node::sqlite(dir.path().join("other.db"))
        .poll_interval(Duration::from_secs(60))
        .start()
        .await
        .expect("start");
    let e = other
        .kairos()
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("charge".into()),
            payload: Some(serde_json::json!({"cents": 1})),
            ..Default::default()
        })
        .await
        .map_err(kairos_embed::Error::from)
        .unwrap_err();
    assert_eq!(e.field(), Some("kind"), "{e}");
    pool.close().await;
    other.shutdown().await;
    node.shutdown().await;
}
