//! The pruner on the manual clock: finished jobs and their attempts go once older than
//! their class's age, dead letters are kept longer, unfinished and replayed jobs stay, and a
//! backlog is worked off in bounded batches.

mod common;

use common::*;
use kairos_core::{Failure, JobState, Outcome};
use kairos_engine::EngineConfig;
use kairos_engine::pruner::{PrunerConfig, PrunerReport};
use std::sync::Arc;
use std::time::Duration;

fn days(n: i64) -> chrono::Duration {
    chrono::Duration::days(n)
}

/// A handler that succeeds for payload `{"ok": true}` and fails permanently otherwise.
fn script() -> Arc<TestHandler> {
    TestHandler::new(|job, _| {
        if job.payload["ok"] == true {
            Outcome::ok()
        } else {
            Outcome::Failed(Failure::permanent("no"))
        }
    })
}

/// with the defaults (7 days, dead 30 days) a run deletes succeeded jobs (and their
/// attempts) finished more than 7 days ago, keeps newer ones and dead jobs until 30 days, and
/// never touches jobs still waiting.
#[tokio::test]
async fn pruner_deletes_by_age_and_keeps_dead_letters_longer() {
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    let one = Some(max_attempts(1));
    let old_ok = h
        .enqueue("test", serde_json::json!({"ok": true}), None, one.clone())
        .await;
    let old_dead = h
        .enqueue("test", serde_json::json!({"ok": false}), None, one.clone())
        .await;
    assert_eq!(h.exec(t0).await.claimed, 2);
    let t1 = t0 + days(5);
    let new_ok = h
        .enqueue(
            "test",
            serde_json::json!({"ok": true}),
            Some(t1),
            one.clone(),
        )
        .await;
    let later = h
        .enqueue(
            "test",
            serde_json::json!({"ok": true}),
            Some(t0 + days(90)),
            one,
        )
        .await;
    assert_eq!(h.exec(t1).await.succeeded, 1);
    assert_eq!(h.job(&old_dead.id).await.state, JobState::Dead);

    // Day 6: nothing is 7 days old yet.
    let r = h.engine.pruner().run_once(t0 + days(6)).await.unwrap();
    assert_eq!(r, PrunerReport::default());
    // Day 8: the first success goes, with its attempt; the later one and the dead one stay.
    let r = h.engine.pruner().run_once(t0 + days(8)).await.unwrap();
    assert_eq!(
        (r.succeeded_jobs, r.dead_jobs, r.attempts),
        (1, 0, 1),
        "{r:?}"
    );
    assert!(h.store.job_get(&old_ok.id).await.unwrap().is_none());
    assert!(h.attempts(&old_ok.id).await.is_empty());
    assert_eq!(h.job(&new_ok.id).await.state, JobState::Succeeded);
    assert_eq!(h.job(&old_dead.id).await.state, JobState::Dead);
    // Day 29: the dead letter is still there for someone to replay.
    let r = h.engine.pruner().run_once(t0 + days(29)).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.dead_jobs), (1, 0), "{r:?}");
    // Day 31: it goes.
    let r = h.engine.pruner().run_once(t0 + days(31)).await.unwrap();
    assert_eq!(
        (r.succeeded_jobs, r.dead_jobs, r.attempts),
        (0, 1, 1),
        "{r:?}"
    );
    assert!(h.store.job_get(&old_dead.id).await.unwrap().is_none());
    // A job still waiting is never pruned, however old the clock.
    assert_eq!(h.job(&later.id).await.state, JobState::Available);
}

/// A dead job replayed before its age is up is unfinished again: the pruner leaves it, and
/// it runs.
#[tokio::test]
async fn pruner_leaves_a_replayed_dead_job_alone() {
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    let j = h
        .enqueue(
            "test",
            serde_json::json!({"ok": false}),
            None,
            Some(max_attempts(1)),
        )
        .await;
    assert_eq!(h.exec(t0).await.dead, 1);
    h.clock.set(t0 + days(40));
    h.kairos.job_retry(&j.id).await.expect("replay");
    let r = h.engine.pruner().run_once(t0 + days(40)).await.unwrap();
    assert_eq!(r.dead_jobs, 0);
    assert_eq!(h.job(&j.id).await.state, JobState::Available);
}

/// A backlog larger than one batch is deleted in bounded batches: `max_batches` per run, the
/// report says more is left, and the next run goes on.
#[tokio::test]
async fn pruner_works_off_a_backlog_in_bounded_batches() {
    let t0 = t("2026-10-01T06:00:00Z");
    let cfg = EngineConfig {
        pruner: PrunerConfig {
            batch: 3,
            max_batches: 2,
            ..PrunerConfig::default()
        },
        ..EngineConfig::default()
    };
    let h = Harness::with_config(t0, cfg, &[("test", script())]).await;
    for _ in 0..10 {
        h.enqueue("test", serde_json::json!({"ok": true}), None, None)
            .await;
    }
    assert_eq!(h.exec(t0).await.succeeded, 10);
    let at = t0 + days(8);
    let r = h.engine.pruner().run_once(at).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.more), (6, true), "{r:?}");
    let r = h.engine.pruner().run_once(at).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.more), (4, false), "{r:?}");
    assert!(h.jobs().await.is_empty());
}

/// Retention can be switched off per class (`None`: keep forever).
#[tokio::test]
async fn pruner_keeps_a_class_without_an_age() {
    let t0 = t("2026-10-01T06:00:00Z");
    let cfg = EngineConfig {
        pruner: PrunerConfig {
            succeeded: None,
            dead: Some(Duration::from_secs(86_400)),
            ..PrunerConfig::default()
        },
        ..EngineConfig::default()
    };
    let h = Harness::with_config(t0, cfg, &[("test", script())]).await;
    let one = Some(max_attempts(1));
    let ok = h
        .enqueue("test", serde_json::json!({"ok": true}), None, one.clone())
        .await;
    let dead = h
        .enqueue("test", serde_json::json!({"ok": false}), None, one)
        .await;
    h.exec(t0).await;
    let r = h.engine.pruner().run_once(t0 + days(3650)).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.dead_jobs), (0, 1), "{r:?}");
    assert_eq!(h.job(&ok.id).await.state, JobState::Succeeded);
    assert!(h.store.job_get(&dead.id).await.unwrap().is_none());
}

/// The pruner is leader-only: its loop deletes nothing while this node follows, and prunes
/// once it leads. (Bounded waits; the manual clock gives the ages.)
#[tokio::test]
async fn pruner_loop_runs_only_on_the_leader() {
    use kairos_engine::pruner::Pruner;
    use kairos_engine::service::Runner;
    use kairos_store::Leader;
    use tokio_util::sync::CancellationToken;
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    let j = h
        .enqueue("test", serde_json::json!({"ok": true}), None, None)
        .await;
    assert_eq!(h.exec(t0).await.succeeded, 1);
    h.clock.set(t0 + days(8));
    let leader = Leader::follower();
    let cfg = PrunerConfig {
        interval: Duration::from_millis(5),
        ..PrunerConfig::default()
    };
    let pruner = Pruner::new(cfg, h.store.clone()).expect("pruner");
    let runner = Runner::new(h.clock.clone()).with_leader(leader.clone());
    let cancel = CancellationToken::new();
    let task = {
        let (p, c) = (pruner.clone(), cancel.clone());
        tokio::spawn(async move { runner.run(&p, c).await })
    };
    // Several intervals as a follower: the job stays.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        h.store.job_get(&j.id).await.unwrap().is_some(),
        "a follower pruned"
    );
    leader.set(true);
    let mut gone = false;
    for _ in 0..400 {
        if h.store.job_get(&j.id).await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    task.await.expect("pruner loop ends on cancel");
    assert!(gone, "the leader pruned the old job");
}

/// A pruned job's idempotency key is not forgotten with it: enqueuing with the key again
/// creates nothing (a conflict naming the pruned job) until the tombstone's own age
/// (`dedupe`, default 400 days) is up.
#[tokio::test]
async fn pruner_keeps_a_pruned_jobs_dedupe_key_until_its_own_age() {
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    let enqueue = || {
        h.kairos.job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("test".into()),
            payload: Some(serde_json::json!({"ok": true})),
            idempotency_key: Some("order-1".into()),
            ..Default::default()
        })
    };
    let (job, created) = enqueue().await.expect("enqueue");
    assert!(created);
    assert_eq!(h.exec(t0).await.succeeded, 1);
    let r = h.engine.pruner().run_once(t0 + days(8)).await.unwrap();
    assert_eq!(r.succeeded_jobs, 1, "{r:?}");
    assert!(h.store.job_get(&job.id).await.unwrap().is_none());
    let again = enqueue()
        .await
        .expect_err("the key of a pruned job creates nothing");
    assert!(again.to_string().contains("pruned"), "{again}");
    assert!(h.jobs().await.is_empty());
    // Past the tombstone's age the key is free again.
    let r = h.engine.pruner().run_once(t0 + days(402)).await.unwrap();
    assert_eq!(
        r.tables,
        vec![(kairos_store::RetentionTable::DedupeTombstones, 1)],
        "{r:?}"
    );
    let (_, created) = enqueue().await.expect("enqueue after the tombstone's age");
    assert!(created);
}

/// A batch enqueue whose second entry carries a pruned job's idempotency key fails whole
/// with a conflict that names the entry (`jobs[1]: …`), and creates none of its jobs.
#[tokio::test]
async fn batch_with_a_pruned_key_names_the_entry_and_creates_nothing() {
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    let new = |key: Option<&str>| kairos_engine::ops::NewJob {
        kind: Some("test".into()),
        payload: Some(serde_json::json!({"ok": true})),
        idempotency_key: key.map(str::to_string),
        ..Default::default()
    };
    h.kairos.job_enqueue(new(Some("order-1"))).await.unwrap();
    assert_eq!(h.exec(t0).await.succeeded, 1);
    let r = h.engine.pruner().run_once(t0 + days(8)).await.unwrap();
    assert_eq!(r.succeeded_jobs, 1, "{r:?}");
    let e = h
        .kairos
        .job_enqueue_many(vec![new(Some("order-2")), new(Some("order-1")), new(None)])
        .await
        .expect_err("a pruned key fails the batch");
    assert!(
        matches!(e.kind(), kairos_engine::OpsErrorKind::Conflict),
        "{e}"
    );
    assert!(e.to_string().starts_with("jobs[1]: "), "{e}");
    assert!(e.to_string().contains("pruned"), "{e}");
    assert!(
        h.jobs().await.is_empty(),
        "nothing of the batch was created"
    );
}

/// A batch that holds its transaction longer than `batch_time` makes the next one smaller in
/// proportion (down to the floor of 50), a run still deletes its budget of `batch` ×
/// `max_batches` jobs in them, and quick batches let the size grow back.
#[tokio::test]
async fn slow_prune_batches_shrink_and_quick_ones_grow_back() {
    use kairos_engine::pruner::{MIN_JOB_BATCH, Pruner};
    let t0 = t("2026-10-01T06:00:00Z");
    let h = Harness::new(t0, &[("test", script())]).await;
    for _ in 0..700 {
        h.enqueue("test", serde_json::json!({"ok": true}), None, None)
            .await;
    }
    let mut done = 0;
    for _ in 0..200 {
        let n = h.exec(t0).await.succeeded;
        if n == 0 {
            break;
        }
        done += n;
    }
    assert_eq!(done, 700);
    let counting = CountingStore::new(h.store.clone());
    *counting.prune_delay.lock().unwrap() = Duration::from_millis(80);
    let cfg = PrunerConfig {
        batch: 200,
        max_batches: 3,
        batch_time: Duration::from_millis(20),
        ..PrunerConfig::default()
    };
    let pruner = Pruner::new(cfg, counting.clone()).unwrap();
    let at = t0 + days(8);
    let r = pruner.run_once(at).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.more), (600, true), "{r:?}");
    let limits = std::mem::take(&mut *counting.prune_limits.lock().unwrap());
    // Dead jobs are a class of their own: their one (empty) batch comes after.
    let jobs: Vec<i64> = limits[..limits.len() - 1].to_vec();
    assert_eq!(jobs[0], 200, "{limits:?}");
    assert!(
        jobs[1..].iter().all(|l| *l == MIN_JOB_BATCH as i64),
        "a batch of 80 ms against 20 ms: a quarter, at least the floor: {limits:?}"
    );
    assert_eq!(jobs.iter().sum::<i64>(), 600, "{limits:?}");

    *counting.prune_delay.lock().unwrap() = Duration::ZERO;
    let r = pruner.run_once(at).await.unwrap();
    assert_eq!((r.succeeded_jobs, r.more), (100, false), "{r:?}");
    let limits = std::mem::take(&mut *counting.prune_limits.lock().unwrap());
    assert_eq!(&limits[..2], &[50, 100], "quick batches double: {limits:?}");
    assert!(h.jobs().await.is_empty());
}
