//! The executor's local queue: claimed jobs wait here, oldest first, for one of the
//! `concurrency` handler slots; and the handlers' pace, which sets how far claims run ahead.

use super::Executor;
use super::attempt::{execute, log_completion};
use super::completion_for;
use crate::handler::JobContext;
use kairos_core::Job;
use kairos_store::JobComplete;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Starts queued jobs, oldest first, as handler slots (`concurrency`) come free. Ends when the
/// queue is closed and every started job has sent its completion, or at once (stopping the
/// running attempts) when `stop` is cancelled.
pub(super) async fn dispatch(
    exec: Executor,
    mut queued: mpsc::UnboundedReceiver<(Job, OwnedSemaphorePermit)>,
    stock: Arc<Stock>,
    done: mpsc::UnboundedSender<(JobComplete, Vec<OwnedSemaphorePermit>)>,
    pace: Arc<Pace>,
    unrecorded: Arc<Semaphore>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(exec.cfg.concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        let slot = tokio::select! {
            _ = stop.cancelled() => break,
            s = slots.clone().acquire_owned() => match s { Ok(s) => s, Err(_) => break },
        };
        let (job, held) = tokio::select! {
            _ = stop.cancelled() => break,
            j = queued.recv() => match j { Some(j) => j, None => break },
        };
        stock.started();
        let (kinds, clock, done, node, pace, unrecorded) = (
            exec.kinds.clone(),
            exec.clock.clone(),
            done.clone(),
            exec.cfg.node.clone(),
            pace.clone(),
            unrecorded.clone(),
        );
        tasks.spawn(async move {
            let started = clock.now();
            let ctx = JobContext {
                now: started,
                node: node.clone(),
            };
            let t = tokio::time::Instant::now();
            let outcome = execute(&kinds, &job, &ctx).await;
            pace.record(t.elapsed());
            let kind = kinds.get(job.kind.as_str());
            let c = completion_for(
                kind,
                &job,
                outcome,
                started,
                clock.now(),
                &node,
                rand::random(),
            );
            log_completion(&job, &c);
            // The handler slot comes free now if an unrecorded-outcome permit is free, and that
            // permit comes back once the outcome is committed; else the slot itself waits for
            // the commit. Either way at most `concurrency + max_unrecorded` jobs are ever sent
            // but not yet recorded, which bounds what a crash can make a receiver see twice.
            let waiting = match unrecorded.try_acquire_owned() {
                Ok(p) => {
                    drop(slot);
                    p
                }
                Err(_) => slot,
            };
            let _ = done.send((c, vec![held, waiting]));
        });
    }
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                return;
            }
            r = tasks.join_next() => if r.is_none() { return },
        }
    }
}

/// Jobs waiting in the local queue: claimed, not started yet.
#[derive(Debug, Default)]
pub(super) struct Stock(AtomicUsize);

impl Stock {
    /// `n` claimed jobs joined the queue.
    pub(super) fn queued(&self, n: usize) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// One left the queue for a handler slot.
    pub(super) fn started(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    /// How many wait.
    pub(super) fn len(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// How often a claim held back by [`claim_should_wait`] looks again.
pub(super) const STOCKED_RECHECK: Duration = Duration::from_millis(2);

/// Whether the next claim should wait to grow: it has room for less than half of `limit`
/// while the local queue still holds a job for every handler slot. Nobody waits on that claim
/// — the slots have their next jobs — and a claim costs a round trip and a plan whatever its
/// size: without the wait a busy node claimed as many jobs as had finished since its last
/// claim, 14 at a time at ten workers on PostgreSQL (`docs/benchmarks.md`).
pub(super) fn claim_should_wait(
    room: usize,
    limit: usize,
    queued: usize,
    concurrency: usize,
) -> bool {
    room < (limit / 2).max(1) && queued >= concurrency
}

/// How much work the local queue holds: about this long at the handlers' recent speed.
pub const PREFETCH_HORIZON: Duration = Duration::from_millis(100);

/// The handlers' recent speed: a moving average of one attempt's duration, in microseconds
/// (0 until the first attempt ends).
#[derive(Debug, Default)]
pub(super) struct Pace {
    avg_micros: AtomicU64,
    seen: AtomicBool,
}

impl Pace {
    pub(super) fn record(&self, d: Duration) {
        let x = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if !self.seen.swap(true, Ordering::Relaxed) {
            self.avg_micros.store(x, Ordering::Relaxed);
            return;
        }
        // An eighth of each new sample: smooth, yet a change of speed shows within dozens of
        // attempts. Races between handlers lose a sample now and then, which is harmless.
        let old = self.avg_micros.load(Ordering::Relaxed);
        let new = old - old / 8 + x / 8;
        self.avg_micros.store(new, Ordering::Relaxed);
    }

    /// Jobs to hold beyond the handler slots: what `concurrency` handlers finish within
    /// [`PREFETCH_HORIZON`] at the recent speed, at most `max`. Before any attempt has ended,
    /// as many as the slots.
    pub(super) fn ahead(&self, concurrency: usize, max: usize) -> usize {
        if !self.seen.load(Ordering::Relaxed) {
            return concurrency.min(max);
        }
        let horizon = u64::try_from(PREFETCH_HORIZON.as_micros()).unwrap_or(u64::MAX);
        let per_slot = horizon / self.avg_micros.load(Ordering::Relaxed).max(1);
        let ahead = per_slot.saturating_mul(u64::try_from(concurrency).unwrap_or(u64::MAX));
        usize::try_from(ahead).unwrap_or(usize::MAX).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim waits while it would be small and the queue has a job for every slot; a queue
    /// shorter than the slots, or room for half the limit, claims at once.
    #[test]
    fn a_small_claim_waits_only_while_the_queue_feeds_every_slot() {
        // Ten slots, limit 510: room for 14 with 400 queued waits; with 9 queued it claims.
        assert!(claim_should_wait(14, 510, 400, 10));
        assert!(!claim_should_wait(14, 510, 9, 10));
        // Room for half the limit claims whatever the queue holds.
        assert!(!claim_should_wait(255, 510, 400, 10));
        assert!(claim_should_wait(254, 510, 400, 10));
        // An empty queue never waits (a node just started, or slow handlers with no prefetch).
        assert!(!claim_should_wait(1, 2, 0, 1));
    }

    /// Before any attempt has ended the queue holds as many jobs as the slots; fast handlers
    /// get the whole prefetch, slow ones none (each slot is busy past the horizon).
    #[test]
    fn prefetch_follows_the_handlers_pace() {
        let pace = Pace::default();
        assert_eq!(pace.ahead(10, 500), 10);
        assert_eq!(pace.ahead(10, 4), 4);
        pace.record(Duration::from_micros(20));
        assert_eq!(pace.ahead(10, 500), 500);
        let slow = Pace::default();
        slow.record(Duration::from_secs(1));
        assert_eq!(slow.ahead(10, 500), 0);
        // 10 ms per attempt: each slot finishes 10 within the 100 ms horizon.
        let mid = Pace::default();
        mid.record(Duration::from_millis(10));
        assert_eq!(mid.ahead(10, 500), 100);
        // The average moves towards new samples.
        for _ in 0..100 {
            mid.record(Duration::from_millis(50));
        }
        assert_eq!(mid.ahead(10, 500), 20);
    }
}
