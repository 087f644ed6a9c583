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

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::{QueueSamplePrune, QueueSampleRecord, Store, minute_of};
use std::sync::Arc;
use std::time::Duration;

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
}

/// The queue sampler.
#[derive(Clone)]
pub struct Sampler {
    cfg: SamplerConfig,
    store: Arc<dyn Store>,
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
        Ok(Sampler { cfg, store })
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
        Ok(SamplerReport { sample, pruned })
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
