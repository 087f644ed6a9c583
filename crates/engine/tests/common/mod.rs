//! Shared set-up of the engine tests: a real SQLite file per test (in a tempdir), a manual
//! clock, an engine built with `Engine::new`, the `Kairos` facade, and scriptable handlers.
#![allow(dead_code)]

use async_trait::async_trait;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use kairos_channels::WebhookConfig;
use kairos_core::retry::RetrySpec;
use kairos_core::{Clock, Job, JobState, ManualClock, Outcome};
use kairos_engine::executor::ExecutorReport;
use kairos_engine::handlers::builtin;
use kairos_engine::ops::{NewJob, NewSchedule, WebhookTarget};
use kairos_engine::rescuer::RescuerReport;
use kairos_engine::scheduler::SchedulerReport;
use kairos_engine::{Engine, EngineConfig, Handler, JobContext, Kairos, KindSettings, Kinds};
use kairos_store::prelude::*;
use kairos_store::{
    Attempt, CompleteReport, Endpoint, EndpointDisable, EndpointUpsert, JobCancel, JobClaim,
    JobComplete, JobInsert, JobInserted, JobLeaseRenew, JobList, JobRescue, JobRetry, Schedule,
    ScheduleCreate, ScheduleDue, ScheduleFire, ScheduleFired, ScheduleList, SchedulePause,
    ScheduleRelease, ScheduleUpdate, Store,
};
use kairos_store_sqlite::SqliteStore;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

/// The Standard Webhooks specification's example secret.
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An RFC 3339 instant.
pub fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .to_utc()
}

/// `t` as RFC 3339 with milliseconds (what the facade accepts).
pub fn rfc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn ms(n: i64) -> Duration {
    Duration::milliseconds(n)
}
pub fn secs(n: i64) -> Duration {
    Duration::seconds(n)
}
pub fn mins(n: i64) -> Duration {
    Duration::minutes(n)
}

type Script = dyn Fn(&Job, usize) -> Outcome + Send + Sync;

/// A custom handler driven by a closure `(job, calls of this job before) -> Outcome`. It
/// records every call (job ids in the order the handler saw them), can sleep before
/// answering, and has a configurable timeout. A closure that panics is a panicking handler.
pub struct TestHandler {
    script: Box<Script>,
    delay: std::time::Duration,
    timeout: std::time::Duration,
    calls: Mutex<Vec<String>>,
    payloads: Mutex<Vec<serde_json::Value>>,
    started: AtomicUsize,
    finished: AtomicUsize,
}

impl TestHandler {
    pub fn new(script: impl Fn(&Job, usize) -> Outcome + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self::build(script))
    }
    fn build(script: impl Fn(&Job, usize) -> Outcome + Send + Sync + 'static) -> Self {
        TestHandler {
            script: Box::new(script),
            delay: std::time::Duration::ZERO,
            timeout: std::time::Duration::from_secs(10),
            calls: Mutex::new(Vec::new()),
            payloads: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
        }
    }
    /// Always succeeds.
    pub fn ok() -> Arc<Self> {
        Self::new(|_, _| Outcome::ok())
    }
    /// Sleeps `delay` before answering, under `timeout`.
    pub fn slow(
        delay: std::time::Duration,
        timeout: std::time::Duration,
        script: impl Fn(&Job, usize) -> Outcome + Send + Sync + 'static,
    ) -> Arc<Self> {
        let mut h = Self::build(script);
        h.delay = delay;
        h.timeout = timeout;
        Arc::new(h)
    }
    /// Job ids in the order the handler was called.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
    /// Payloads in the order the handler was called.
    pub fn payloads(&self) -> Vec<serde_json::Value> {
        self.payloads.lock().unwrap().clone()
    }
    /// How many times `job_id` was run.
    pub fn calls_for(&self, job_id: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| *c == job_id)
            .count()
    }
    /// Calls per job id.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for c in self.calls() {
            *m.entry(c).or_insert(0) += 1;
        }
        m
    }
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }
    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Handler for TestHandler {
    async fn handle(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        let before = {
            let mut calls = self.calls.lock().unwrap();
            let before = calls.iter().filter(|c| **c == job.id).count();
            calls.push(job.id.clone());
            self.payloads.lock().unwrap().push(job.payload.clone());
            before
        };
        self.started.fetch_add(1, Ordering::SeqCst);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let out = (self.script)(job, before);
        self.finished.fetch_add(1, Ordering::SeqCst);
        out
    }
    fn timeout(&self) -> std::time::Duration {
        self.timeout
    }
}

/// One test's world: a SQLite file in a tempdir, a manual clock, an engine and the facade.
pub struct Harness {
    pub dir: TempDir,
    pub store: Arc<dyn Store>,
    pub clock: Arc<ManualClock>,
    pub engine: Engine,
    pub kairos: Kairos,
}

/// A fresh SQLite store in a new tempdir.
pub async fn open_store() -> (TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open sqlite");
    (dir, Arc::new(store))
}

/// The built-in kinds with their handlers (webhook, http, digest; private targets allowed
/// for the test receiver), with `custom` handlers for the kinds they name.
pub fn registry_with(
    store: &Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    custom: &[(&'static str, Arc<dyn Handler>)],
) -> Kinds {
    kairos_testkit::init_crypto();
    let mut k = builtin(KindSettings::new(
        store.clone(),
        clock,
        WebhookConfig {
            allow_private_targets: true,
            ..Default::default()
        },
    ))
    .expect("built-in kinds");
    for (kind, h) in custom {
        k = k.with_handler(kind, h.clone());
    }
    k
}

impl Harness {
    pub async fn new(start: DateTime<Utc>, custom: &[(&'static str, Arc<dyn Handler>)]) -> Self {
        Self::with_config(start, EngineConfig::default(), custom).await
    }

    pub async fn with_config(
        start: DateTime<Utc>,
        cfg: EngineConfig,
        custom: &[(&'static str, Arc<dyn Handler>)],
    ) -> Self {
        let (dir, store) = open_store().await;
        let clock = Arc::new(ManualClock::new(start));
        let registry = registry_with(&store, clock.clone(), custom);
        let kinds = std::sync::Arc::new(registry.clone());
        let engine = Engine::new(cfg, store.clone(), clock.clone(), kinds.clone()).expect("engine");
        let kairos = Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds)
            .allow_private_targets(true);
        Harness {
            dir,
            store,
            clock,
            engine,
            kairos,
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Set the clock to `at` and run one scheduler tick there.
    pub async fn sched(&self, at: DateTime<Utc>) -> SchedulerReport {
        self.clock.set(at);
        self.engine
            .scheduler()
            .run_once(at)
            .await
            .expect("scheduler tick")
    }

    /// Set the clock to `at` and run the executor once there.
    pub async fn exec(&self, at: DateTime<Utc>) -> ExecutorReport {
        self.clock.set(at);
        self.engine
            .executor()
            .run_once(at)
            .await
            .expect("executor run")
    }

    /// Set the clock to `at` and run the rescuer once there.
    pub async fn rescue(&self, at: DateTime<Utc>) -> RescuerReport {
        self.clock.set(at);
        self.engine
            .rescuer()
            .run_once(at)
            .await
            .expect("rescuer run")
    }

    /// Enqueue a job of `kind` through the facade.
    pub async fn enqueue(
        &self,
        kind: &str,
        payload: serde_json::Value,
        run_at: Option<DateTime<Utc>>,
        retry: Option<RetrySpec>,
    ) -> Job {
        let (job, created) = self
            .kairos
            .job_enqueue(NewJob {
                kind: Some(kind.into()),
                payload: Some(payload),
                run_at: run_at.map(rfc),
                retry,
                ..Default::default()
            })
            .await
            .expect("enqueue");
        assert!(created);
        job
    }

    /// Enqueue a webhook job to `url` signed with [`SECRET`].
    pub async fn enqueue_webhook(&self, url: &str, payload: serde_json::Value) -> Job {
        let (job, created) = self
            .kairos
            .job_enqueue(NewJob {
                kind: Some("webhook".into()),
                webhook: Some(WebhookTarget {
                    url: url.into(),
                    secret: SECRET.into(),
                }),
                payload: Some(payload),
                ..Default::default()
            })
            .await
            .expect("enqueue webhook");
        assert!(created);
        job
    }

    pub async fn job(&self, id: &str) -> Job {
        self.store
            .job_get(id)
            .await
            .expect("job get")
            .expect("job exists")
    }

    pub async fn attempts(&self, id: &str) -> Vec<Attempt> {
        self.store.attempt_list(id).await.expect("attempt list")
    }

    /// Every job (oldest id first).
    pub async fn jobs(&self) -> Vec<Job> {
        let mut v = self
            .store
            .job_list(JobList {
                limit: Some(10_000),
                ..Default::default()
            })
            .await
            .expect("job list");
        v.reverse();
        v
    }

    /// The jobs of a schedule, by nominal firing time.
    pub async fn schedule_jobs(&self, schedule_id: &str) -> Vec<Job> {
        let mut v = self
            .store
            .job_list(JobList {
                schedule_id: Some(schedule_id.into()),
                limit: Some(10_000),
                ..Default::default()
            })
            .await
            .expect("job list");
        v.sort_by_key(|j| j.fire_at);
        v
    }

    pub async fn count_in_state(&self, state: JobState) -> usize {
        self.jobs()
            .await
            .iter()
            .filter(|j| j.state == state)
            .count()
    }
}

/// A schedule request with only the fields most tests need.
pub fn new_schedule(name: &str, kind: &str) -> NewSchedule {
    NewSchedule {
        name: name.into(),
        cron: None,
        at: None,
        every: None,
        start_at: None,
        timezone: None,
        kind: Some(kind.into()),
        channels: None,
        webhook: None,
        payload: None,
        retry: None,
        misfire: None,
        misfire_threshold: None,
        misfire_window: None,
        overlap: None,
        period: None,
        paused: None,
        catch_up: None,
        topic: None,
        concurrency: None,
        parts: Default::default(),
    }
}

/// `{"max_attempts": n}` with the kind's default delays.
pub fn max_attempts(n: u32) -> RetrySpec {
    RetrySpec {
        max_attempts: Some(n),
        ..Default::default()
    }
}

/// The real SQLite store, counting how often the scheduler's and executor's polling queries
/// are made (to catch a service spinning on the database). Everything is delegated.
pub struct CountingStore {
    pub inner: Arc<dyn Store>,
    pub schedule_due_calls: AtomicUsize,
    pub job_claim_calls: AtomicUsize,
    /// Claims wait for a read guard, as completions do for `complete_gate`.
    pub claim_gate: tokio::sync::RwLock<()>,
    /// Claims started and not yet returned, and the most seen at once.
    pub claims_in_flight: AtomicUsize,
    pub claims_in_flight_max: AtomicUsize,
    /// Completions wait for a read guard: a test holding the write guard holds every commit
    /// of outcomes back (the completion is then in flight, not yet recorded).
    pub complete_gate: tokio::sync::RwLock<()>,
    /// Completion writes started and not yet returned, and the most seen at once.
    pub completes_in_flight: AtomicUsize,
    pub completes_in_flight_max: AtomicUsize,
    /// Each `job_prune` takes at least this long (a slow delete), and its limit is recorded.
    pub prune_delay: std::sync::Mutex<std::time::Duration>,
    pub prune_limits: std::sync::Mutex<Vec<i64>>,
    pub endpoint_upserts: AtomicUsize,
    /// The ranges of the job table `topic_count_range` counted, in order.
    pub topic_ranges: std::sync::Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
    /// The ranges of the job table `job_count_decided` counted, in order.
    pub decided_ranges: std::sync::Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
    /// The ranges of the job table `job_count_finished` counted, in order.
    pub finished_ranges: std::sync::Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
    /// The ranges of quarters `quarter_count_sum` summed, in order.
    pub sum_ranges: std::sync::Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
    /// Quarters whose next `quarter_count_record` leaves them uncounted and returns false, as
    /// the store does when their jobs kept being retried while it read them.
    pub quarters_left: std::sync::Mutex<Vec<DateTime<Utc>>>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(CountingStore {
            inner,
            schedule_due_calls: AtomicUsize::new(0),
            job_claim_calls: AtomicUsize::new(0),
            claim_gate: tokio::sync::RwLock::new(()),
            claims_in_flight: AtomicUsize::new(0),
            claims_in_flight_max: AtomicUsize::new(0),
            complete_gate: tokio::sync::RwLock::new(()),
            completes_in_flight: AtomicUsize::new(0),
            completes_in_flight_max: AtomicUsize::new(0),
            prune_delay: Default::default(),
            prune_limits: Default::default(),
            endpoint_upserts: AtomicUsize::new(0),
            topic_ranges: std::sync::Mutex::new(Vec::new()),
            decided_ranges: std::sync::Mutex::new(Vec::new()),
            finished_ranges: std::sync::Mutex::new(Vec::new()),
            sum_ranges: std::sync::Mutex::new(Vec::new()),
            quarters_left: std::sync::Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl JobStore for CountingStore {
    async fn job_insert(&self, p: JobInsert) -> kairos_store::Result<JobInserted> {
        self.inner.job_insert(p).await
    }
    async fn job_insert_many(&self, p: Vec<JobInsert>) -> kairos_store::Result<Vec<String>> {
        self.inner.job_insert_many(p).await
    }
    async fn job_insert_batch(&self, p: Vec<JobInsert>) -> kairos_store::Result<Vec<JobInserted>> {
        self.inner.job_insert_batch(p).await
    }
    async fn job_get(&self, id: &str) -> kairos_store::Result<Option<Job>> {
        self.inner.job_get(id).await
    }
    async fn job_claim(&self, p: JobClaim) -> kairos_store::Result<Vec<Job>> {
        self.job_claim_calls.fetch_add(1, Ordering::SeqCst);
        let now = self.claims_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.claims_in_flight_max.fetch_max(now, Ordering::SeqCst);
        let claimed = {
            let _open = self.claim_gate.read().await;
            self.inner.job_claim(p).await
        };
        self.claims_in_flight.fetch_sub(1, Ordering::SeqCst);
        claimed
    }
    async fn job_lease_renew(&self, p: JobLeaseRenew) -> kairos_store::Result<u64> {
        self.inner.job_lease_renew(p).await
    }
    async fn job_complete_many(&self, p: Vec<JobComplete>) -> kairos_store::Result<CompleteReport> {
        let now = self.completes_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.completes_in_flight_max
            .fetch_max(now, Ordering::SeqCst);
        let done = {
            let _open = self.complete_gate.read().await;
            self.inner.job_complete_many(p).await
        };
        self.completes_in_flight.fetch_sub(1, Ordering::SeqCst);
        done
    }
    async fn job_rescue(&self, p: JobRescue) -> kairos_store::Result<Vec<String>> {
        self.inner.job_rescue(p).await
    }
    async fn job_next_run_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.job_next_run_at().await
    }
    async fn job_prune(
        &self,
        p: kairos_store::JobPrune,
    ) -> kairos_store::Result<kairos_store::JobPruned> {
        self.prune_limits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.limit);
        let delay = *self.prune_delay.lock().unwrap_or_else(|e| e.into_inner());
        let r = self.inner.job_prune(p).await;
        tokio::time::sleep(delay).await;
        r
    }
    async fn retention_prune(&self, p: kairos_store::RetentionPrune) -> kairos_store::Result<u64> {
        self.inner.retention_prune(p).await
    }
}

#[async_trait]
impl JobAdminStore for CountingStore {
    async fn job_list(&self, p: JobList) -> kairos_store::Result<Vec<Job>> {
        self.inner.job_list(p).await
    }
    async fn job_search(&self, p: kairos_store::JobSearch) -> kairos_store::Result<Vec<Job>> {
        self.inner.job_search(p).await
    }
    async fn delivery_list(
        &self,
        p: kairos_store::DeliveryList,
    ) -> kairos_store::Result<Vec<kairos_store::Delivery>> {
        self.inner.delivery_list(p).await
    }
    async fn job_cancel(&self, p: JobCancel) -> kairos_store::Result<Option<Job>> {
        self.inner.job_cancel(p).await
    }
    async fn job_retry(&self, p: JobRetry) -> kairos_store::Result<Option<Job>> {
        self.inner.job_retry(p).await
    }
    async fn job_bulk_cancel(
        &self,
        p: kairos_store::JobBulkCancel,
    ) -> kairos_store::Result<kairos_store::JobBulkDone> {
        self.inner.job_bulk_cancel(p).await
    }
    async fn job_bulk_retry(
        &self,
        p: kairos_store::JobBulkRetry,
    ) -> kairos_store::Result<kairos_store::JobBulkDone> {
        self.inner.job_bulk_retry(p).await
    }
    async fn attempt_list(&self, job_id: &str) -> kairos_store::Result<Vec<Attempt>> {
        self.inner.attempt_list(job_id).await
    }
    async fn occurrence_list(
        &self,
        p: kairos_store::OccurrenceList,
    ) -> kairos_store::Result<Vec<kairos_store::OccurrenceCount>> {
        self.inner.occurrence_list(p).await
    }
}

#[async_trait]
impl ScheduleStore for CountingStore {
    async fn schedule_create(&self, p: ScheduleCreate) -> kairos_store::Result<Schedule> {
        self.inner.schedule_create(p).await
    }
    async fn schedule_get(&self, id: &str) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_get(id).await
    }
    async fn schedule_list(&self, p: ScheduleList) -> kairos_store::Result<Vec<Schedule>> {
        self.inner.schedule_list(p).await
    }
    async fn schedule_update(&self, p: ScheduleUpdate) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_update(p).await
    }
    async fn schedule_pause(&self, p: SchedulePause) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_pause(p).await
    }
    async fn schedule_delete(&self, id: &str) -> kairos_store::Result<bool> {
        self.inner.schedule_delete(id).await
    }
    async fn schedule_release(&self, p: ScheduleRelease) -> kairos_store::Result<u64> {
        self.inner.schedule_release(p).await
    }

    async fn schedule_due(&self, p: ScheduleDue) -> kairos_store::Result<Vec<Schedule>> {
        self.schedule_due_calls.fetch_add(1, Ordering::SeqCst);
        self.inner.schedule_due(p).await
    }
    async fn schedule_fire(&self, p: ScheduleFire) -> kairos_store::Result<ScheduleFired> {
        self.inner.schedule_fire(p).await
    }
    async fn schedule_next_fire_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.schedule_next_fire_at().await
    }
    async fn catch_up_set(&self, p: kairos_store::CatchUpSet) -> kairos_store::Result<()> {
        self.inner.catch_up_set(p).await
    }
    async fn catch_up_list(
        &self,
        schedule_id: &str,
    ) -> kairos_store::Result<Vec<kairos_store::CatchUp>> {
        self.inner.catch_up_list(schedule_id).await
    }
    async fn catch_up_due(
        &self,
        p: kairos_store::CatchUpDue,
    ) -> kairos_store::Result<Vec<kairos_store::CatchUp>> {
        self.inner.catch_up_due(p).await
    }
    async fn catch_up_next_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.catch_up_next_at().await
    }
    async fn catch_up_fire(
        &self,
        p: kairos_store::CatchUpFire,
    ) -> kairos_store::Result<ScheduleFired> {
        self.inner.catch_up_fire(p).await
    }
    async fn schedule_gap_list(
        &self,
        p: kairos_store::ScheduleGapList,
    ) -> kairos_store::Result<Vec<kairos_store::ScheduleGap>> {
        self.inner.schedule_gap_list(p).await
    }
    async fn schedule_buffered(
        &self,
        p: kairos_store::ScheduleBuffered,
    ) -> kairos_store::Result<Vec<kairos_store::Schedule>> {
        self.inner.schedule_buffered(p).await
    }
    async fn schedule_buffer_fire(
        &self,
        p: kairos_store::ScheduleBufferFire,
    ) -> kairos_store::Result<kairos_store::ScheduleFired> {
        self.inner.schedule_buffer_fire(p).await
    }
    async fn occurrence_open(
        &self,
        p: kairos_store::OccurrenceOpen,
    ) -> kairos_store::Result<Vec<String>> {
        self.inner.occurrence_open(p).await
    }
}

#[async_trait]
impl EndpointStore for CountingStore {
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> kairos_store::Result<Endpoint> {
        self.endpoint_upserts.fetch_add(1, Ordering::SeqCst);
        self.inner.endpoint_upsert(p).await
    }
    async fn endpoint_get(&self, id: &str) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_get(id).await
    }
    async fn endpoint_limits_set(
        &self,
        p: kairos_store::flow::EndpointLimitsSet,
    ) -> kairos_store::Result<Option<kairos_store::flow::EndpointLimits>> {
        self.inner.endpoint_limits_set(p).await
    }
    async fn endpoint_limits_list(
        &self,
        ids: Vec<String>,
    ) -> kairos_store::Result<Vec<kairos_store::flow::EndpointLimits>> {
        self.inner.endpoint_limits_list(ids).await
    }
    async fn host_limits_set(
        &self,
        p: kairos_store::flow::HostLimitsSet,
    ) -> kairos_store::Result<kairos_store::flow::HostLimits> {
        self.inner.host_limits_set(p).await
    }
    async fn host_limits_list(
        &self,
        origins: Vec<String>,
    ) -> kairos_store::Result<Vec<kairos_store::flow::HostLimits>> {
        self.inner.host_limits_list(origins).await
    }
    async fn endpoint_list(
        &self,
        p: kairos_store::EndpointList,
    ) -> kairos_store::Result<Vec<Endpoint>> {
        self.inner.endpoint_list(p).await
    }
    async fn endpoint_disable(&self, p: EndpointDisable) -> kairos_store::Result<()> {
        self.inner.endpoint_disable(p).await
    }
    async fn endpoint_enable(
        &self,
        p: kairos_store::EndpointEnable,
    ) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_enable(p).await
    }
    async fn endpoint_failure_record(
        &self,
        p: kairos_store::EndpointFailureRecord,
    ) -> kairos_store::Result<()> {
        self.inner.endpoint_failure_record(p).await
    }
    async fn endpoint_health_flush(
        &self,
        p: kairos_store::EndpointHealthFlush,
    ) -> kairos_store::Result<kairos_store::EndpointHealthFlushed> {
        self.inner.endpoint_health_flush(p).await
    }
    async fn endpoint_health_counts(
        &self,
        p: kairos_store::EndpointHealthCounts,
    ) -> kairos_store::Result<Vec<kairos_store::EndpointHealthCount>> {
        self.inner.endpoint_health_counts(p).await
    }
    async fn endpoint_streak_disable(
        &self,
        p: kairos_store::EndpointStreakDisable,
    ) -> kairos_store::Result<Vec<String>> {
        self.inner.endpoint_streak_disable(p).await
    }
    async fn endpoint_secret_rotate(
        &self,
        p: kairos_store::EndpointSecretRotate,
    ) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_secret_rotate(p).await
    }
    async fn http_target_upsert(
        &self,
        p: kairos_store::HttpTargetUpsert,
    ) -> kairos_store::Result<kairos_store::HttpTarget> {
        self.inner.http_target_upsert(p).await
    }
    async fn http_target_get(
        &self,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::HttpTarget>> {
        self.inner.http_target_get(id).await
    }
}

#[async_trait]
impl AudienceStore for CountingStore {
    async fn recipient_upsert(
        &self,
        p: kairos_store::RecipientUpsert,
    ) -> kairos_store::Result<kairos_store::Recipient> {
        self.inner.recipient_upsert(p).await
    }
    async fn recipient_upsert_many(
        &self,
        p: Vec<kairos_store::RecipientUpsert>,
    ) -> kairos_store::Result<u64> {
        self.inner.recipient_upsert_many(p).await
    }
    async fn recipient_get(
        &self,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::Recipient>> {
        self.inner.recipient_get(id).await
    }
    async fn recipient_list(
        &self,
        p: kairos_store::RecipientList,
    ) -> kairos_store::Result<Vec<kairos_store::Recipient>> {
        self.inner.recipient_list(p).await
    }
    async fn recipient_erase(
        &self,
        p: kairos_store::RecipientErase,
    ) -> kairos_store::Result<Option<kairos_store::RecipientErased>> {
        self.inner.recipient_erase(p).await
    }
    async fn topic_put(
        &self,
        p: kairos_store::TopicPut,
    ) -> kairos_store::Result<kairos_store::Topic> {
        self.inner.topic_put(p).await
    }
    async fn topic_get(&self, name: &str) -> kairos_store::Result<Option<kairos_store::Topic>> {
        self.inner.topic_get(name).await
    }
    async fn topic_list(&self) -> kairos_store::Result<Vec<kairos_store::Topic>> {
        self.inner.topic_list().await
    }
    async fn topic_delete(&self, name: &str) -> kairos_store::Result<bool> {
        self.inner.topic_delete(name).await
    }
    async fn subscription_put(
        &self,
        p: kairos_store::SubscriptionPut,
    ) -> kairos_store::Result<kairos_store::Subscription> {
        self.inner.subscription_put(p).await
    }
    async fn subscription_get(
        &self,
        r: &str,
        t: &str,
    ) -> kairos_store::Result<Option<kairos_store::Subscription>> {
        self.inner.subscription_get(r, t).await
    }
    async fn subscription_list(
        &self,
        p: kairos_store::SubscriptionList,
    ) -> kairos_store::Result<Vec<kairos_store::Subscription>> {
        self.inner.subscription_list(p).await
    }
    async fn subscription_disable(
        &self,
        p: kairos_store::SubscriptionDisable,
    ) -> kairos_store::Result<bool> {
        self.inner.subscription_disable(p).await
    }
    async fn subscription_delete(
        &self,
        p: kairos_store::SubscriptionDelete,
    ) -> kairos_store::Result<bool> {
        self.inner.subscription_delete(p).await
    }
}

#[async_trait]
impl DeliveryStore for CountingStore {
    async fn suppression_add(&self, p: kairos_store::SuppressionAdd) -> kairos_store::Result<bool> {
        self.inner.suppression_add(p).await
    }
    async fn suppression_apply(
        &self,
        p: kairos_store::SuppressionApply,
    ) -> kairos_store::Result<kairos_store::SuppressionApplied> {
        self.inner.suppression_apply(p).await
    }
    async fn suppression_get(
        &self,
        a: &str,
    ) -> kairos_store::Result<Option<kairos_store::Suppression>> {
        self.inner.suppression_get(a).await
    }
    async fn suppression_list(
        &self,
        p: kairos_store::SuppressionList,
    ) -> kairos_store::Result<Vec<kairos_store::Suppression>> {
        self.inner.suppression_list(p).await
    }
    async fn suppression_remove(
        &self,
        p: kairos_store::SuppressionRemove,
    ) -> kairos_store::Result<bool> {
        self.inner.suppression_remove(p).await
    }
    async fn expansion_begin(&self, p: kairos_store::ExpansionBegin) -> kairos_store::Result<bool> {
        self.inner.expansion_begin(p).await
    }
    async fn expansion_pending(
        &self,
        limit: i64,
    ) -> kairos_store::Result<Vec<kairos_store::Expansion>> {
        self.inner.expansion_pending(limit).await
    }
    async fn expansion_get(
        &self,
        s: &str,
        p: &str,
    ) -> kairos_store::Result<Option<kairos_store::Expansion>> {
        self.inner.expansion_get(s, p).await
    }
    async fn expansion_advance(
        &self,
        p: kairos_store::ExpansionAdvance,
    ) -> kairos_store::Result<Option<Vec<String>>> {
        self.inner.expansion_advance(p).await
    }
    async fn exposure_counts(
        &self,
        topic: &str,
    ) -> kairos_store::Result<Vec<kairos_store::ExposureCount>> {
        self.inner.exposure_counts(topic).await
    }
}

#[async_trait]
impl ArtifactStore for CountingStore {
    async fn artifact_put(
        &self,
        p: kairos_store::ArtifactPut,
    ) -> kairos_store::Result<kairos_store::ArtifactPutResult> {
        self.inner.artifact_put(p).await
    }
    async fn artifact_get(
        &self,
        p: kairos_store::ArtifactKey,
    ) -> kairos_store::Result<Option<kairos_store::Artifact>> {
        self.inner.artifact_get(p).await
    }
    async fn artifact_list(
        &self,
        p: kairos_store::ArtifactList,
    ) -> kairos_store::Result<Vec<kairos_store::Artifact>> {
        self.inner.artifact_list(p).await
    }
    async fn artifact_prune(&self, p: kairos_store::ArtifactPrune) -> kairos_store::Result<u64> {
        self.inner.artifact_prune(p).await
    }
}

#[async_trait]
impl InboundStore for CountingStore {
    async fn inbound_event_record(
        &self,
        p: kairos_store::InboundEventRecord,
    ) -> kairos_store::Result<kairos_store::InboundEventRecorded> {
        self.inner.inbound_event_record(p).await
    }
    async fn inbound_event_get(
        &self,
        source: &str,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::InboundEvent>> {
        self.inner.inbound_event_get(source, id).await
    }
    async fn inbound_event_prune(
        &self,
        p: kairos_store::InboundEventPrune,
    ) -> kairos_store::Result<u64> {
        self.inner.inbound_event_prune(p).await
    }
    async fn exposure_outcome_count(
        &self,
        p: kairos_store::ExposureOutcomeCount,
    ) -> kairos_store::Result<Vec<kairos_store::MailOutcomeCount>> {
        self.inner.exposure_outcome_count(p).await
    }
    async fn inbound_event_count(
        &self,
        p: kairos_store::InboundEventCount,
    ) -> kairos_store::Result<Vec<kairos_store::InboundEventTally>> {
        self.inner.inbound_event_count(p).await
    }
}

#[async_trait]
impl InsightStore for CountingStore {
    async fn job_count_by_state(&self) -> kairos_store::Result<Vec<(String, i64)>> {
        self.inner.job_count_by_state().await
    }
    async fn job_count_group(
        &self,
        p: kairos_store::JobCountGroup,
    ) -> kairos_store::Result<Vec<kairos_store::JobCount>> {
        self.inner.job_count_group(p).await
    }
    async fn job_waiting(
        &self,
    ) -> kairos_store::Result<Vec<kairos_store::concurrency::JobWaiting>> {
        self.inner.job_waiting().await
    }
    async fn job_backlog(
        &self,
        p: kairos_store::JobBacklog,
    ) -> kairos_store::Result<kairos_store::Backlog> {
        self.inner.job_backlog(p).await
    }
    async fn job_count_finished(
        &self,
        p: kairos_store::JobCountFinished,
    ) -> kairos_store::Result<Vec<kairos_store::JobCount>> {
        self.finished_ranges
            .lock()
            .unwrap()
            .push((p.since, p.until));
        self.inner.job_count_finished(p).await
    }
    async fn job_finished_series(
        &self,
        p: kairos_store::JobFinishedSeries,
    ) -> kairos_store::Result<Vec<kairos_store::FinishedBucket>> {
        self.inner.job_finished_series(p).await
    }
    async fn job_dead_scheduled(
        &self,
        p: kairos_store::JobDeadScheduled,
    ) -> kairos_store::Result<Vec<kairos_store::DeadScheduledRun>> {
        self.inner.job_dead_scheduled(p).await
    }
    async fn job_count_decided(
        &self,
        p: kairos_store::JobCountDecided,
    ) -> kairos_store::Result<Vec<kairos_store::DecidedGroup>> {
        self.decided_ranges.lock().unwrap().push((p.since, p.until));
        self.inner.job_count_decided(p).await
    }
    async fn schedule_fire_times(
        &self,
        p: kairos_store::ScheduleFireTimes,
    ) -> kairos_store::Result<Vec<DateTime<Utc>>> {
        self.inner.schedule_fire_times(p).await
    }
    async fn slo_alert_list(&self) -> kairos_store::Result<Vec<kairos_store::SloAlert>> {
        self.inner.slo_alert_list().await
    }
    async fn slo_alert_put(&self, p: kairos_store::SloAlertPut) -> kairos_store::Result<()> {
        self.inner.slo_alert_put(p).await
    }
    async fn slo_alert_ack(
        &self,
        p: kairos_store::SloAlertAck,
    ) -> kairos_store::Result<Option<kairos_store::SloAlert>> {
        self.inner.slo_alert_ack(p).await
    }
    async fn monitor_pass_record(
        &self,
        p: kairos_store::MonitorPassRecord,
    ) -> kairos_store::Result<()> {
        self.inner.monitor_pass_record(p).await
    }
    async fn monitor_pass_last(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.monitor_pass_last().await
    }
    async fn monitor_pass_get(&self) -> kairos_store::Result<Option<kairos_store::MonitorPass>> {
        self.inner.monitor_pass_get().await
    }
    async fn queue_sample_record(
        &self,
        p: kairos_store::QueueSampleRecord,
    ) -> kairos_store::Result<Option<kairos_store::QueueSample>> {
        self.inner.queue_sample_record(p).await
    }
    async fn queue_sample_list(
        &self,
        p: kairos_store::QueueSampleList,
    ) -> kairos_store::Result<Vec<kairos_store::QueueSample>> {
        self.inner.queue_sample_list(p).await
    }
    async fn queue_sample_prune(
        &self,
        p: kairos_store::QueueSamplePrune,
    ) -> kairos_store::Result<u64> {
        self.inner.queue_sample_prune(p).await
    }
    async fn quarter_count_record(
        &self,
        p: kairos_store::QuarterCountRecord,
    ) -> kairos_store::Result<bool> {
        let left = {
            let mut left = self.quarters_left.lock().unwrap();
            let i = left.iter().position(|q| *q == p.start);
            i.map(|i| left.remove(i)).is_some()
        };
        if left {
            return Ok(false);
        }
        self.inner.quarter_count_record(p).await
    }
    async fn quarter_count_list(
        &self,
        p: kairos_store::QuarterCountList,
    ) -> kairos_store::Result<kairos_store::QuarterCounts> {
        self.inner.quarter_count_list(p).await
    }
    async fn quarter_count_sum(
        &self,
        p: kairos_store::QuarterCountSum,
    ) -> kairos_store::Result<kairos_store::QuarterSums> {
        self.sum_ranges.lock().unwrap().push((p.since, p.until));
        self.inner.quarter_count_sum(p).await
    }
    async fn topic_count_range(
        &self,
        p: kairos_store::TopicCountRange,
    ) -> kairos_store::Result<Vec<kairos_store::TopicCount>> {
        self.topic_ranges.lock().unwrap().push((p.since, p.until));
        self.inner.topic_count_range(p).await
    }
    async fn quarter_count_prune(
        &self,
        p: kairos_store::QuarterCountPrune,
    ) -> kairos_store::Result<u64> {
        self.inner.quarter_count_prune(p).await
    }
}

#[async_trait]
impl NodeStore for CountingStore {
    async fn migrate(&self) -> kairos_store::Result<()> {
        self.inner.migrate().await
    }
    async fn migration_list(&self) -> kairos_store::Result<Vec<kairos_store::MigrationStatus>> {
        self.inner.migration_list().await
    }
    async fn setting_get(&self, name: &str) -> kairos_store::Result<Option<kairos_store::Setting>> {
        self.inner.setting_get(name).await
    }
    async fn setting_put(&self, p: kairos_store::SettingPut) -> kairos_store::Result<()> {
        self.inner.setting_put(p).await
    }
    async fn setting_create(
        &self,
        p: kairos_store::SettingPut,
    ) -> kairos_store::Result<Option<kairos_store::Setting>> {
        self.inner.setting_create(p).await
    }
    async fn api_token_create(&self, p: kairos_store::ApiTokenCreate) -> kairos_store::Result<()> {
        self.inner.api_token_create(p).await
    }
    async fn api_token_list(&self) -> kairos_store::Result<Vec<kairos_store::ApiTokenRecord>> {
        self.inner.api_token_list().await
    }
    async fn api_token_get(
        &self,
        token_hash: &str,
    ) -> kairos_store::Result<Option<kairos_store::ApiTokenRecord>> {
        self.inner.api_token_get(token_hash).await
    }
    async fn api_token_revoke(
        &self,
        p: kairos_store::ApiTokenRevoke,
    ) -> kairos_store::Result<bool> {
        self.inner.api_token_revoke(p).await
    }
    async fn api_token_touch(&self, p: kairos_store::ApiTokenTouch) -> kairos_store::Result<()> {
        self.inner.api_token_touch(p).await
    }
    async fn admin_session_create(
        &self,
        p: kairos_store::AdminSessionCreate,
    ) -> kairos_store::Result<()> {
        self.inner.admin_session_create(p).await
    }
    async fn admin_session_get(
        &self,
        id_hash: &str,
    ) -> kairos_store::Result<Option<kairos_store::AdminSession>> {
        self.inner.admin_session_get(id_hash).await
    }
    async fn admin_session_delete(&self, id_hash: &str) -> kairos_store::Result<bool> {
        self.inner.admin_session_delete(id_hash).await
    }
    async fn node_heartbeat(&self, p: kairos_store::NodeHeartbeat) -> kairos_store::Result<()> {
        self.inner.node_heartbeat(p).await
    }
    async fn node_list(
        &self,
        p: kairos_store::NodeList,
    ) -> kairos_store::Result<Vec<kairos_store::NodeRecord>> {
        self.inner.node_list(p).await
    }
    async fn node_prune(&self, p: kairos_store::NodePrune) -> kairos_store::Result<u64> {
        self.inner.node_prune(p).await
    }
    async fn db_health_read(
        &self,
        p: kairos_store::DbHealthRead,
    ) -> kairos_store::Result<kairos_store::DbHealth> {
        self.inner.db_health_read(p).await
    }
    async fn db_vacuum(
        &self,
        p: kairos_store::DbVacuum,
    ) -> kairos_store::Result<kairos_store::DbVacuumed> {
        self.inner.db_vacuum(p).await
    }
}
