//! The executor: claims due jobs in batches under a lease, runs their handlers concurrently
//! up to a limit and under each kind's timeout, catches panics, renews leases while handlers
//! run, and records outcomes in batches (group commit).
//!
//! Shape of every service: [`ExecutorConfig`] with defaults and `validate()`,
//! [`Executor::run_once`] for tests on a manual clock, [`Executor::run`] for the loop.

use crate::handler::{HandlerRegistry, JobContext};
use crate::kinds::Kinds;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::retry::RetryDecision;
use kairos_core::{Clock, ErrorClass, Failure, Job, Outcome};
use kairos_store::{Attempt, JobClaim, JobComplete, JobLeaseRenew, Store, Transition};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Executor settings.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// This node's name, recorded on claims and attempts.
    pub node: String,
    /// Jobs running at once (S0-10). Default 100.
    pub concurrency: usize,
    /// Most jobs taken by one claim. Default 500.
    pub max_batch: usize,
    /// Lease of a claimed job; renewed while it runs. Default 30 s: a crashed node's work is
    /// back within seconds, not the hour some queues default to.
    pub lease: Duration,
    /// How often running jobs' leases are renewed. Default 10 s; must be under `lease`.
    pub renew_every: Duration,
    /// Longest idle wait before looking for due jobs again (fallback to wake-ups). Default 1 s.
    pub poll_interval: Duration,
    /// Most completions recorded in one transaction. Default 1000.
    pub complete_batch: usize,
    /// On shutdown, how long running jobs may take to finish. Default 30 s (S0-12).
    pub shutdown_grace: Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            node: "node".into(),
            concurrency: 100,
            max_batch: 500,
            lease: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
            complete_batch: 1000,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl ExecutorConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.concurrency == 0 || self.concurrency > 100_000 {
            return Err(Error::invalid(
                "executor.concurrency",
                "must be between 1 and 100000",
            ));
        }
        if self.max_batch == 0 || self.complete_batch == 0 {
            return Err(Error::invalid(
                "executor.max_batch",
                "batches must be at least 1",
            ));
        }
        if self.lease < Duration::from_secs(1) {
            return Err(Error::invalid("executor.lease", "must be at least 1s"));
        }
        if self.renew_every.is_zero() || self.renew_every >= self.lease {
            return Err(Error::invalid(
                "executor.renew_every",
                "must be more than 0 and less than the lease",
            ));
        }
        if self.poll_interval.is_zero() {
            return Err(Error::invalid(
                "executor.poll_interval",
                "must be more than 0",
            ));
        }
        Ok(())
    }
}

/// What one `run_once` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutorReport {
    /// Jobs claimed.
    pub claimed: usize,
    /// Succeeded.
    pub succeeded: usize,
    /// Skipped.
    pub skipped: usize,
    /// Failed and scheduled for another attempt.
    pub retried: usize,
    /// Failed for the last time: dead.
    pub dead: usize,
    /// Completions refused because another node holds the job now.
    pub stale: usize,
}

/// The executor.
#[derive(Clone)]
pub struct Executor {
    cfg: ExecutorConfig,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    registry: Arc<HandlerRegistry>,
    /// Maintenance mode: no claims while on (S3-13).
    pause: crate::maintenance::Maintenance,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// Run one attempt: the handler under its timeout, a panic caught and turned into a failure.
async fn execute(registry: &HandlerRegistry, job: &Job, ctx: &JobContext) -> Outcome {
    let Some(handler) = registry.get(job.kind.as_str()) else {
        return Outcome::Failed(Failure::permanent(format!(
            "no handler is registered for kind {:?} on this node",
            job.kind.as_str()
        )));
    };
    let timeout = handler.timeout();
    let run = AssertUnwindSafe(handler.handle(job, ctx)).catch_unwind();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Failed(Failure::transient(format!("handler panicked: {msg}")))
        }
        Err(_) => Outcome::Failed(Failure::transient(format!(
            "timed out after {}",
            kairos_core::retry::format_duration(timeout)
        ))),
    }
}

/// Turn an attempt's outcome into the completion to record. Pure: the retry policy decides
/// (S0-4, S4-3); a rate limit waits without spending an attempt.
pub fn completion_for(
    job: &Job,
    outcome: Outcome,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    node: &str,
    jitter: f64,
) -> JobComplete {
    let mut attempt = Attempt {
        job_id: job.id.clone(),
        attempt: job.attempt,
        started_at: started,
        finished_at: finished,
        outcome: String::new(),
        error_class: None,
        status_code: None,
        error: None,
        response: None,
        provider_id: None,
        node: Some(node.to_string()),
    };
    let kind = Kinds::builtin().get(job.kind.as_str());
    let policy = Kinds::builtin().retry_of(job);
    let transition = match outcome {
        Outcome::Delivered {
            provider_id,
            status_code,
            response,
        } => {
            attempt.outcome = "succeeded".into();
            attempt.provider_id = provider_id;
            attempt.status_code = status_code.map(i32::from);
            attempt.response = response;
            Transition::Succeeded
        }
        Outcome::Skipped(reason) => {
            attempt.outcome = "skipped".into();
            attempt.error = Some(reason.clone());
            Transition::Skipped(reason)
        }
        Outcome::Failed(f) => {
            attempt.outcome = "failed".into();
            attempt.error_class = Some(f.class.as_str().to_string());
            attempt.status_code = f.status_code.map(i32::from);
            attempt.error = Some(f.message.clone());
            attempt.response = f.response.clone();
            if f.disable_endpoint {
                // 410 Gone: the receiver asked never to be called again; retrying is pointless.
                Transition::Dead
            } else if f.class == ErrorClass::RateLimited
                && finished - job.created_at < RATE_LIMIT_PATIENCE
            {
                let wait = f
                    .retry_after
                    .unwrap_or(Duration::from_secs(1))
                    .min(policy.retry_after_cap);
                Transition::Retry {
                    run_at: after(finished, wait),
                    refund_attempt: true,
                }
            } else {
                let n = u32::try_from(job.attempt.max(1)).unwrap_or(1);
                match policy.decide(n, f.class, f.retry_after, jitter) {
                    RetryDecision::RetryIn(d) => Transition::Retry {
                        run_at: after(finished, d),
                        refund_attempt: false,
                    },
                    RetryDecision::Dead => Transition::Dead,
                }
            }
        }
    };
    let transition = within_deadline(job, transition, &mut attempt);
    JobComplete {
        id: job.id.clone(),
        lease_token: job.lease_token.clone().unwrap_or_default(),
        attempt,
        transition,
        record_exposure: kind.records_exposure(),
    }
}

/// A kind with a deadline (`digest`, 15 minutes) never starts an attempt past it,
/// counted from the job's firing (or its creation, if later: a catch-up): a retry that would
/// start later — a long `Retry-After`, a policy saved before the node's timeouts grew — ends
/// the job `dead` instead, and the attempt says why. The save-time budget check keeps this
/// rare; this makes it hold.
fn within_deadline(job: &Job, t: Transition, attempt: &mut Attempt) -> Transition {
    let Transition::Retry { run_at, .. } = &t else {
        return t;
    };
    let Some(deadline) = Kinds::builtin().get(job.kind.as_str()).deadline() else {
        return t;
    };
    let start = job.fire_at.unwrap_or(job.created_at).max(job.created_at);
    let end = after(start, deadline);
    if *run_at <= end {
        return t;
    }
    let note = format!(
        "given up: the retry at {} would start after the kind's {} deadline ({})",
        run_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        kairos_core::retry::format_duration(deadline),
        end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    attempt.error = Some(match attempt.error.take() {
        Some(e) => format!("{e}; {note}"),
        None => note,
    });
    Transition::Dead
}

/// How long a job may keep waiting out rate limits without spending attempts. Past it, a
/// rate-limited attempt counts like a transient failure, so a job that is always rate-limited
/// ends `dead` instead of retrying forever.
const RATE_LIMIT_PATIENCE: chrono::Duration = chrono::Duration::hours(24);

/// `t + d`, saturating instead of panicking on overflow (a delay comes partly from the other
/// side's `Retry-After`).
fn after(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_add_signed(to_chrono(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn log_completion(job: &Job, c: &JobComplete) {
    // One log line and the metrics per attempt (S4-6): ids, classes, timings; never the
    // payload or the target.
    crate::telemetry::attempt_done(job, c);
}

fn tally(report: &mut ExecutorReport, c: &JobComplete) {
    match c.transition {
        Transition::Succeeded => report.succeeded += 1,
        Transition::Skipped(_) => report.skipped += 1,
        Transition::Retry { .. } => report.retried += 1,
        Transition::Dead => report.dead += 1,
    }
}

impl Executor {
    /// An executor over `store`. Fails if the config is not valid.
    pub fn new(
        cfg: ExecutorConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        registry: Arc<HandlerRegistry>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Executor {
            cfg,
            store,
            clock,
            registry,
            pause: Default::default(),
        })
    }

    /// Claim nothing while `pause` is on (maintenance mode, S3-13).
    pub fn with_pause(mut self, pause: crate::maintenance::Maintenance) -> Self {
        self.pause = pause;
        self
    }

    fn claim_params(&self, now: DateTime<Utc>, limit: usize) -> JobClaim {
        JobClaim {
            now,
            limit: limit as i64,
            node: self.cfg.node.clone(),
            lease_token: new_id(IdPrefix::Lease, now),
            lease_until: now + to_chrono(self.cfg.lease),
        }
    }

    /// Claim what is due at `now` (up to the concurrency limit), run it all, record the
    /// outcomes in one batch. For tests on a manual clock and for `kairos` one-shot runs.
    pub async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<ExecutorReport, kairos_store::Error> {
        if self.pause.is_on() {
            return Ok(ExecutorReport::default());
        }
        let jobs = self
            .store
            .job_claim(self.claim_params(now, self.cfg.concurrency))
            .await?;
        let mut report = ExecutorReport {
            claimed: jobs.len(),
            ..Default::default()
        };
        let ctx = JobContext {
            now,
            node: self.cfg.node.clone(),
        };
        let runs = jobs.iter().map(|job| {
            let ctx = ctx.clone();
            async move { (job, execute(&self.registry, job, &ctx).await) }
        });
        let results = futures::future::join_all(runs).await;
        let finished = self.clock.now().max(now);
        let completions: Vec<_> = results
            .into_iter()
            .map(|(job, outcome)| {
                let c = completion_for(job, outcome, now, finished, &self.cfg.node, rand::random());
                log_completion(job, &c);
                tally(&mut report, &c);
                c
            })
            .collect();
        let r = self.store.job_complete_many(completions).await?;
        report.stale = r.stale.len();
        Ok(report)
    }

    /// Run until `cancel`, then drain: stop claiming, let running jobs finish within the
    /// shutdown grace, record their outcomes. What cannot finish is returned by its lease.
    pub async fn run(&self, wake: Arc<Notify>, cancel: CancellationToken) {
        let sem = Arc::new(Semaphore::new(self.cfg.concurrency));
        let running: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        // A completion travels with its job's slot: the slot is free again only once the
        // outcome is recorded. Otherwise jobs whose outcome waits for the completer would not
        // count against `concurrency`, and more jobs than that would hold leases (and be sent
        // again after a crash) whenever the writer lags.
        let (tx, rx) = mpsc::unbounded_channel::<(JobComplete, Option<OwnedSemaphorePermit>)>();
        let completer = tokio::spawn(completer(
            self.store.clone(),
            rx,
            self.cfg.complete_batch,
            running.clone(),
        ));
        let renew_stop = CancellationToken::new();
        let renewer = tokio::spawn(renewer(self.clone(), running.clone(), renew_stop.clone()));
        // The running attempts, so that those still running when the shutdown grace ends can
        // be stopped (each holds a sender of the completer's channel).
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            while tasks.try_join_next().is_some() {}
            // Wait for a free slot, then take as many as are free (up to a batch).
            let first = tokio::select! {
                _ = cancel.cancelled() => break,
                p = sem.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            };
            let mut permits = vec![first];
            // Under load slots come back one at a time; claiming one job per round trip would
            // spend the writer on tiny claims. Gather slots for up to 2 ms (or until half the
            // slots are free), so claims stay batched. When idle, all slots are free at once.
            let want = (self.cfg.concurrency / 2).clamp(1, self.cfg.max_batch);
            let gather_until = tokio::time::Instant::now() + Duration::from_millis(2);
            while permits.len() < self.cfg.max_batch {
                match sem.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) if permits.len() >= want => break,
                    Err(_) => {
                        match tokio::time::timeout_at(gather_until, sem.clone().acquire_owned())
                            .await
                        {
                            Ok(Ok(p)) => permits.push(p),
                            _ => break,
                        }
                    }
                }
            }
            if self.pause.is_on() {
                // Maintenance mode (S3-13): running jobs finish, nothing new is claimed.
                drop(permits);
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = wake.notified() => continue,
                    _ = tokio::time::sleep(self.cfg.poll_interval) => continue,
                }
            }
            let now = self.clock.now();
            let claimed = match self
                .store
                .job_claim(self.claim_params(now, permits.len()))
                .await
            {
                Ok(j) => j,
                Err(e) => {
                    tracing::error!(error = %e, "claiming jobs failed; retrying");
                    drop(permits);
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep(self.cfg.poll_interval) => continue,
                    }
                }
            };
            let got = claimed.len();
            {
                let mut r = running.lock().unwrap_or_else(|e| e.into_inner());
                for j in &claimed {
                    r.insert(j.id.clone(), j.lease_token.clone().unwrap_or_default());
                }
            }
            for job in claimed {
                let permit = permits.pop();
                let (registry, clock, tx, node) = (
                    self.registry.clone(),
                    self.clock.clone(),
                    tx.clone(),
                    self.cfg.node.clone(),
                );
                tasks.spawn(async move {
                    let started = clock.now();
                    let ctx = JobContext {
                        now: started,
                        node: node.clone(),
                    };
                    let outcome = execute(&registry, &job, &ctx).await;
                    let c =
                        completion_for(&job, outcome, started, clock.now(), &node, rand::random());
                    log_completion(&job, &c);
                    let _ = tx.send((c, permit));
                });
            }
            drop(permits);
            if got == 0 {
                self.idle_wait(&wake, &cancel).await;
            }
        }
        // Drain: wait for every slot to come back, within the grace period.
        let all = u32::try_from(self.cfg.concurrency).unwrap_or(u32::MAX);
        if tokio::time::timeout(self.cfg.shutdown_grace, sem.acquire_many(all))
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown grace ended with jobs still running; their leases will return them"
            );
            // Stop them: otherwise their senders keep the completer (and this call) waiting
            // for as long as they run.
            tasks.abort_all();
        }
        while tasks.join_next().await.is_some() {}
        drop(tx);
        let _ = completer.await;
        renew_stop.cancel();
        let _ = renewer.await;
    }

    /// Sleep until the earliest known due job, a wake-up, or the poll interval.
    async fn idle_wait(&self, wake: &Notify, cancel: &CancellationToken) {
        let now = self.clock.now();
        let mut wait = self.cfg.poll_interval;
        if let Ok(Some(next)) = self.store.job_next_run_at().await {
            let until = (next - now).to_std().unwrap_or(Duration::ZERO);
            wait = wait.min(until);
        }
        if wait.is_zero() {
            // Due now but nothing claimed: another node took it, or it is a millisecond away.
            wait = Duration::from_millis(1);
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Records completions in batches: whatever has arrived while the last batch was written
/// goes into the next transaction (group commit). The jobs' executor slots are released once
/// their batch is written (or given up on).
async fn completer(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<(JobComplete, Option<OwnedSemaphorePermit>)>,
    max: usize,
    running: Arc<Mutex<HashMap<String, String>>>,
) {
    let mut batch = Vec::with_capacity(max);
    while rx.recv_many(&mut batch, max).await > 0 {
        let completions: Vec<JobComplete> = batch.iter().map(|(c, _)| c.clone()).collect();
        let mut tries = 0;
        loop {
            match store.job_complete_many(completions.clone()).await {
                Ok(r) => {
                    if !r.stale.is_empty() {
                        tracing::warn!(
                            count = r.stale.len(),
                            "completions refused: another node holds these jobs now"
                        );
                    }
                    break;
                }
                Err(e) if tries < 20 => {
                    tries += 1;
                    tracing::error!(error = %e, tries, "recording outcomes failed; retrying");
                    tokio::time::sleep(Duration::from_millis(100 * tries)).await;
                }
                Err(e) => {
                    // Give up on this batch: the leases will expire and the jobs run again.
                    tracing::error!(error = %e, count = batch.len(), "could not record outcomes; leases will return the jobs");
                    break;
                }
            }
        }
        let mut r = running.lock().unwrap_or_else(|e| e.into_inner());
        for c in &completions {
            r.remove(&c.id);
        }
        drop(r);
        // Frees the slots.
        batch.clear();
    }
}

/// Renews the leases of running jobs so that a long job is not taken over while it runs.
async fn renewer(
    exec: Executor,
    running: Arc<Mutex<HashMap<String, String>>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(exec.cfg.renew_every) => {}
        }
        let jobs: Vec<(String, String)> = {
            let r = running.lock().unwrap_or_else(|e| e.into_inner());
            r.iter().map(|(a, b)| (a.clone(), b.clone())).collect()
        };
        if jobs.is_empty() {
            continue;
        }
        let lease_until = exec.clock.now() + to_chrono(exec.cfg.lease);
        if let Err(e) = exec
            .store
            .job_lease_renew(JobLeaseRenew { jobs, lease_until })
            .await
        {
            tracing::error!(error = %e, "renewing leases failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::{JobKind, JobState, RetryPolicy};

    fn job(retry: RetryPolicy) -> Job {
        let t0 = DateTime::parse_from_rfc3339("2026-11-29T09:00:00Z")
            .map(|t| t.to_utc())
            .unwrap();
        Job {
            id: "job_1".into(),
            kind: JobKind::new("webhook"),
            state: JobState::Running,
            payload: serde_json::json!({}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            attempt: 1,
            retry: Some(retry),
            run_at: t0,
            created_at: t0,
            finished_at: None,
            locked_by: Some("n".into()),
            lease_token: Some("lease_1".into()),
            lease_expires_at: None,
            last_error: None,
            reason: None,
        }
    }

    /// A huge `Retry-After` (from the other side) with an uncapped policy built in code must
    /// not overflow the clock and panic the completion.
    #[test]
    fn huge_retry_after_saturates_instead_of_panicking() {
        let mut policy = RetryPolicy::notification();
        policy.retry_after_cap = Duration::MAX;
        let j = job(policy);
        let mut f = Failure::transient("HTTP 503");
        f.retry_after = Some(Duration::MAX);
        let c = completion_for(&j, Outcome::Failed(f), j.run_at, j.run_at, "n", 0.5);
        match c.transition {
            Transition::Retry {
                run_at,
                refund_attempt: false,
            } => assert!(run_at > j.run_at),
            other => panic!("expected a retry, got {other:?}"),
        }
    }

    /// A rate limit waits without spending an attempt, but not forever: after a day of rate
    /// limits the attempts count, so the job can end dead.
    #[test]
    fn rate_limits_refund_attempts_only_for_a_day() {
        let mut j = job(RetryPolicy::notification());
        j.attempt = 4;
        let limited = || Outcome::Failed(Failure::new(ErrorClass::RateLimited, "HTTP 429"));
        let soon = j.created_at + chrono::Duration::hours(1);
        let c = completion_for(&j, limited(), soon, soon, "n", 0.0);
        assert!(
            matches!(
                c.transition,
                Transition::Retry {
                    refund_attempt: true,
                    ..
                }
            ),
            "{c:?}"
        );
        let late = j.created_at + chrono::Duration::hours(25);
        let c = completion_for(&j, limited(), late, late, "n", 0.0);
        assert_eq!(
            c.transition,
            Transition::Dead,
            "attempts spent after a day of rate limits"
        );
    }

    /// A 410 Gone is final at once: the receiver asked never to be called again.
    #[test]
    fn gone_is_dead_without_retry() {
        let j = job(RetryPolicy::notification());
        let mut f = Failure::permanent("HTTP 410");
        f.disable_endpoint = true;
        let c = completion_for(&j, Outcome::Failed(f), j.run_at, j.run_at, "n", 0.0);
        assert_eq!(c.transition, Transition::Dead);
    }

    /// The deadline at run time: a digest's retry that would start after its 15-minute deadline (here
    /// a 14-minute `Retry-After` after a failure at minute 2) ends the job dead, saying why;
    /// one that starts within it is a retry; kinds without a deadline are not affected.
    #[test]
    fn digest_retry_past_its_deadline_is_dead_s4_7() {
        let mut j = job(RetryPolicy::http_call());
        j.kind = JobKind("digest".into());
        j.fire_at = Some(j.created_at);
        let at = j.created_at + chrono::Duration::minutes(2);
        let mut f = Failure::transient("HTTP 503");
        f.retry_after = Some(Duration::from_secs(14 * 60));
        let c = completion_for(&j, Outcome::Failed(f.clone()), at, at, "n", 0.0);
        assert_eq!(c.transition, Transition::Dead);
        let error = c.attempt.error.unwrap_or_default();
        assert!(error.starts_with("HTTP 503; given up"), "{error}");
        assert!(error.contains("15m deadline"), "{error}");
        // Within the deadline: a retry.
        f.retry_after = Some(Duration::from_secs(60));
        let c = completion_for(&j, Outcome::Failed(f.clone()), at, at, "n", 0.0);
        assert!(matches!(c.transition, Transition::Retry { .. }), "{c:?}");
        // Another kind with the same wait: a retry, no deadline.
        j.kind = JobKind::new("webhook");
        f.retry_after = Some(Duration::from_secs(14 * 60));
        let c = completion_for(&j, Outcome::Failed(f), at, at, "n", 0.0);
        assert!(matches!(c.transition, Transition::Retry { .. }), "{c:?}");
    }
}
