//! The executor's claimers: loops that claim due jobs into the local queue, as far ahead as
//! the handlers' pace allows, under the bound on jobs in hand.

use super::Executor;
use super::queue::{Pace, STOCKED_RECHECK, Stock, claim_should_wait};
use crate::service::{Backoff, Woken, sleep_or_wake};
use kairos_core::Job;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Claim loops per executor, each with at most one claim in flight. Two: while one claim is
/// in the database (hundreds of rows locked, updated and returned take milliseconds) and its
/// rows are decoded, the other's jobs run. Each claims at most its share of the queue's
/// limit, so that both can. PostgreSQL gives claims as many connections.
pub(super) const CLAIMERS: usize = 2;

/// What the claimers share with each other and with the handlers and the completer.
pub(super) struct Shared {
    /// Jobs in hand at most: queued, running, or waiting for their outcome's commit.
    pub cap: usize,
    /// A permit per job in hand; it comes back once the job's outcome is committed.
    pub held: Arc<Semaphore>,
    /// Outcomes whose handler slot came free before they were committed.
    pub unrecorded: Arc<Semaphore>,
    /// Leases to renew: job id → lease token.
    pub running: Arc<Mutex<HashMap<String, String>>>,
    /// Told when a batch of outcomes is committed (its permits are back).
    pub freed: Arc<Notify>,
    /// The handlers' recent speed.
    pub pace: Arc<Pace>,
    /// Jobs waiting in the local queue.
    pub stock: Arc<Stock>,
    /// The local queue.
    pub queue: mpsc::UnboundedSender<(Job, OwnedSemaphorePermit)>,
    /// No claim before this instant: set by a claim that came back short
    /// ([`ExecutorConfig::claim_cooldown`](super::ExecutorConfig::claim_cooldown)), for both
    /// claimers.
    pub cooldown: Mutex<Option<Instant>>,
}

impl Shared {
    /// When the next claim may start, if not now.
    fn cooled_at(&self) -> Option<Instant> {
        let at = *self.cooldown.lock().unwrap_or_else(|e| e.into_inner());
        at.filter(|at| *at > Instant::now())
    }

    /// A claim that started at `started` came back short: no claim before `started + pause`.
    fn cool_down(&self, started: Instant, pause: Duration) {
        if pause.is_zero() {
            return;
        }
        let mut at = self.cooldown.lock().unwrap_or_else(|e| e.into_inner());
        let until = started + pause;
        if at.is_none_or(|a| a < until) {
            *at = Some(until);
        }
    }
}

impl Executor {
    /// One claimer: until `cancel`, claim what fits into the local queue, wait while it is
    /// full, back off after errors, and sleep until the next due job when nothing is due.
    pub(super) async fn claim_loop(&self, s: &Shared, wake: &Notify, cancel: &CancellationToken) {
        let mut backoff = Backoff::default();
        loop {
            let first = tokio::select! {
                _ = cancel.cancelled() => break,
                p = s.held.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            };
            // Hold the handler slots' worth of jobs and what they finish within the horizon
            // at their recent speed.
            let limit =
                self.cfg.concurrency + s.pace.ahead(self.cfg.concurrency, self.cfg.prefetch);
            // Queued and running jobs, and what the other claimer holds for its claim;
            // outcomes waiting for their commit hold leases too (and count in `cap`) but no
            // longer need a place in the queue.
            let waiting = self.cfg.max_unrecorded - s.unrecorded.available_permits();
            let in_hand = (s.cap - s.held.available_permits() - 1).saturating_sub(waiting);
            let room = limit.saturating_sub(in_hand).min(self.cfg.max_batch);
            if room == 0 {
                drop(first);
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = s.freed.notified() => continue,
                    _ = tokio::time::sleep(self.cfg.poll_interval) => continue,
                }
            }
            if claim_should_wait(room, limit, s.stock.len(), self.cfg.concurrency) {
                // Let the claim grow while the queue feeds every slot; look again soon, as
                // the handlers empty the queue without telling anyone.
                drop(first);
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = s.freed.notified() => continue,
                    _ = tokio::time::sleep(STOCKED_RECHECK) => continue,
                }
            }
            // This claimer's share of the limit, so that the other can claim beside it.
            let size = room.min(limit.div_ceil(CLAIMERS)).max(1);
            let mut permits = vec![first];
            // Under load permits come back one batch of completions at a time; claiming a few
            // jobs per round trip would spend the database on tiny claims. Gather permits for
            // up to 2 ms, so claims stay batched. When idle, all are free at once.
            let gather_until = tokio::time::Instant::now() + Duration::from_millis(2);
            while permits.len() < size {
                match s.held.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) => {
                        match tokio::time::timeout_at(gather_until, s.held.clone().acquire_owned())
                            .await
                        {
                            Ok(Ok(p)) => permits.push(p),
                            _ => break,
                        }
                    }
                }
            }
            if let Some(at) = s.cooled_at() {
                // The last claim came back short: let the jobs that arrive until `at` (each
                // waking this loop) share the next claim. The permits stay held meanwhile.
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
            if self.pause.is_on() {
                // Maintenance mode: running jobs finish, nothing new is claimed.
                drop(permits);
                match sleep_or_wake(self.cfg.poll_interval, Some(wake), cancel).await {
                    Woken::Cancelled => break,
                    _ => continue,
                }
            }
            let now = self.clock.now();
            let started = Instant::now();
            let claimed = match self
                .store
                .job_claim(self.claim_params(now, permits.len()))
                .await
            {
                Ok(j) => {
                    backoff.succeeded();
                    j
                }
                Err(e) => {
                    let wait = backoff.failed(self.cfg.poll_interval);
                    tracing::error!(error = %e, failures = backoff.failures(),
                        retry_in_ms = wait.as_millis() as u64, "claiming jobs failed; retrying");
                    drop(permits);
                    match sleep_or_wake(wait, None, cancel).await {
                        Woken::Cancelled => break,
                        _ => continue,
                    }
                }
            };
            let got = claimed.len();
            if got < permits.len() {
                s.cool_down(started, self.cfg.claim_cooldown);
            }
            {
                let mut r = s.running.lock().unwrap_or_else(|e| e.into_inner());
                for j in &claimed {
                    r.insert(j.id.clone(), j.lease_token.clone().unwrap_or_default());
                }
            }
            s.stock.queued(got.min(permits.len()));
            for job in claimed {
                // A claim returns at most as many jobs as it was asked for.
                let Some(permit) = permits.pop() else { break };
                if s.queue.send((job, permit)).is_err() {
                    s.stock.started();
                }
            }
            drop(permits);
            if got == 0 {
                self.idle_wait(wake, cancel).await;
            }
        }
    }
}
