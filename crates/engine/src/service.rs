//! The shape of every background service, and the one loop that runs them all.
//!
//! A service ([`Service`]) is a name, a config with defaults and `validate()`
//! ([`ServiceConfig`]), `run_once(now)` — one bounded unit of work returning a report — and
//! when to run next. Everything else is written once, in [`Runner`]: the loop, the wake-up (a
//! timer, and a [`Notify`] for work announced by another part of the node), cancellation,
//! back-off after failed runs ([`Backoff`]), error logging, and the leader gate for the
//! services that must run on one node only. Tests call `run_once` directly on a manual clock,
//! or [`Runner::turn`] for one turn of the loop.
//!
//! The executor keeps its own worker pool but waits with the same pieces
//! ([`sleep_or_wake`], [`Backoff`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_store::Leader;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A service's settings: defaults, and a check whose error names the wrong field.
pub trait ServiceConfig: Default + Clone + Debug + Send + Sync + 'static {
    /// Check the settings; the error names the field.
    fn validate(&self) -> Result<(), kairos_core::Error>;
}

/// When a service runs next, after a successful run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// At once: work is left (a backlog is drained oldest first, without waiting).
    Now,
    /// After this long, unless woken earlier.
    In(Duration),
}

/// One background service of a node.
#[async_trait]
pub trait Service: Send + Sync + 'static {
    /// What one run did.
    type Report: Debug + Send + Sync;
    /// Its settings.
    type Config: ServiceConfig;

    /// The name in logs (`scheduler`, `rescuer`, …).
    fn name(&self) -> &'static str;
    /// Its settings.
    fn config(&self) -> &Self::Config;
    /// Whether it must run on one node only: then it runs only while the node leads.
    fn leader_only(&self) -> bool {
        false
    }
    /// The longest wait between two runs, and the wait after a first failed run.
    fn interval(&self) -> Duration;
    /// One run at `now`.
    async fn run_once(&self, now: DateTime<Utc>) -> Result<Self::Report, kairos_store::Error>;
    /// After a successful run (`now` is when it started): when to run next. Default: after
    /// the interval.
    async fn next_run(&self, _report: &Self::Report, _now: DateTime<Utc>) -> Next {
        Next::In(self.interval())
    }
    /// Whether the run made jobs due, so that the executor looks at once.
    fn made_jobs(&self, _report: &Self::Report) -> bool {
        false
    }
}

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The node is shutting down.
    Cancelled,
    /// Someone announced work.
    Notified,
    /// The time was up.
    Timer,
}

/// Wait for `d`, a wake-up on `wake` (if given) or `cancel`, whichever comes first.
/// Cancellation wins when several are ready.
pub async fn sleep_or_wake(
    d: Duration,
    wake: Option<&Notify>,
    cancel: &CancellationToken,
) -> Woken {
    let notified = async {
        match wake {
            Some(w) => w.notified().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Woken::Cancelled,
        _ = notified => Woken::Notified,
        _ = tokio::time::sleep(d) => Woken::Timer,
    }
}

/// The wait after consecutive failures: the interval after the first, then doubling, up to a
/// ceiling (never below the interval). A database outage is retried steadily instead of in a
/// tight loop; a single hiccup costs one interval, as before.
#[derive(Debug, Clone)]
pub struct Backoff {
    max: Duration,
    failures: u32,
}

/// The default ceiling of [`Backoff`].
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl Backoff {
    /// A back-off growing up to `max`.
    pub fn new(max: Duration) -> Self {
        Backoff { max, failures: 0 }
    }

    /// Record a failure; the wait before the next try, from the normal `interval`.
    pub fn failed(&mut self, interval: Duration) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let factor = 1u32 << (self.failures - 1).min(16);
        interval.saturating_mul(factor).min(self.max.max(interval))
    }

    /// Record a success: the next failure waits one interval again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(MAX_BACKOFF)
    }
}

/// What one turn of the loop did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Not run: the service is leader-only and this node does not lead. Waits the interval.
    NotLeader(Duration),
    /// Ran; what comes next.
    Ran(Next),
    /// Ran and failed (logged); waits this long (see [`Backoff`]).
    Failed(Duration),
}

/// Runs services: the loop, wake-up, cancellation, back-off, logging and leader gate. Cheap
/// to clone; configure one per service with its wake-ups.
#[derive(Clone)]
pub struct Runner {
    clock: Arc<dyn Clock>,
    leader: Leader,
    wake: Option<Arc<Notify>>,
    on_jobs: Option<Arc<Notify>>,
    max_backoff: Duration,
    first_turn_after: Duration,
}

impl Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("leader", &self.leader.is_leader())
            .field("max_backoff", &self.max_backoff)
            .field("first_turn_after", &self.first_turn_after)
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner on `clock`; the node always leads until [`Runner::with_leader`].
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Runner {
            clock,
            leader: Leader::always(),
            wake: None,
            on_jobs: None,
            max_backoff: MAX_BACKOFF,
            first_turn_after: Duration::ZERO,
        }
    }

    /// Run leader-only services only while `leader` leads.
    pub fn with_leader(mut self, leader: Leader) -> Self {
        self.leader = leader;
        self
    }

    /// Also run when `wake` is notified, not only when the wait is over.
    pub fn with_wake(mut self, wake: Arc<Notify>) -> Self {
        self.wake = Some(wake);
        self
    }

    /// Notify `on_jobs` after a run that made jobs due (the executor's wake-up).
    pub fn with_on_jobs(mut self, on_jobs: Arc<Notify>) -> Self {
        self.on_jobs = Some(on_jobs);
        self
    }

    /// Wait `d` before the first turn (default none): a wake-up does not start it earlier.
    pub fn with_first_turn_after(mut self, d: Duration) -> Self {
        self.first_turn_after = d;
        self
    }

    /// The longest wait after failures (default [`MAX_BACKOFF`]).
    pub fn with_max_backoff(mut self, max: Duration) -> Self {
        self.max_backoff = max;
        self
    }

    /// One turn: run the service at the clock's now (if allowed), log a failure, notify the
    /// executor, and say how long to wait. `backoff` carries the failures across turns.
    pub async fn turn<S: Service + ?Sized>(&self, svc: &S, backoff: &mut Backoff) -> Turn {
        if svc.leader_only() && !self.leader.is_leader() {
            return Turn::NotLeader(svc.interval());
        }
        let now = self.clock.now();
        match svc.run_once(now).await {
            Ok(report) => {
                backoff.succeeded();
                if svc.made_jobs(&report)
                    && let Some(n) = &self.on_jobs
                {
                    n.notify_one();
                }
                Turn::Ran(svc.next_run(&report, now).await)
            }
            Err(e) => {
                let wait = backoff.failed(svc.interval());
                tracing::error!(service = svc.name(), error = %e, failures = backoff.failures(),
                    retry_in_ms = wait.as_millis() as u64, "service run failed");
                Turn::Failed(wait)
            }
        }
    }

    /// Run `svc` until `cancel`: a turn, then a wait for the time it asks, a wake-up or the
    /// cancellation. A backlog ([`Next::Now`]) runs again at once.
    pub async fn run<S: Service + ?Sized>(&self, svc: &S, cancel: CancellationToken) {
        let mut backoff = Backoff::new(self.max_backoff);
        if !self.first_turn_after.is_zero()
            && sleep_or_wake(self.first_turn_after, None, &cancel).await == Woken::Cancelled
        {
            return;
        }
        while !cancel.is_cancelled() {
            let wait = match self.turn(svc, &mut backoff).await {
                Turn::Ran(Next::Now) => continue,
                Turn::Ran(Next::In(d)) | Turn::NotLeader(d) => (d, self.wake.as_deref()),
                // A failing service is not woken early: each wake-up would fail again.
                Turn::Failed(d) => (d, None),
            };
            let (d, wake) = wait;
            let d = d.max(Duration::from_millis(1));
            if sleep_or_wake(d, wake, &cancel).await == Woken::Cancelled {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_ceiling_and_resets() {
        let mut b = Backoff::new(Duration::from_secs(30));
        let s = Duration::from_secs;
        assert_eq!(b.failed(s(1)), s(1));
        assert_eq!(b.failed(s(1)), s(2));
        assert_eq!(b.failed(s(1)), s(4));
        for _ in 0..100 {
            b.failed(s(1));
        }
        assert_eq!(b.failed(s(1)), s(30));
        b.succeeded();
        assert_eq!(b.failed(s(1)), s(1));
        // An interval above the ceiling is kept: the back-off never shortens a wait.
        let mut b = Backoff::new(Duration::from_secs(30));
        assert_eq!(b.failed(s(600)), s(600));
        assert_eq!(b.failed(s(600)), s(600));
    }
}
