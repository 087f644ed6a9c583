//! Maintenance mode in the engine: while on, the executor and the scheduler claim
//! nothing — in `run_once` and in the running loops — and when it ends the waiting work runs.

mod common;

use common::{Harness, TestHandler, new_schedule, t};
use kairos_core::JobState;
use kairos_engine::maintenance::Maintenance;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_stops_claims_and_firings_until_it_ends() {
    let h = TestHandler::ok();
    let mut w = Harness::new(t("2026-11-30T00:00:00Z"), &[("test", h.clone())]).await;
    let m = Maintenance::new(false);
    w.engine = w.engine.clone().with_maintenance(m.clone());
    let kairos = w.kairos.clone().with_maintenance(m.clone());
    let job = w.enqueue("test", serde_json::json!({}), None, None).await;
    let mut s = new_schedule("every-minute", "test");
    s.cron = Some("* * * * *".into());
    kairos.schedule_create(s).await.expect("schedule");

    kairos.maintenance_set(true).await.expect("on");
    assert!(m.is_on());
    let later = t("2026-11-30T00:05:00Z");
    assert_eq!(w.exec(later).await.claimed, 0);
    assert_eq!(w.sched(later).await, Default::default());
    assert_eq!(w.job(&job.id).await.state, JobState::Available);

    // The running loops: nothing is claimed while on (the job stays available)…
    let cancel = CancellationToken::new();
    let run = {
        let (e, c) = (w.engine.clone(), cancel.clone());
        tokio::spawn(async move { e.run(c).await })
    };
    w.engine.wake().notify_one();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.calls_for(&job.id), 0, "claimed during maintenance");

    // …and once it ends (another node turned it off: this node's flag follows), it runs.
    kairos.maintenance_set(false).await.expect("off");
    assert!(!m.is_on());
    w.engine.wake().notify_one();
    let mut done = false;
    for _ in 0..400 {
        if w.job(&job.id).await.state == JobState::Succeeded {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    cancel.cancel();
    let _ = run.await;
    assert!(done, "the job did not run after maintenance ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_maintenance_cannot_be_turned_off_from_the_database() {
    let w = Harness::new(t("2026-11-30T00:00:00Z"), &[]).await;
    let m = Maintenance::new(true);
    let kairos = w.kairos.clone().with_maintenance(m.clone());
    let s = kairos.maintenance_set(false).await.expect("off");
    assert!(s.on && s.forced && !s.stored);
    let s = kairos.maintenance_set(true).await.expect("on");
    assert!(s.stored && s.since.is_some());
    // Another process's setting reaches this node through refresh (what `watch` runs).
    let other = Maintenance::new(false);
    assert!(other.refresh(w.store.as_ref()).await.expect("refresh"));
}

/// The harness's manual clock, counting how often it is read.
struct CountingClock {
    inner: std::sync::Arc<kairos_core::ManualClock>,
    reads: std::sync::atomic::AtomicUsize,
}

impl kairos_core::Clock for CountingClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        kairos_core::Clock::now(self.inner.as_ref())
    }
}

/// The watch runs on the clock it is given (the node's), not the system clock, and brings
/// another node's stored setting to this node's flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_watch_runs_on_the_injected_clock_and_follows_the_stored_setting() {
    let w = Harness::new(t("2026-11-30T00:00:00Z"), &[]).await;
    let clock = std::sync::Arc::new(CountingClock {
        inner: w.clock.clone(),
        reads: Default::default(),
    });
    let mine = Maintenance::new(false);
    let cancel = CancellationToken::new();
    let watch = tokio::spawn(mine.clone().watch(
        w.store.clone(),
        clock.clone(),
        Duration::from_millis(20),
        cancel.clone(),
    ));
    // Another node (its own flag) turns maintenance on in the database.
    let other = w.kairos.clone().with_maintenance(Maintenance::new(false));
    other.maintenance_set(true).await.expect("on");
    let mut seen = false;
    for _ in 0..250 {
        if mine.is_on() {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    watch.await.expect("the watch ends when cancelled");
    assert!(
        seen,
        "the watch did not bring the stored setting within 5 s"
    );
    let reads = clock.reads.load(std::sync::atomic::Ordering::Relaxed);
    assert!(reads > 0, "the watch never read the clock it was given");
}
