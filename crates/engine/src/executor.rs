//! The executor: claims due jobs in batches under a lease, runs their handlers concurrently
//! up to a limit and under each kind's timeout, catches panics, renews leases while handlers
//! run, and records outcomes in batches (group commit).
//!
//! It has the shape of every service ([`crate::service`]): [`ExecutorConfig`] with defaults
//! and `validate()`, [`Executor::run_once`] for tests on a manual clock. Its loop,
//! [`Executor::run`], keeps its own worker pool but waits with the services' pieces
//! ([`sleep_or_wake`], [`Backoff`](crate::service::Backoff)). One attempt — the handler call
//! and the mapping of its outcome to a completion — is [`attempt`]; the claimers are in
//! `claim`; the completer and the lease renewer in `pool`; the local queue and the handler
//! slots in `queue`.
//!
//! Claims run ahead of the handlers: jobs claimed but not started yet wait in a local queue
//! (under their lease, renewed like running ones), so that a few handler slots stay busy
//! while the next claim and the last completions travel to the database. How far ahead is
//! measured, not guessed: about [`PREFETCH_HORIZON`] of work at the handlers' recent speed,
//! at most `prefetch` jobs — fast handlers get a deep queue, slow ones (and a node that just
//! started) hardly any, so a node does not hoard work another could start sooner. While
//! that queue still holds a job for every slot, a claim waits until it has room for half of
//! it: a claim costs a round trip and a plan whatever its size, so a busy node makes a few
//! large ones rather than one per batch of finished jobs. Two claimers each keep a claim of
//! up to half that queue in flight, so the handlers run one claim's jobs while the next is
//! in the database.

pub mod attempt;
mod claim;
mod pool;
mod queue;

pub use attempt::{completion_for, deadline_end};
pub use kairos_core::AttemptOutcome;

use crate::handler::JobContext;
use crate::kinds::Kinds;
use crate::service::{ServiceConfig, sleep_or_wake};
use attempt::{execute, log_completion, tally, to_chrono};
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_core::Job;
use kairos_core::id::{IdPrefix, new_id};
use kairos_store::{JobClaim, JobComplete, Store};
use pool::{completer, renewer};
pub use queue::PREFETCH_HORIZON;
use queue::{Pace, Stock, dispatch};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Executor settings.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// This node's name, recorded on claims and attempts.
    pub node: String,
    /// Jobs running at once. Default 100.
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
    /// After a claim that came back short (fewer jobs than it asked for), the next claim of
    /// this node starts no sooner than this after it. Default 5 ms, at most 1 s; 0 claims
    /// again at once. At a steady rate every enqueue wakes the node, and without a pause each
    /// wake-up became a claim of one or two jobs: hundreds of claims a second, each paying a
    /// round trip and, on PostgreSQL while another session holds a snapshot, a walk over the
    /// index entries of the jobs claimed just before. The pause lets the jobs that arrive meanwhile share
    /// one claim (Oban's `dispatch_cooldown`, River's `FetchCooldown`). A claim that came
    /// back full is followed at once, so a burst is not slowed.
    pub claim_cooldown: Duration,
    /// Most completions recorded in one transaction. Default 1000.
    pub complete_batch: usize,
    /// How long a completion may wait for others to share its transaction (unless
    /// `complete_batch` are ready sooner). Default 0: a batch is whatever is ready when a
    /// writer (`complete_parallel`) is free (a timer holds handler slots, since a slot comes back only with its
    /// committed outcome); at most 1 s.
    pub complete_delay: Duration,
    /// Most completion batches written at once, each on its own connection. Default 2: while
    /// one batch travels to the database and waits for its commit, the next one forms and
    /// goes; completions are independent (each job's is fenced by its own lease token).
    pub complete_parallel: usize,
    /// Most jobs claimed ahead of the handlers, waiting in the local queue. Default 500; 0
    /// claims only for free handler slots.
    pub prefetch: usize,
    /// On shutdown, how long running jobs may take to finish. Default 30 s.
    pub shutdown_grace: Duration,
    /// Most attempts whose handler has returned but whose outcome is not yet committed. A
    /// handler slot comes free when its handler returns, not when the outcome commits, while
    /// fewer than this many outcomes wait: so ten handlers are not held to ten jobs per
    /// commit round trip. What a crash can make a receiver see twice is at most
    /// `concurrency + max_unrecorded` jobs (each such job once). Default 500; 0 frees a slot
    /// only with its committed outcome.
    pub max_unrecorded: usize,
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
            claim_cooldown: Duration::from_millis(5),
            complete_batch: 1000,
            complete_delay: Duration::ZERO,
            complete_parallel: 2,
            prefetch: 500,
            shutdown_grace: Duration::from_secs(30),
            max_unrecorded: 500,
        }
    }
}

impl ServiceConfig for ExecutorConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        ExecutorConfig::validate(self)
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
        if self.complete_parallel == 0 || self.complete_parallel > 64 {
            return Err(Error::invalid(
                "executor.complete_parallel",
                "must be between 1 and 64",
            ));
        }
        if self.complete_delay > Duration::from_secs(1) {
            return Err(Error::invalid(
                "executor.complete_delay",
                "must be at most 1s",
            ));
        }
        if self.prefetch > 100_000 {
            return Err(Error::invalid(
                "executor.prefetch",
                "must be at most 100000",
            ));
        }
        if self.max_unrecorded > 100_000 {
            return Err(Error::invalid(
                "executor.max_unrecorded",
                "must be at most 100000",
            ));
        }
        if self.claim_cooldown > Duration::from_secs(1) {
            return Err(Error::invalid(
                "executor.claim_cooldown",
                "must be at most 1s",
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
    /// The node's kinds: their handlers, retry defaults and deadlines.
    kinds: Arc<Kinds>,
    /// Maintenance mode: no claims while on.
    pause: crate::maintenance::Maintenance,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor over `store`. Fails if the config is not valid.
    pub fn new(
        cfg: ExecutorConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        kinds: Arc<Kinds>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Executor {
            cfg,
            store,
            clock,
            kinds,
            pause: Default::default(),
        })
    }

    /// Claim nothing while `pause` is on (maintenance mode).
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
            async move { (job, execute(&self.kinds, job, &ctx).await) }
        });
        let results = futures::future::join_all(runs).await;
        let finished = self.clock.now().max(now);
        let completions: Vec<_> = results
            .into_iter()
            .map(|(job, outcome)| {
                let kind = self.kinds.get(job.kind.as_str());
                let c = completion_for(
                    kind,
                    job,
                    outcome,
                    now,
                    finished,
                    &self.cfg.node,
                    rand::random(),
                );
                log_completion(job, &c);
                tally(&mut report, &c);
                c
            })
            .collect();
        let r = self.store.job_complete_many(completions).await?;
        report.stale = r.stale.len();
        Ok(report)
    }

    /// Run until `cancel`, then drain: stop claiming, let queued and running jobs finish
    /// within the shutdown grace, record their outcomes. What cannot finish is returned by its
    /// lease.
    pub async fn run(&self, wake: Arc<Notify>, cancel: CancellationToken) {
        let cap = self.cfg.concurrency + self.cfg.prefetch + self.cfg.max_unrecorded;
        // Outcomes whose handler slot came free before they were committed (see dispatch).
        let unrecorded = Arc::new(Semaphore::new(self.cfg.max_unrecorded));
        // A permit of `held` for every job in hand — queued, running, or waiting for its
        // outcome to be recorded. It travels with the completion and comes back only once the
        // outcome is committed, so at most `cap` jobs hold leases however far the writer lags.
        let held = Arc::new(Semaphore::new(cap));
        let running: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let freed = Arc::new(Notify::new());
        let pace = Arc::new(Pace::default());
        let stock = Arc::new(Stock::default());
        let (tx, rx) = mpsc::unbounded_channel::<(JobComplete, Vec<OwnedSemaphorePermit>)>();
        let completer = tokio::spawn(completer(
            self.store.clone(),
            rx,
            (
                self.cfg.complete_batch,
                self.cfg.complete_delay,
                self.cfg.complete_parallel,
            ),
            running.clone(),
            freed.clone(),
        ));
        let renew_stop = CancellationToken::new();
        let renewer = tokio::spawn(renewer(self.clone(), running.clone(), renew_stop.clone()));
        // The local queue: claimed jobs, oldest first, waiting for a handler slot.
        let (queue, queued) = mpsc::unbounded_channel::<(Job, OwnedSemaphorePermit)>();
        let stop_now = CancellationToken::new();
        let dispatcher = tokio::spawn(dispatch(
            self.clone(),
            queued,
            stock.clone(),
            tx,
            pace.clone(),
            unrecorded.clone(),
            stop_now.clone(),
        ));
        // Claims run from `CLAIMERS` loops at once, each with a claim in flight: a large
        // claim spends as long in the database and in decoding its rows as the handlers take
        // to run them, so one claimer left the handlers idle half the time.
        let claims = claim::Shared {
            cap,
            held: held.clone(),
            unrecorded,
            running,
            freed,
            pace,
            stock,
            queue,
            cooldown: Default::default(),
        };
        futures::future::join_all(
            (0..claim::CLAIMERS).map(|_| self.claim_loop(&claims, &wake, &cancel)),
        )
        .await;
        drop(claims);
        // Drain: wait for every job in hand to come back, within the grace period.
        let all = u32::try_from(cap).unwrap_or(u32::MAX);
        if tokio::time::timeout(self.cfg.shutdown_grace, held.acquire_many(all))
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown grace ended with jobs still running or queued; their leases will return them"
            );
            // Stop them: otherwise their senders keep the completer (and this call) waiting
            // for as long as they run.
            stop_now.cancel();
        }
        let _ = dispatcher.await;
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
        sleep_or_wake(wait, Some(wake), cancel).await;
    }
}
