//! Jobs per state and kind (`kairos_jobs` on `/metrics`, the admin's overview) at a cost that
//! follows the queue, not what retention keeps.
//!
//! Counting every job at every scrape read the whole job table: with the default retention of
//! succeeded jobs (7 days) a node running 100 jobs a second keeps about 60 million rows, and
//! each scrape took seconds of the database — longer than Prometheus waits. So the count is
//! taken in two parts (`InsightStore::job_count_group`):
//! - **the queue** (`available`, `running`), read at every call through the partial indexes
//!   claims use: it costs what is waiting and running, and is always current;
//! - **what is retained** (`succeeded`, `skipped`, `cancelled`, `dead`): counted at every call
//!   while that takes under [`CountPolicy::inline_below`] (a small table, exact as before);
//!   once it takes longer, the last count is served and a new one runs in the background,
//!   [`CountPolicy::spacing`] times its own duration after the last began (at most
//!   [`CountPolicy::max_age`]), so that counting takes about a hundredth of one database
//!   backend however large the table grows. The first count runs in the background too, and
//!   a read waits for it at most [`CountPolicy::first_wait`], so that the first scrape after
//!   a restart on a large table is not the one that waits for it.
//!
//! The age of the retained part is `kairos_jobs_retained_age_seconds`. A background count that
//! fails (a database that cancels it at its `statement_timeout`) keeps the last count and is
//! not tried again before [`CountPolicy::retry_at`]: as long as a count of its duration would
//! wait, and at least ten seconds.

use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_store::{JobCount, JobCountGroup, JobStateGroup, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// When the retained states are counted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountPolicy {
    /// A count of the retained states that took less than this is taken again at every read.
    /// Default 100 ms.
    pub inline_below: Duration,
    /// A slower one is taken again in the background once this many times its duration has
    /// passed since it began. Default 100 (about 1 % of one database backend).
    pub spacing: u32,
    /// However long a count takes, the next begins at most this long after it. Default 30
    /// minutes.
    pub max_age: Duration,
    /// How long the first read waits for the first count, which runs in the background:
    /// after a restart on a large table, a scrape answers within this instead of waiting
    /// past Prometheus's timeout, and without the finished states until their count lands.
    /// Zero: the first read does not wait. Default 2 s.
    pub first_wait: Duration,
}

impl Default for CountPolicy {
    fn default() -> Self {
        CountPolicy {
            inline_below: Duration::from_millis(100),
            spacing: 100,
            max_age: Duration::from_secs(30 * 60),
            first_wait: Duration::from_secs(2),
        }
    }
}

impl CountPolicy {
    /// How long after a count that took `took` the next is due.
    pub fn refresh_after(&self, took: Duration) -> Duration {
        took.saturating_mul(self.spacing).min(self.max_age)
    }

    /// When a background count that began at `at` and failed after `took` may be tried
    /// again: as long after as a count of that duration would be (a database that cancels a
    /// count at its `statement_timeout` would otherwise be asked again at every scrape, each
    /// time for the whole timeout), and at least [`MIN_RETRY`] after.
    pub fn retry_at(&self, at: DateTime<Utc>, took: Duration) -> DateTime<Utc> {
        let wait = self.refresh_after(took).max(MIN_RETRY);
        chrono::Duration::from_std(wait)
            .ok()
            .and_then(|w| at.checked_add_signed(w))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// The shortest wait before a failed background count is tried again (a database that
/// refuses at once is not asked at every scrape either).
pub const MIN_RETRY: Duration = Duration::from_secs(10);

/// A count of the retained states.
#[derive(Debug, Clone)]
struct Taken {
    counts: Arc<Vec<JobCount>>,
    /// When it began, by the node's clock.
    at: DateTime<Utc>,
    /// How long it took.
    took: Duration,
}

/// Jobs per state and kind, from one read of the queue and the last count of what is retained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Per state and kind, ordered by state and kind.
    pub jobs: Vec<JobCount>,
    /// When the retained states in `jobs` were counted (now, when counted by this read);
    /// `None` while their first count runs, and `jobs` holds the queue's states only.
    pub retained_at: Option<DateTime<Utc>>,
}

impl Counts {
    /// Per state (kinds summed), ordered by state.
    pub fn by_state(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = Vec::new();
        for c in &self.jobs {
            match out.last_mut() {
                Some((s, n)) if *s == c.state => *n += c.count,
                _ => out.push((c.state.clone(), c.count)),
            }
        }
        out
    }
}

/// The counts one application shares: its `/metrics` scrapes and its admin pages.
#[derive(Debug, Default)]
pub struct JobCounts {
    policy: CountPolicy,
    last: tokio::sync::Mutex<Option<Taken>>,
    /// A background count is running.
    refreshing: AtomicBool,
    /// After a background count failed: not before then again ([`CountPolicy::retry_at`]).
    retry_at: std::sync::Mutex<Option<DateTime<Utc>>>,
    /// Wakes the reads waiting for the first count.
    landed: tokio::sync::Notify,
}

impl JobCounts {
    /// Counts kept by `policy`.
    pub fn new(policy: CountPolicy) -> Self {
        JobCounts {
            policy,
            ..Default::default()
        }
    }

    /// The queue read now and the retained states as [`CountPolicy`] allows. `Err` when the
    /// store does not answer (a failed background count keeps the last one and is logged).
    pub async fn read(
        self: &Arc<Self>,
        store: &Arc<dyn Store>,
        clock: &Arc<dyn Clock>,
    ) -> kairos_store::Result<Counts> {
        let queued = store
            .job_count_group(JobCountGroup {
                group: JobStateGroup::Queued,
            })
            .await?;
        let retained = self.retained(store, clock).await?;
        let mut jobs = queued;
        let retained_at = retained.map(|(counts, at)| {
            jobs.extend(counts.iter().cloned());
            at
        });
        jobs.sort_by(|a, b| (&a.state, &a.kind).cmp(&(&b.state, &b.kind)));
        Ok(Counts { jobs, retained_at })
    }

    /// The retained states' counts and when they were taken; `None` while the first count
    /// runs past [`CountPolicy::first_wait`].
    async fn retained(
        self: &Arc<Self>,
        store: &Arc<dyn Store>,
        clock: &Arc<dyn Clock>,
    ) -> kairos_store::Result<Option<(Arc<Vec<JobCount>>, DateTime<Utc>)>> {
        let mut last = self.last.lock().await;
        let now = clock.now();
        match last.as_ref() {
            // A table small enough to count every time.
            Some(t) if t.took < self.policy.inline_below => {
                let t = count(store, clock).await?;
                let out = (t.counts.clone(), t.at);
                *last = Some(t);
                Ok(Some(out))
            }
            Some(t) => {
                let due = (now - t.at)
                    .to_std()
                    .is_ok_and(|since| since >= self.policy.refresh_after(t.took));
                if due {
                    self.refresh(store, clock);
                }
                Ok(Some((t.counts.clone(), t.at)))
            }
            // The first count: in the background, waited for a moment (not at all when
            // `first_wait` is zero: a timer of zero still yields, and the count may land).
            None if self.policy.first_wait.is_zero() => {
                self.refresh(store, clock);
                Ok(None)
            }
            None => {
                let landed = self.landed.notified();
                tokio::pin!(landed);
                landed.as_mut().enable();
                self.refresh(store, clock);
                drop(last);
                let _ = tokio::time::timeout(self.policy.first_wait, landed).await;
                Ok(self
                    .last
                    .lock()
                    .await
                    .as_ref()
                    .map(|t| (t.counts.clone(), t.at)))
            }
        }
    }

    /// Count in the background unless a count runs already, or the last failed too recently.
    fn refresh(self: &Arc<Self>, store: &Arc<dyn Store>, clock: &Arc<dyn Clock>) {
        if self.backing_off(clock.now()) || self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (me, store, clock) = (self.clone(), store.clone(), clock.clone());
        tokio::spawn(async move {
            let at = clock.now();
            let started = Instant::now();
            match count(&store, &clock).await {
                Ok(t) => {
                    me.set_retry_at(None);
                    me.keep(t).await
                }
                Err(e) => {
                    let retry_at = me.policy.retry_at(at, started.elapsed());
                    me.set_retry_at(Some(retry_at));
                    tracing::warn!(
                        error = %e,
                        retry_at = %retry_at.to_rfc3339(),
                        "counting the finished jobs for /metrics failed; the last count is kept"
                    )
                }
            }
            me.refreshing.store(false, Ordering::Release);
            me.landed.notify_waiters();
        });
    }

    /// When the last background count failed to be tried again, by the node's clock; `None`
    /// when it succeeded (or none failed yet).
    pub fn retry_at(&self) -> Option<DateTime<Utc>> {
        *self.retry_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a failed count is not to be tried again yet at `now`.
    fn backing_off(&self, now: DateTime<Utc>) -> bool {
        self.retry_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|r| now < r)
    }

    fn set_retry_at(&self, at: Option<DateTime<Utc>>) {
        *self.retry_at.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    /// Keep `t` unless a later count is already kept.
    async fn keep(&self, t: Taken) {
        let mut last = self.last.lock().await;
        if last.as_ref().is_none_or(|l| l.at <= t.at) {
            *last = Some(t);
        }
    }
}

/// Count the retained states now.
async fn count(store: &Arc<dyn Store>, clock: &Arc<dyn Clock>) -> kairos_store::Result<Taken> {
    let at = clock.now();
    let started = Instant::now();
    let counts = store
        .job_count_group(JobCountGroup {
            group: JobStateGroup::Retained,
        })
        .await?;
    Ok(Taken {
        counts: Arc::new(counts),
        at,
        took: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_due_again_after_a_hundred_times_its_duration_and_at_most_max_age() {
        let p = CountPolicy::default();
        assert_eq!(
            p.refresh_after(Duration::from_millis(400)),
            Duration::from_secs(40)
        );
        assert_eq!(
            p.refresh_after(Duration::from_secs(12)),
            Duration::from_secs(1200)
        );
        assert_eq!(
            p.refresh_after(Duration::from_secs(60)),
            Duration::from_secs(1800),
            "at most max_age"
        );
    }

    #[test]
    fn a_failed_count_is_tried_again_after_a_hundred_times_its_duration_and_at_least_ten_seconds() {
        let p = CountPolicy::default();
        let at = DateTime::UNIX_EPOCH;
        // Cancelled by a 30 s statement_timeout: not before 30 minutes (max_age).
        assert_eq!(
            p.retry_at(at, Duration::from_secs(30)),
            at + chrono::Duration::minutes(30)
        );
        assert_eq!(
            p.retry_at(at, Duration::from_millis(500)),
            at + chrono::Duration::seconds(50)
        );
        // Refused at once: still ten seconds.
        assert_eq!(
            p.retry_at(at, Duration::from_millis(2)),
            at + chrono::Duration::seconds(10)
        );
    }

    #[test]
    fn by_state_sums_the_kinds() {
        let c = |state: &str, kind: &str, count| JobCount {
            state: state.into(),
            kind: kind.into(),
            count,
        };
        let counts = Counts {
            jobs: vec![
                c("available", "email", 2),
                c("available", "webhook", 3),
                c("succeeded", "webhook", 7),
            ],
            retained_at: Some(DateTime::UNIX_EPOCH),
        };
        assert_eq!(
            counts.by_state(),
            vec![("available".to_string(), 5), ("succeeded".to_string(), 7)]
        );
    }
}
