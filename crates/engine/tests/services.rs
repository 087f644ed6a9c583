//! The service runner (one loop for every background service) on a real SQLite file and a
//! manual clock: cancellation stops it, a leader-only service does not run on a node that does
//! not lead, and a failing run backs off and the loop goes on.

mod common;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::{Harness, TestHandler, t};
use kairos_core::JobState;
use kairos_engine::rescuer::{Rescuer, RescuerConfig};
use kairos_engine::service::{Backoff, Next, Runner, Service, Turn};
use kairos_store::{JobClaim, Leader, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A service over the real store: each run reads the next due time (a real query) and counts;
/// the first `fail_first` runs fail.
struct Probe {
    store: Arc<dyn Store>,
    interval: Duration,
    fail_first: usize,
    runs: AtomicUsize,
    ok: AtomicUsize,
    seen: std::sync::Mutex<Vec<DateTime<Utc>>>,
    cfg: RescuerConfig,
}

impl Probe {
    fn new(store: Arc<dyn Store>, interval: Duration, fail_first: usize) -> Arc<Self> {
        Arc::new(Probe {
            store,
            interval,
            fail_first,
            runs: AtomicUsize::new(0),
            ok: AtomicUsize::new(0),
            seen: Default::default(),
            cfg: RescuerConfig::default(),
        })
    }
}

#[async_trait]
impl Service for Probe {
    type Report = ();
    type Config = RescuerConfig;
    fn name(&self) -> &'static str {
        "probe"
    }
    fn config(&self) -> &RescuerConfig {
        &self.cfg
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<(), kairos_store::Error> {
        self.seen.lock().unwrap().push(now);
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        self.store.job_next_run_at().await?;
        if n < self.fail_first {
            return Err(kairos_store::Error::new(
                kairos_store::ErrorKind::Unavailable,
                "the database is away",
            ));
        }
        self.ok.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Wait (bounded) until `cond` holds.
async fn until(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..2000 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

#[tokio::test]
async fn runner_runs_at_the_clocks_now_and_stops_on_cancel() {
    let h = Harness::new(t("2026-12-01T08:00:00Z"), &[]).await;
    let probe = Probe::new(h.store.clone(), Duration::from_millis(1), 0);
    let cancel = CancellationToken::new();
    let task = {
        let (p, c) = (probe.clone(), cancel.clone());
        let runner = Runner::new(h.clock.clone());
        tokio::spawn(async move { runner.run(p.as_ref(), c).await })
    };
    assert!(
        until(|| probe.ok.load(Ordering::SeqCst) >= 3).await,
        "it ran"
    );
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the loop ends on cancel")
        .expect("no panic");
    let runs = probe.runs.load(Ordering::SeqCst);
    // Stopped: no run after the loop returned.
    tokio::task::yield_now().await;
    assert_eq!(probe.runs.load(Ordering::SeqCst), runs);
    assert!(
        probe
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|n| *n == t("2026-12-01T08:00:00Z")),
        "runs are at the injected clock's now"
    );
}

#[tokio::test]
async fn cancelled_runner_does_not_run_at_all() {
    let h = Harness::new(t("2026-12-01T08:00:00Z"), &[]).await;
    let probe = Probe::new(h.store.clone(), Duration::from_secs(3600), 0);
    let cancel = CancellationToken::new();
    cancel.cancel();
    Runner::new(h.clock.clone())
        .run(probe.as_ref(), cancel)
        .await;
    assert_eq!(probe.runs.load(Ordering::SeqCst), 0);
}

/// A job claimed with a lease that ended: what a crashed node leaves behind.
async fn expired_job(h: &Harness) -> String {
    let job = h.enqueue("test", serde_json::json!({}), None, None).await;
    let now = h.now();
    let claimed = h
        .store
        .job_claim(JobClaim {
            now,
            limit: 10,
            node: "crashed".into(),
            lease_token: "lease_x".into(),
            lease_until: now + chrono::Duration::seconds(30),
        })
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    h.clock.advance(chrono::Duration::minutes(5));
    job.id
}

#[tokio::test]
async fn a_node_that_does_not_lead_does_not_run_a_leader_only_service() {
    let h = Harness::new(t("2026-12-01T08:00:00Z"), &[("test", TestHandler::ok())]).await;
    let id = expired_job(&h).await;
    let rescuer =
        Rescuer::new(RescuerConfig::default(), h.store.clone(), h.clock.clone()).expect("rescuer");
    let leader = Leader::follower();
    let runner = Runner::new(h.clock.clone()).with_leader(leader.clone());
    let mut backoff = Backoff::default();
    assert_eq!(
        runner.turn(&rescuer, &mut backoff).await,
        Turn::NotLeader(RescuerConfig::default().interval)
    );
    assert_eq!(
        h.job(&id).await.state,
        JobState::Running,
        "a follower rescued"
    );
    // A service that is not leader-only runs on a follower.
    let probe = Probe::new(h.store.clone(), Duration::from_secs(1), 0);
    assert!(matches!(
        runner.turn(probe.as_ref(), &mut backoff).await,
        Turn::Ran(_)
    ));
    // Once the node leads, the rescuer runs, and wakes the executor.
    leader.set(true);
    let on_jobs = Arc::new(tokio::sync::Notify::new());
    let runner = runner.with_on_jobs(on_jobs.clone());
    assert_eq!(
        runner.turn(&rescuer, &mut backoff).await,
        Turn::Ran(Next::In(RescuerConfig::default().interval))
    );
    assert_eq!(h.job(&id).await.state, JobState::Available);
    tokio::time::timeout(Duration::from_secs(30), on_jobs.notified())
        .await
        .expect("the executor was woken");
}

#[tokio::test]
async fn a_failing_run_backs_off_and_the_loop_goes_on() {
    let h = Harness::new(t("2026-12-01T08:00:00Z"), &[]).await;
    let s = Duration::from_secs;
    // Turn by turn: the wait doubles while runs fail, and is the interval again after a success.
    let probe = Probe::new(h.store.clone(), s(2), 3);
    let runner = Runner::new(h.clock.clone());
    let mut b = Backoff::new(s(5));
    let mut turns = Vec::new();
    for _ in 0..5 {
        turns.push(runner.turn(probe.as_ref(), &mut b).await);
    }
    assert_eq!(
        turns,
        vec![
            Turn::Failed(s(2)),
            Turn::Failed(s(4)),
            Turn::Failed(s(5)),
            Turn::Ran(Next::In(s(2))),
            Turn::Ran(Next::In(s(2))),
        ]
    );
    assert_eq!(b.failures(), 0);

    // The loop: failures do not end it; it runs again and succeeds.
    let probe = Probe::new(h.store.clone(), Duration::from_millis(1), 3);
    let cancel = CancellationToken::new();
    let task = {
        let (p, c) = (probe.clone(), cancel.clone());
        let runner = Runner::new(h.clock.clone()).with_max_backoff(Duration::from_millis(4));
        tokio::spawn(async move { runner.run(p.as_ref(), c).await })
    };
    assert!(
        until(|| probe.ok.load(Ordering::SeqCst) >= 2).await,
        "the loop went on after failed runs"
    );
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("ends on cancel")
        .expect("no panic");
    assert!(probe.runs.load(Ordering::SeqCst) >= 5);
}

/// A runner told to wait before its first turn runs nothing before then, not even when woken,
/// and a cancellation during the wait ends it at once.
#[tokio::test]
async fn a_first_turn_after_a_delay_waits_for_it_even_when_woken() {
    let h = Harness::new(t("2026-12-01T08:00:00Z"), &[]).await;
    let probe = Probe::new(h.store.clone(), Duration::from_millis(1), 0);
    let wake = Arc::new(tokio::sync::Notify::new());
    let cancel = CancellationToken::new();
    let began = std::time::Instant::now();
    let task = {
        let (p, c) = (probe.clone(), cancel.clone());
        let runner = Runner::new(h.clock.clone())
            .with_wake(wake.clone())
            .with_first_turn_after(Duration::from_millis(400));
        tokio::spawn(async move { runner.run(p.as_ref(), c).await })
    };
    wake.notify_one();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probe.runs.load(Ordering::SeqCst), 0, "not before the delay");
    assert!(
        until(|| probe.runs.load(Ordering::SeqCst) >= 1).await,
        "it runs after the delay"
    );
    assert!(began.elapsed() >= Duration::from_millis(400));
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("ends on cancel")
        .expect("no panic");

    // Cancelled while it waits: it returns without a run.
    let probe = Probe::new(h.store.clone(), Duration::from_millis(1), 0);
    let cancel = CancellationToken::new();
    let task = {
        let (p, c) = (probe.clone(), cancel.clone());
        let runner = Runner::new(h.clock.clone()).with_first_turn_after(Duration::from_secs(3600));
        tokio::spawn(async move { runner.run(p.as_ref(), c).await })
    };
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("ends on cancel during the wait")
        .expect("no panic");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 0);
}

/// A node started with work runs its first job before the housekeeping services' first turn:
/// the monitor's first pass comes `housekeeping_delay` after the start, not with the first
/// claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn housekeeping_waits_for_its_delay_while_the_queue_runs_at_once() {
    let start = t("2026-12-01T08:00:00Z");
    let cfg = kairos_engine::EngineConfig {
        housekeeping_delay: Duration::from_millis(1500),
        ..Default::default()
    };
    let h = Harness::with_config(start, cfg, &[("test", TestHandler::ok())]).await;
    let job = h.enqueue("test", serde_json::json!({}), None, None).await;
    let cancel = CancellationToken::new();
    let began = std::time::Instant::now();
    let run = {
        let (engine, cancel) = (h.engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let mut done = false;
    for _ in 0..2000 {
        let state = h.store.job_get(&job.id).await.unwrap().unwrap().state;
        if state == JobState::Succeeded {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(done, "the job ran");
    let pass_when_done = h.store.monitor_pass_last().await.unwrap();
    let ran_within = began.elapsed();
    if ran_within < Duration::from_millis(1400) {
        assert_eq!(pass_when_done, None, "no monitor pass before the delay");
    }
    let mut passed = false;
    for _ in 0..2000 {
        if h.store.monitor_pass_last().await.unwrap().is_some() {
            passed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(passed, "the monitor's first pass after the delay");
    assert!(began.elapsed() >= Duration::from_millis(1500));
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the engine stops")
        .expect("no panic");
}

/// The delay is bounded and named when it is not.
#[test]
fn a_housekeeping_delay_over_ten_minutes_is_refused_naming_the_field() {
    let cfg = kairos_engine::EngineConfig {
        housekeeping_delay: Duration::from_secs(601),
        ..Default::default()
    };
    let e = cfg.validate().expect_err("too long");
    assert!(e.to_string().contains("housekeeping_delay"), "{e}");
    assert_eq!(
        kairos_engine::EngineConfig::default().housekeeping_delay,
        Duration::from_secs(1)
    );
}
