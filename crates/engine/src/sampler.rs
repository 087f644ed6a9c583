//! The queue sampler: once a minute ends, one sample of the queue — jobs due and available,
//! jobs running, and the lateness p99 of the jobs that started in that minute — stored for the
//! admin's charts of the last hour and day (issue 36); samples older than the retention
//! (2 days by default) are deleted.
//!
//! A leader-only [`Service`]: [`SamplerConfig`] with defaults and `validate()`,
//! [`Sampler::run_once`] for tests on a manual clock. The store writes a minute's sample once
//! (`ON CONFLICT DO NOTHING`), so two nodes that both believe they lead for a moment store
//! one sample, not two. A run samples the minute that ended last; a minute in which no node
//! led (or the node was down) has no sample, and the charts show a gap there.
//!
//! It also counts each quarter hour once (migration 0038, [`kairos_store::quarters`]): the jobs
//! with a topic that succeeded in it per kind and topic, the jobs decided in it per schedule or
//! topic, state and skip reason, and the jobs finished in it per kind and state (migration
//! 0039); the monitor's `bounce_rate`, `complaint_rate`, `skip_rate` and `failure_rate` sum
//! those counts over their week, day or hour instead of reading every job of it at every pass. A quarter is counted [`SETTLE`] after its end; quarters of the kept window
//! without a count (no leader, a restart, before the migration) are counted
//! [`BACKFILL_PER_RUN`] at a time, newest first, and counts older than the longest of those
//! windows are deleted.

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::{
    QUARTER, QuarterCountList, QuarterCountOf, QuarterCountPrune, QuarterCountRecord,
    QueueSamplePrune, QueueSampleRecord, Store, minute_of, quarter_of,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long after its end a quarter is counted: completions committed late (a node whose clock
/// runs a little behind) are in it by then.
pub const SETTLE: chrono::TimeDelta = chrono::TimeDelta::minutes(2);
/// Most quarters without a count that one run counts (each reads a quarter of finished jobs).
pub const BACKFILL_PER_RUN: usize = 4;
/// How long quarter counts are kept unless the engine says otherwise: the monitor's default
/// deliverability window.
const KEEP_COUNTS: Duration = Duration::from_secs(7 * 24 * 3600);

/// Sampler settings.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// How often to look whether a minute ended (a sample is taken within this long after
    /// its minute's end). Default 10 s; between 1 s and 60 s.
    pub interval: Duration,
    /// How long samples are kept. Default 2 days (the charts show the last day); between
    /// 1 hour and 400 days.
    pub retention: Duration,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            interval: Duration::from_secs(10),
            retention: Duration::from_secs(2 * 24 * 3600),
        }
    }
}

impl ServiceConfig for SamplerConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        SamplerConfig::validate(self)
    }
}

impl SamplerConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.interval < Duration::from_secs(1) || self.interval > Duration::from_secs(60) {
            return Err(Error::invalid(
                "sampler.interval",
                "must be between 1 second and 60 seconds",
            ));
        }
        if self.retention < Duration::from_secs(3600)
            || self.retention > Duration::from_secs(400 * 24 * 3600)
        {
            return Err(Error::invalid(
                "sampler.retention",
                "must be between 1 hour and 400 days",
            ));
        }
        Ok(())
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplerReport {
    /// The sample stored, if this run stored one (none when the minute had one already).
    pub sample: Option<kairos_store::QueueSample>,
    /// Old samples deleted.
    pub pruned: u64,
    /// Quarter hours this run counted.
    pub quarters: u64,
}

/// The queue sampler.
#[derive(Clone)]
pub struct Sampler {
    cfg: SamplerConfig,
    store: Arc<dyn Store>,
    keep_counts: Duration,
    /// Whether the kept window may hold quarters without a count (so the next run looks).
    gaps: Arc<AtomicBool>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// A sampler over `store`. Fails if the config is not valid.
    pub fn new(cfg: SamplerConfig, store: Arc<dyn Store>) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Sampler {
            cfg,
            store,
            keep_counts: KEEP_COUNTS,
            gaps: Arc::new(AtomicBool::new(true)),
        })
    }

    /// Keep the quarter counts for `keep` (the longest window of the monitor's that sums
    /// them); 7 days unless set.
    pub fn keep_counts_for(mut self, keep: Duration) -> Self {
        self.keep_counts = keep;
        self
    }

    /// The settings.
    pub fn config(&self) -> &SamplerConfig {
        &self.cfg
    }

    /// One run at `now`: sample the minute that ended last (if not sampled yet), then delete
    /// the samples past the retention.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<SamplerReport, kairos_store::Error> {
        let minute = minute_of(now) - chrono::Duration::minutes(1);
        let sample = self
            .store
            .queue_sample_record(QueueSampleRecord { minute, now })
            .await?;
        let retention = chrono::Duration::from_std(self.cfg.retention)
            .unwrap_or_else(|_| chrono::Duration::days(2));
        let pruned = match now.checked_sub_signed(retention) {
            Some(before) => {
                self.store
                    .queue_sample_prune(QueueSamplePrune { before })
                    .await?
            }
            None => 0,
        };
        let quarters = self.count_quarters(now).await?;
        Ok(SamplerReport {
            sample,
            pruned,
            quarters,
        })
    }

    /// Count the last settled quarter, and up to [`BACKFILL_PER_RUN`] quarters of the kept
    /// window without a count while there are any; delete counts past the window. How many
    /// quarters were stored.
    async fn count_quarters(&self, now: DateTime<Utc>) -> Result<u64, kairos_store::Error> {
        let settled = quarter_of(now - SETTLE) - QUARTER;
        let fresh = self
            .store
            .quarter_count_record(QuarterCountRecord {
                start: settled,
                now,
            })
            .await?;
        let keep = chrono::Duration::from_std(self.keep_counts)
            .unwrap_or_else(|_| chrono::Duration::days(7));
        let Some(oldest) = now.checked_sub_signed(keep).map(quarter_of) else {
            return Ok(u64::from(fresh));
        };
        if fresh {
            self.store
                .quarter_count_prune(QuarterCountPrune { before: oldest })
                .await?;
        }
        if !fresh && !self.gaps.load(Ordering::Relaxed) {
            return Ok(u64::from(fresh));
        }
        let taken: std::collections::HashSet<_> = self
            .store
            .quarter_count_list(QuarterCountList {
                since: oldest,
                until: settled + QUARTER,
                of: QuarterCountOf::Marks,
            })
            .await?
            .taken
            .into_iter()
            .collect();
        let mut missing = std::iter::successors(Some(settled), |q| Some(*q - QUARTER))
            .take_while(|q| *q >= oldest)
            .filter(|q| !taken.contains(q));
        let mut stored = u64::from(fresh);
        // A quarter left uncounted (its jobs kept being retried while it was read) is looked
        // for again on the next run.
        let mut left = false;
        for q in missing.by_ref().take(BACKFILL_PER_RUN) {
            let done = self
                .store
                .quarter_count_record(QuarterCountRecord { start: q, now })
                .await?;
            stored += u64::from(done);
            left |= !done;
        }
        self.gaps
            .store(left || missing.next().is_some(), Ordering::Relaxed);
        Ok(stored)
    }
}

#[async_trait]
impl Service for Sampler {
    type Report = SamplerReport;
    type Config = SamplerConfig;
    fn name(&self) -> &'static str {
        "sampler"
    }
    fn config(&self) -> &SamplerConfig {
        &self.cfg
    }
    fn leader_only(&self) -> bool {
        true
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<SamplerReport, kairos_store::Error> {
        Sampler::run_once(self, now).await
    }
}
