//! The executor through the engine: bounded oldest-first batches, dead jobs out of the due
//! set, panics and timeouts as failures, `run_at` precision, leases and graceful shutdown —
//! on a real SQLite file.

mod common;

use chrono::Utc;
use common::*;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, Failure, JobState, Outcome, SystemClock};
use kairos_engine::{Engine, EngineConfig, Handler, Kairos};
use kairos_store::JobClaim;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration as StdDuration, Instant};
use tokio_util::sync::CancellationToken;

/// a backlog of 250 due jobs with executor concurrency 100 drains oldest
/// `run_at` first over three `run_once` calls (100, 100, 50), and the handler sees them in
/// exactly that order.
#[tokio::test]
async fn backlog_of_250_drains_100_100_50_oldest_first() {
    let handler = TestHandler::ok();
    let base = t("2026-05-01T09:00:00Z");
    let h = Harness::new(base, &[("work", handler.clone() as Arc<dyn Handler>)]).await;
    assert_eq!(EngineConfig::default().executor.concurrency, 100);
    // Enqueued in a scrambled order so that insertion (and id) order is not due order.
    for k in 0..250i64 {
        let i = (k * 7) % 250;
        h.enqueue(
            "work",
            serde_json::json!({ "i": i }),
            Some(base - secs(250 - i)),
            None,
        )
        .await;
    }
    let mut claimed = Vec::new();
    for _ in 0..3 {
        let r = h.exec(base).await;
        assert_eq!(r.claimed, r.succeeded, "{r:?}");
        claimed.push(r.claimed);
    }
    assert_eq!(claimed, vec![100, 100, 50]);
    assert_eq!(h.exec(base).await.claimed, 0);

    let seen: Vec<i64> = handler
        .payloads()
        .iter()
        .map(|p| p["i"].as_i64().unwrap())
        .collect();
    assert_eq!(seen, (0..250).collect::<Vec<_>>());
    assert_eq!(h.count_in_state(JobState::Succeeded).await, 250);
}

/// a dead job is never claimed again — not by the executor, not by the rescuer —
/// until an operator replays it.
#[tokio::test]
async fn dead_jobs_are_not_claimed_again() {
    let handler = TestHandler::new(|_, _| Outcome::Failed(Failure::permanent("no such user")));
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("work", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h
        .enqueue("work", serde_json::json!({}), None, Some(max_attempts(1)))
        .await;

    let r = h.exec(t0).await;
    assert_eq!((r.claimed, r.dead), (1, 1), "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Dead);

    for later in [t0 + mins(1), t0 + mins(60), t0 + secs(86_400 * 30)] {
        assert_eq!(h.exec(later).await.claimed, 0);
        assert_eq!(h.rescue(later).await.rescued, 0);
    }
    assert_eq!(handler.calls_for(&job.id), 1);
    assert_eq!(h.job(&job.id).await.state, JobState::Dead);
    assert_eq!(h.store.job_next_run_at().await.unwrap(), None);
}

/// a panicking handler is recorded as a failure whose error says it panicked,
/// and the other jobs of the same batch succeed.
#[tokio::test]
async fn panicking_handler_is_a_failure_and_the_batch_goes_on() {
    let panics = TestHandler::new(|_, _| panic!("boom in handler"));
    let ok = TestHandler::ok();
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(
        t0,
        &[
            ("panics", panics.clone() as Arc<dyn Handler>),
            ("ok", ok.clone() as Arc<dyn Handler>),
        ],
    )
    .await;
    let a = h
        .enqueue("ok", serde_json::json!({"n": 1}), None, None)
        .await;
    let bad = h.enqueue("panics", serde_json::json!({}), None, None).await;
    let b = h
        .enqueue("ok", serde_json::json!({"n": 2}), None, None)
        .await;

    let r = h.exec(t0).await;
    assert_eq!((r.claimed, r.succeeded, r.retried), (3, 2, 1), "{r:?}");
    assert_eq!(panics.calls(), vec![bad.id.clone()]);
    for id in [&a.id, &b.id] {
        assert_eq!(h.job(id).await.state, JobState::Succeeded);
    }
    let failed = h.job(&bad.id).await;
    assert_eq!(
        failed.state,
        JobState::Available,
        "a panic is a retryable failure"
    );
    assert!(failed.run_at > t0);
    let attempts = h.attempts(&bad.id).await;
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, "failed");
    let err = attempts[0].error.clone().unwrap_or_default();
    assert!(
        err.contains("panicked") && err.contains("boom in handler"),
        "{err}"
    );
}

/// a handler that runs past its `timeout()` is a transient failure whose error says
/// it timed out, and it does not hold the batch longer than the timeout.
#[tokio::test]
async fn handler_past_its_timeout_is_a_transient_failure_and_does_not_block_the_batch() {
    let sleepy = TestHandler::slow(
        StdDuration::from_secs(20),
        StdDuration::from_millis(200),
        |_, _| Outcome::ok(),
    );
    let ok = TestHandler::ok();
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(
        t0,
        &[
            ("sleepy", sleepy.clone() as Arc<dyn Handler>),
            ("ok", ok.clone() as Arc<dyn Handler>),
        ],
    )
    .await;
    let slow_job = h.enqueue("sleepy", serde_json::json!({}), None, None).await;
    let fast_job = h.enqueue("ok", serde_json::json!({}), None, None).await;

    let started = Instant::now();
    let r = h.exec(t0).await;
    let took = started.elapsed();
    assert!(took < StdDuration::from_secs(3), "the batch took {took:?}");
    assert_eq!((r.claimed, r.succeeded, r.retried), (2, 1, 1), "{r:?}");
    assert_eq!(sleepy.started(), 1);
    assert_eq!(sleepy.finished(), 0, "the attempt was cut off");

    assert_eq!(h.job(&fast_job.id).await.state, JobState::Succeeded);
    let job = h.job(&slow_job.id).await;
    assert_eq!(job.state, JobState::Available);
    assert!(
        job.run_at >= t0 + mins(1),
        "retried with the policy's delay"
    );
    let a = &h.attempts(&slow_job.id).await[0];
    assert_eq!(a.outcome, "failed");
    assert_eq!(a.error_class.map(|c| c.as_str()), Some("transient"));
    assert!(
        a.error.as_deref().unwrap_or("").contains("timed out"),
        "{a:?}"
    );
}

/// S0-1 for jobs: a job never starts before its `run_at`, to the millisecond.
#[tokio::test]
async fn job_never_starts_before_its_run_at_to_the_millisecond() {
    let handler = TestHandler::ok();
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("work", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h
        .enqueue("work", serde_json::json!({}), Some(t0 + ms(1500)), None)
        .await;
    assert_eq!(job.run_at, t0 + ms(1500));

    assert_eq!(h.exec(t0).await.claimed, 0);
    assert_eq!(h.exec(t0 + ms(1499)).await.claimed, 0);
    assert!(handler.calls().is_empty());
    let r = h.exec(t0 + ms(1500)).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1));
    assert_eq!(handler.calls(), vec![job.id.clone()]);
}

/// a job claimed by a worker that then crashed (claimed, never completed) stays
/// invisible while its lease runs, is returned by the rescuer once the lease has expired,
/// and then runs.
#[tokio::test]
async fn crashed_claim_is_rescued_after_its_lease_and_then_runs() {
    let handler = TestHandler::ok();
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("work", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h.enqueue("work", serde_json::json!({}), None, None).await;
    let lease = chrono::Duration::from_std(EngineConfig::default().executor.lease).unwrap();

    // A worker claims it and crashes: the claim is dropped, nothing is ever completed.
    let claimed = h
        .store
        .job_claim(JobClaim {
            now: t0,
            limit: 10,
            node: "crashed-node".into(),
            lease_token: new_id(IdPrefix::Lease, t0),
            lease_until: t0 + lease,
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    drop(claimed);
    assert_eq!(h.job(&job.id).await.state, JobState::Running);

    // While the lease runs, nobody else takes it and the rescuer leaves it alone.
    assert_eq!(h.exec(t0 + secs(1)).await.claimed, 0);
    assert_eq!(h.rescue(t0 + lease - secs(1)).await.rescued, 0);
    assert_eq!(h.job(&job.id).await.state, JobState::Running);

    let back = t0 + lease + secs(1);
    assert_eq!(h.rescue(back).await.rescued, 1);
    let rescued = h.job(&job.id).await;
    assert_eq!(rescued.state, JobState::Available);
    assert!(rescued.run_at <= back);

    let r = h.exec(back).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");
    assert_eq!(handler.calls(), vec![job.id.clone()]);
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);
    let outcomes: Vec<_> = h
        .attempts(&job.id)
        .await
        .into_iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(outcomes, vec!["lost", "succeeded"]);
}

/// shutdown drains. `Engine::run` on the system clock; jobs whose handler takes
/// 300 ms are running when the token is cancelled; `run` returns only after they finished,
/// and their outcomes are recorded (`succeeded`), none left `running`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_run_cancelled_mid_flight_drains_and_records_running_jobs() {
    let handler = TestHandler::slow(
        StdDuration::from_millis(300),
        StdDuration::from_secs(10),
        |_, _| Outcome::ok(),
    );
    let (_dir, store) = open_store().await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = registry_with(
        &store,
        clock.clone(),
        &[("slow", handler.clone() as Arc<dyn Handler>)],
    );
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        clock.clone(),
        kinds.clone(),
    )
    .unwrap();
    let kairos = Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds);

    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };

    let mut ids = Vec::new();
    for i in 0..5 {
        let (job, _) = kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                kind: Some("slow".into()),
                payload: Some(serde_json::json!({ "i": i })),
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(job.id);
    }
    // Wait (bounded) until all five are in their handler.
    let deadline = Instant::now() + StdDuration::from_secs(10);
    while handler.started() < 5 {
        assert!(
            Instant::now() < deadline,
            "jobs did not start: {}",
            handler.started()
        );
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    assert_eq!(handler.finished(), 0, "still in flight when cancelled");
    for id in &ids {
        assert_eq!(
            store.job_get(id).await.unwrap().unwrap().state,
            JobState::Running
        );
    }
    let cancelled_at = Utc::now();
    cancel.cancel();

    tokio::time::timeout(StdDuration::from_secs(10), run)
        .await
        .expect("run returned within the grace period")
        .expect("run did not panic");
    assert_eq!(handler.finished(), 5);
    for id in &ids {
        let job = store.job_get(id).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Succeeded, "{id}");
        let attempts = store.attempt_list(id).await.unwrap();
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].outcome, "succeeded");
        assert!(
            attempts[0].finished_at >= cancelled_at,
            "finished after the cancel"
        );
    }
    assert_eq!(handler.calls().len(), 5, "nothing ran twice");
}

/// the shutdown grace is a bound. A handler that would run far longer than
/// `shutdown_grace` does not hold `Engine::run` past it; its job is left to its lease (still
/// `running`, no outcome recorded), and the rescuer returns it once the lease has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_run_returns_after_the_shutdown_grace_and_leaves_the_rest_to_the_lease() {
    let handler = TestHandler::slow(
        StdDuration::from_secs(8),
        StdDuration::from_secs(60),
        |_, _| Outcome::ok(),
    );
    let (_dir, store) = open_store().await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = registry_with(
        &store,
        clock.clone(),
        &[("slow", handler.clone() as Arc<dyn Handler>)],
    );
    let kinds = std::sync::Arc::new(registry.clone());
    let mut cfg = EngineConfig::default();
    cfg.executor.shutdown_grace = StdDuration::from_millis(300);
    let lease = cfg.executor.lease;
    let engine = Engine::new(cfg, store.clone(), clock.clone(), kinds.clone()).unwrap();
    let kairos = Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds);

    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let (job, _) = kairos
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("slow".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let deadline = Instant::now() + StdDuration::from_secs(10);
    while handler.started() < 1 {
        assert!(Instant::now() < deadline, "the job did not start");
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    let cancelled = Instant::now();
    cancel.cancel();
    tokio::time::timeout(StdDuration::from_secs(20), run)
        .await
        .expect("run returned")
        .expect("run did not panic");
    let took = cancelled.elapsed();
    assert!(
        took < StdDuration::from_secs(4),
        "run took {took:?} after the cancel"
    );
    assert_eq!(handler.finished(), 0);

    let left = store.job_get(&job.id).await.unwrap().unwrap();
    assert_eq!(left.state, JobState::Running, "left to its lease");
    assert!(store.attempt_list(&job.id).await.unwrap().is_empty());
    let after_lease = Utc::now() + chrono::Duration::from_std(lease).unwrap() + secs(1);
    assert_eq!(
        engine
            .rescuer()
            .run_once(after_lease)
            .await
            .unwrap()
            .rescued,
        1
    );
    assert_eq!(
        store.job_get(&job.id).await.unwrap().unwrap().state,
        JobState::Available
    );
}

/// Start `n` jobs on one handler slot with every outcome commit held back; returns how many
/// handlers ran while nothing could be recorded, then releases the commits and checks all
/// `n` succeed.
async fn handlers_run_while_commits_are_held(max_unrecorded: usize, n: usize) -> usize {
    held_commits(max_unrecorded, n, 1).await.0
}

/// As [`handlers_run_while_commits_are_held`], with `complete_parallel` batch writers; also
/// returns the most completion writes seen in flight at once.
async fn held_commits(max_unrecorded: usize, n: usize, parallel: usize) -> (usize, usize) {
    let handler = TestHandler::ok();
    let (_dir, counting, engine, ids) = counted_engine(&handler, n, |cfg| {
        cfg.executor.concurrency = 1;
        cfg.executor.max_unrecorded = max_unrecorded;
        cfg.executor.complete_parallel = parallel;
    })
    .await;
    let store: Arc<dyn kairos_store::Store> = counting.clone();
    let held = counting.complete_gate.write().await;
    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    // Bounded: until every handler ran, or 2 s with the commits held.
    let deadline = Instant::now() + StdDuration::from_secs(2);
    while handler.finished() < n && Instant::now() < deadline {
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    let ran = handler.finished();
    for id in &ids {
        assert_ne!(
            store.job_get(id).await.unwrap().unwrap().state,
            JobState::Succeeded,
            "nothing is recorded while the commits are held"
        );
    }
    drop(held);
    let deadline = Instant::now() + StdDuration::from_secs(20);
    while counting_succeeded(&store, &ids).await < n {
        assert!(
            Instant::now() < deadline,
            "the held outcomes were not recorded"
        );
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    cancel.cancel();
    run.await.unwrap();
    (ran, counting.completes_in_flight_max.load(Ordering::SeqCst))
}

/// While one batch of outcomes is being written, the next one is written beside it (each on
/// its own connection), up to `complete_parallel` at once and never more; with 1, one at a
/// time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completion_batches_are_written_up_to_complete_parallel_at_once() {
    let (ran, in_flight) = held_commits(500, 6, 2).await;
    assert_eq!(ran, 6);
    assert_eq!(in_flight, 2, "two batch writes in flight at once");
    let (ran, in_flight) = held_commits(500, 6, 1).await;
    assert_eq!(ran, 6);
    assert_eq!(in_flight, 1, "one at a time");
}

async fn counting_succeeded(store: &Arc<dyn kairos_store::Store>, ids: &[String]) -> usize {
    let mut n = 0;
    for id in ids {
        if store.job_get(id).await.unwrap().unwrap().state == JobState::Succeeded {
            n += 1;
        }
    }
    n
}

/// A handler slot comes free when its handler returns, while the outcome waits for its batch
/// commit (up to `max_unrecorded`): one slot runs every job with no commit in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slot_runs_the_next_job_while_its_outcome_waits_for_the_commit() {
    assert_eq!(handlers_run_while_commits_are_held(500, 4).await, 4);
}

/// With `max_unrecorded = 0` a slot comes back only with its committed outcome: while the
/// commit is held, the one slot has run one job and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_unrecorded_room_a_slot_waits_for_its_outcomes_commit() {
    assert_eq!(handlers_run_while_commits_are_held(0, 4).await, 1);
}

/// The bound: with room for two unrecorded outcomes, one slot runs three jobs (one whose
/// outcome holds the slot, two waiting alone) and then waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unrecorded_outcomes_are_bounded_by_max_unrecorded() {
    assert_eq!(handlers_run_while_commits_are_held(2, 5).await, 3);
}

/// `complete_parallel` is between 1 and 64: no writer at all would record nothing, and each
/// writer holds a connection; the error names the field.
#[test]
fn complete_parallel_out_of_range_is_refused_by_name() {
    let mut cfg = kairos_engine::executor::ExecutorConfig::default();
    assert_eq!(cfg.complete_parallel, 2);
    assert!(cfg.validate().is_ok());
    for bad in [0, 65] {
        cfg.complete_parallel = bad;
        assert_eq!(
            cfg.validate().unwrap_err().field(),
            "executor.complete_parallel"
        );
    }
}

/// An engine on a fresh SQLite file behind a [`CountingStore`], configured by `configure`,
/// with `n` jobs queued for `handler` (kind `counted`); their ids in order.
async fn counted_engine(
    handler: &Arc<TestHandler>,
    n: usize,
    configure: impl FnOnce(&mut EngineConfig),
) -> (tempfile::TempDir, Arc<CountingStore>, Engine, Vec<String>) {
    let (dir, sqlite) = open_store().await;
    let counting = CountingStore::new(sqlite);
    let store: Arc<dyn kairos_store::Store> = counting.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = registry_with(
        &store,
        clock.clone(),
        &[("counted", handler.clone() as Arc<dyn Handler>)],
    );
    let kinds = std::sync::Arc::new(registry.clone());
    let mut cfg = EngineConfig::default();
    configure(&mut cfg);
    let engine = Engine::new(cfg, store.clone(), clock.clone(), kinds.clone()).unwrap();
    let kairos = Kairos::new(store, clock, engine.wake(), kinds);
    let mut ids = Vec::new();
    for i in 0..n {
        let (job, _) = kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                kind: Some("counted".into()),
                payload: Some(serde_json::json!({ "i": i })),
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(job.id);
    }
    (dir, counting, engine, ids)
}

/// Runs the engine until `handler` has finished `n` jobs (bounded: 20 s), then stops it.
async fn run_until_finished(engine: &Engine, handler: &TestHandler, n: usize) {
    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let deadline = Instant::now() + StdDuration::from_secs(20);
    while handler.finished() < n && Instant::now() < deadline {
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    assert_eq!(handler.finished(), n, "every job ran once");
    cancel.cancel();
    run.await.unwrap();
}

/// One slot running 1 ms jobs finishes one job at a time; while its local queue still holds
/// a job, the next claim waits until it has room for half the queue's limit (about 50 here:
/// a hundred 1 ms jobs within the prefetch horizon). Claiming as soon as any room opened took
/// one or two jobs per claim, about 80 claims for these 200 jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_queue_claims_in_few_large_batches_not_one_per_finished_job() {
    let handler = TestHandler::slow(
        StdDuration::from_millis(1),
        StdDuration::from_secs(10),
        |_, _| Outcome::ok(),
    );
    let (_dir, counting, engine, _) =
        counted_engine(&handler, 200, |cfg| cfg.executor.concurrency = 1).await;
    run_until_finished(&engine, &handler, 200).await;
    let claims = counting.job_claim_calls.load(Ordering::SeqCst);
    assert!(
        claims <= 25,
        "{claims} claims for 200 jobs: claims did not wait to grow"
    );
}

/// Two claimers: while one claim is in the database the other is sent beside it (each asks
/// for its share of the queue), and never a third.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_claims_are_in_flight_at_once_and_never_three() {
    let handler = TestHandler::ok();
    let (_dir, counting, engine, _) =
        counted_engine(&handler, 40, |cfg| cfg.executor.concurrency = 4).await;
    let held = counting.claim_gate.write().await;
    let waiting = {
        let counting = counting.clone();
        tokio::spawn(async move {
            // Bounded: until two claims wait at the gate, or 2 s; then a moment more, in
            // which a third claimer would arrive.
            let deadline = Instant::now() + StdDuration::from_secs(2);
            while counting.claims_in_flight.load(Ordering::SeqCst) < 2 && Instant::now() < deadline
            {
                tokio::time::sleep(StdDuration::from_millis(5)).await;
            }
            tokio::time::sleep(StdDuration::from_millis(50)).await;
            counting.claims_in_flight.load(Ordering::SeqCst)
        })
    };
    let run = run_until_finished(&engine, &handler, 40);
    let check = async {
        let at_once = waiting.await.unwrap();
        drop(held);
        at_once
    };
    let ((), at_once) = tokio::join!(run, check);
    assert_eq!(at_once, 2, "two claims wait at the gate together");
    assert_eq!(counting.claims_in_flight_max.load(Ordering::SeqCst), 2);
}

/// After a claim that came back short, the next claim waits out `claim_cooldown`, so jobs
/// enqueued one by one meanwhile (each waking the node) share one claim. Without the pause
/// each wake-up made its own claim of one job: five claims for these five.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_enqueued_during_the_claim_cooldown_share_one_claim() {
    let handler = TestHandler::ok();
    let (_dir, sqlite) = open_store().await;
    let counting = CountingStore::new(sqlite);
    let store: Arc<dyn kairos_store::Store> = counting.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let kinds = Arc::new(registry_with(
        &store,
        clock.clone(),
        &[("counted", handler.clone() as Arc<dyn Handler>)],
    ));
    let mut cfg = EngineConfig::default();
    cfg.executor.claim_cooldown = StdDuration::from_millis(400);
    let engine = Engine::new(cfg, store.clone(), clock.clone(), kinds.clone()).unwrap();
    let kairos = Kairos::new(store, clock, engine.wake(), kinds);
    let enqueue = |i: usize| {
        let kairos = kairos.clone();
        async move {
            kairos
                .job_enqueue(kairos_engine::ops::NewJob {
                    kind: Some("counted".into()),
                    payload: Some(serde_json::json!({ "i": i })),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    };
    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let wait_for = |n: usize| {
        let handler = handler.clone();
        async move {
            let deadline = Instant::now() + StdDuration::from_secs(10);
            while handler.finished() < n && Instant::now() < deadline {
                tokio::time::sleep(StdDuration::from_millis(2)).await;
            }
            assert_eq!(handler.finished(), n);
        }
    };
    enqueue(0).await;
    wait_for(1).await;
    let before = counting.job_claim_calls.load(Ordering::SeqCst);
    for i in 1..=5 {
        enqueue(i).await;
    }
    wait_for(6).await;
    let claims = counting.job_claim_calls.load(Ordering::SeqCst) - before;
    cancel.cancel();
    run.await.unwrap();
    assert!(
        claims <= 3,
        "{claims} claims for 5 jobs enqueued one by one during the cooldown"
    );
}

#[test]
fn claim_cooldown_over_a_second_is_refused_by_name() {
    let mut cfg = EngineConfig::default();
    cfg.executor.claim_cooldown = StdDuration::from_millis(1001);
    assert_eq!(
        cfg.executor.validate().unwrap_err().field(),
        "executor.claim_cooldown"
    );
}
