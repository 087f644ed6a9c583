//! The pruner: retention. Deletes finished jobs and their attempts once they are
//! older than the configured ages, in bounded batches, so the tables (and the admin lists)
//! do not grow without end.
//!
//! Ages count from `finished_at`. Succeeded, skipped and cancelled jobs share one age
//! (default 7 days); dead jobs are the dead-letter queue, waiting for someone to look and
//! replay, and get their own, longer age (default 30 days). A replayed job is unfinished
//! again and is never taken from under the replay. Unfinished jobs are never pruned. A
//! pruned job's dedupe key stays as a tombstone (default 400 days), so re-firing an old
//! period creates nothing. Exposures, finished expansions, the suppression log and resolved
//! SLO alerts are kept to an age too; active state (an unfinished expansion, a firing alert,
//! the reason for a current suppression) is never deleted.
//!
//! A leader-only [`Service`]: [`PrunerConfig`] with defaults and `validate()`,
//! [`Pruner::run_once`] for tests on a manual clock; the [`Runner`](crate::service::Runner)
//! runs it only while this node is the leader. Each batch is one short
//! transaction, kept near [`PrunerConfig::batch_time`] by its size and followed by a pause as
//! long, so that on SQLite the node's claims and completions get the write lock between two;
//! a run takes batches until one comes back short or `max_batches` is reached,
//! so a large backlog is worked off over several runs without holding the writer; while one
//! is left the next run comes after [`CATCH_UP_PAUSE`], not after the interval, so the pruner
//! keeps pace with a node that finishes more jobs per interval than one run deletes.
//!
//! After a run that deleted jobs it asks the store to vacuum the job tables
//! ([`NodeStore::db_vacuum`](kairos_store::NodeStore::db_vacuum)), at most once per
//! [`VACUUM_EVERY`] or interval: a no-op unless the database is PostgreSQL with autovacuum
//! off, where nothing else would reclaim what was deleted.

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::JobState;
use kairos_store::{ArtifactPrune, JobPrune, RetentionPrune, RetentionTable, Store};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The pause between two runs while a backlog is left (a run stopped at `max_batches`).
pub const CATCH_UP_PAUSE: Duration = Duration::from_secs(1);

/// The shortest time between two vacuums of the job tables (or the interval, if longer).
pub const VACUUM_EVERY: Duration = Duration::from_secs(60);

/// The smallest batch of jobs a slow database shrinks the pruner's batches to.
pub const MIN_JOB_BATCH: usize = 50;

/// The size of the next batch of jobs after one of `size` took `took`: in proportion when it
/// took longer than `target`, twice as large (at most `max`) when it took less than half.
pub fn next_job_batch(size: usize, took: Duration, target: Duration, max: usize) -> usize {
    let floor = MIN_JOB_BATCH.min(max);
    if took > target {
        let scaled = (size as u128 * target.as_micros()) / took.as_micros().max(1);
        usize::try_from(scaled).unwrap_or(max).clamp(floor, max)
    } else if took < target / 2 {
        size.saturating_mul(2).clamp(floor, max)
    } else {
        size.clamp(floor, max)
    }
}

/// Pruner settings.
#[derive(Debug, Clone)]
pub struct PrunerConfig {
    /// How often to prune. Default 10 minutes.
    pub interval: Duration,
    /// Age after which succeeded, skipped and cancelled jobs are deleted
    /// (`KAIROS_RETENTION_SUCCEEDED`). Default 7 days; `None` keeps them.
    pub succeeded: Option<Duration>,
    /// Age after which dead jobs (the dead-letter queue) are deleted
    /// (`KAIROS_RETENTION_DEAD`). Default 30 days; `None` keeps them.
    pub dead: Option<Duration>,
    /// Age after which artifacts (a day's digest) are deleted, counted from when they were
    /// stored (`KAIROS_RETENTION_ARTIFACTS`). Default 365 days; `None` keeps them.
    pub artifacts: Option<Duration>,
    /// Age after which inbound provider events (bounces, complaints: raw payloads with
    /// addresses) are deleted, counted from their receipt (`KAIROS_RETENTION_EVENTS`). The
    /// suppressions they caused stay. Default 30 days; `None` keeps them.
    pub events: Option<Duration>,
    /// Age after which the dedupe keys of pruned jobs (tombstones) are forgotten, counted
    /// from when the job finished (`KAIROS_RETENTION_DEDUPE`). Until then no insert creates
    /// the key again, so re-firing an old period sends nothing. Default 400 days (longer
    /// than a yearly schedule's period); `None` keeps them.
    pub dedupe: Option<Duration>,
    /// Age after which A/B exposures are deleted. Default 400 days; `None` keeps them.
    pub exposures: Option<Duration>,
    /// Age after which finished audience expansions (their cursors) are deleted, from their
    /// last update; an unfinished one is never deleted. Default 30 days; `None` keeps them.
    pub expansions: Option<Duration>,
    /// Age after which suppression log entries are deleted; the newest entry of an address
    /// still suppressed stays. Default 400 days; `None` keeps them.
    pub suppression_log: Option<Duration>,
    /// Age after which resolved SLO alerts (recovery notified) are deleted; a firing one
    /// stays. Default 30 days; `None` keeps them.
    pub slo_alerts: Option<Duration>,
    /// Age after which endpoint health's hourly counters are deleted (the 24 h failure rate
    /// reads only the last day). Default 48 h; `None` keeps them.
    pub endpoint_health: Option<Duration>,
    /// Age after which a concurrency slot row no job holds any more (its job finished, or
    /// runs again under another lease) is deleted, from when it was taken. A claim of the
    /// key frees such rows itself; this removes those of keys no job uses again (a crashed
    /// node's, a one-off key's). Default 10 minutes; `None` keeps them.
    pub concurrency_slots: Option<Duration>,
    /// Most jobs deleted per batch (one transaction). Default 1000.
    pub batch: usize,
    /// Most batches per run and class. Default 20. A run deletes at most `batch` ×
    /// `max_batches` jobs of a class, however small its batches became (`batch_time`).
    pub max_batches: usize,
    /// How long one batch of jobs should hold its transaction. Default 20 ms. A batch that
    /// took longer makes the next one smaller in proportion (down to [`MIN_JOB_BATCH`]); one
    /// that took less than half of it lets the next grow back (up to `batch`). Between two
    /// batches the pruner pauses as long as the last one took (at most `batch_time`): on
    /// SQLite a batch holds the one write lock that claims and completions need too, so a
    /// delete of a thousand jobs (about 80 ms on the CI machine) stalled every job due
    /// meanwhile, and back-to-back batches could keep the lock from them for a whole run.
    pub batch_time: Duration,
}

impl Default for PrunerConfig {
    fn default() -> Self {
        PrunerConfig {
            interval: Duration::from_secs(600),
            succeeded: Some(Duration::from_secs(7 * 24 * 3600)),
            dead: Some(Duration::from_secs(30 * 24 * 3600)),
            artifacts: Some(Duration::from_secs(365 * 24 * 3600)),
            events: Some(Duration::from_secs(30 * 24 * 3600)),
            dedupe: Some(Duration::from_secs(400 * 24 * 3600)),
            exposures: Some(Duration::from_secs(400 * 24 * 3600)),
            expansions: Some(Duration::from_secs(30 * 24 * 3600)),
            suppression_log: Some(Duration::from_secs(400 * 24 * 3600)),
            slo_alerts: Some(Duration::from_secs(30 * 24 * 3600)),
            endpoint_health: Some(Duration::from_secs(48 * 3600)),
            concurrency_slots: Some(Duration::from_secs(600)),
            batch: 1000,
            max_batches: 20,
            batch_time: Duration::from_millis(20),
        }
    }
}

/// The longest accepted retention age (100 years: "keep" is `None`).
const MAX_AGE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl ServiceConfig for PrunerConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        PrunerConfig::validate(self)
    }
}

impl PrunerConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.interval.is_zero() {
            return Err(Error::invalid("pruner.interval", "must be more than 0"));
        }
        for (name, age) in [
            ("succeeded", self.succeeded),
            ("dead", self.dead),
            ("artifacts", self.artifacts),
            ("events", self.events),
            ("dedupe", self.dedupe),
            ("exposures", self.exposures),
            ("expansions", self.expansions),
            ("suppression_log", self.suppression_log),
            ("slo_alerts", self.slo_alerts),
            ("endpoint_health", self.endpoint_health),
            ("concurrency_slots", self.concurrency_slots),
        ] {
            if let Some(a) = age
                && (a < Duration::from_secs(60) || a > MAX_AGE)
            {
                return Err(Error::invalid(
                    format!("pruner.{name}"),
                    "must be between 1 minute and 100 years (or unset to keep forever)",
                ));
            }
        }
        if self.batch == 0 || self.batch > 100_000 {
            return Err(Error::invalid(
                "pruner.batch",
                "must be between 1 and 100000",
            ));
        }
        if self.max_batches == 0 {
            return Err(Error::invalid("pruner.max_batches", "must be at least 1"));
        }
        if self.batch_time < Duration::from_millis(1) || self.batch_time > Duration::from_secs(10) {
            return Err(Error::invalid(
                "pruner.batch_time",
                "must be between 1 ms and 10 s",
            ));
        }
        Ok(())
    }
}

/// What one run deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrunerReport {
    /// Succeeded, skipped and cancelled jobs deleted.
    pub succeeded_jobs: u64,
    /// Dead jobs deleted.
    pub dead_jobs: u64,
    /// Attempts deleted with them.
    pub attempts: u64,
    /// Artifacts deleted.
    pub artifacts: u64,
    /// Inbound events deleted.
    pub events: u64,
    /// Rows deleted from the other retention tables (dedupe tombstones, exposures, finished
    /// expansions, the suppression log, resolved SLO alerts), by table.
    pub tables: Vec<(RetentionTable, u64)>,
    /// Whether a class stopped at `max_batches` with more left (the next run goes on).
    pub more: bool,
    /// The tables the store vacuumed after this run (PostgreSQL with autovacuum off).
    pub vacuumed: Vec<String>,
}

/// The pruner.
#[derive(Clone)]
pub struct Pruner {
    cfg: PrunerConfig,
    store: Arc<dyn Store>,
    /// When this pruner last asked the store to vacuum.
    vacuumed_at: Arc<Mutex<Option<DateTime<Utc>>>>,
    /// The size of the next batch of jobs (see [`PrunerConfig::batch_time`]).
    job_batch: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Pruner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pruner")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// `now - age`, or `None` when that is before the representable range (nothing that old).
fn cut_off(now: DateTime<Utc>, age: Duration) -> Option<DateTime<Utc>> {
    now.checked_sub_signed(chrono::Duration::from_std(age).ok()?)
}

impl Pruner {
    /// A pruner over `store`. Fails if the config is not valid.
    pub fn new(cfg: PrunerConfig, store: Arc<dyn Store>) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Pruner {
            job_batch: Arc::new(AtomicUsize::new(cfg.batch)),
            cfg,
            store,
            vacuumed_at: Arc::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &PrunerConfig {
        &self.cfg
    }

    /// The configured age of a retention table.
    fn age(&self, table: RetentionTable) -> Option<Duration> {
        match table {
            RetentionTable::DedupeTombstones => self.cfg.dedupe,
            RetentionTable::Exposures => self.cfg.exposures,
            RetentionTable::Expansions => self.cfg.expansions,
            RetentionTable::SuppressionLog => self.cfg.suppression_log,
            RetentionTable::SloAlerts => self.cfg.slo_alerts,
            RetentionTable::EndpointHealthHours => self.cfg.endpoint_health,
            RetentionTable::ConcurrencySlots => self.cfg.concurrency_slots,
        }
    }

    /// One run at `now`: each class in bounded batches.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<PrunerReport, kairos_store::Error> {
        let mut report = PrunerReport::default();
        let classes = [
            (
                self.cfg.succeeded,
                vec![JobState::Succeeded, JobState::Skipped, JobState::Cancelled],
                false,
            ),
            (self.cfg.dead, vec![JobState::Dead], true),
        ];
        for (age, states, dead) in classes {
            let Some(older_than) = age.and_then(|a| cut_off(now, a)) else {
                continue;
            };
            // Bounded: every pass deletes a full batch (at least one job) or ends the loop.
            let mut left = self.cfg.batch.saturating_mul(self.cfg.max_batches);
            while left > 0 {
                let want = self.job_batch.load(Ordering::Relaxed);
                let size = want.min(left);
                let started = Instant::now();
                let r = self
                    .store
                    .job_prune(JobPrune {
                        states: states.clone(),
                        older_than,
                        limit: size as i64,
                    })
                    .await?;
                let took = started.elapsed();
                let next = next_job_batch(size, took, self.cfg.batch_time, self.cfg.batch);
                // A batch cut short by the run's budget can say "smaller", not "larger".
                if size == want {
                    self.job_batch.store(next, Ordering::Relaxed);
                } else if took > self.cfg.batch_time {
                    self.job_batch.store(next.min(want), Ordering::Relaxed);
                }
                if dead {
                    report.dead_jobs += r.jobs;
                } else {
                    report.succeeded_jobs += r.jobs;
                }
                report.attempts += r.attempts;
                if (r.jobs as usize) < size {
                    break;
                }
                left -= size;
                if left == 0 {
                    report.more = true;
                    break;
                }
                // Let the node's own writes have the database between two batches.
                tokio::time::sleep(took.min(self.cfg.batch_time)).await;
            }
        }
        // Artifacts: their own age, counted from when they were stored, in the same
        // bounded batches.
        if let Some(before) = self.cfg.artifacts.and_then(|a| cut_off(now, a)) {
            for n in 0..self.cfg.max_batches {
                let deleted = self
                    .store
                    .artifact_prune(ArtifactPrune {
                        before,
                        limit: self.cfg.batch as i64,
                    })
                    .await?;
                report.artifacts += deleted;
                if (deleted as usize) < self.cfg.batch {
                    break;
                }
                if n + 1 == self.cfg.max_batches {
                    report.more = true;
                }
            }
        }
        // Inbound events: raw provider payloads, their own age from receipt.
        if let Some(before) = self.cfg.events.and_then(|a| cut_off(now, a)) {
            for n in 0..self.cfg.max_batches {
                let deleted = self
                    .store
                    .inbound_event_prune(kairos_store::InboundEventPrune {
                        before,
                        limit: self.cfg.batch as i64,
                    })
                    .await?;
                report.events += deleted;
                if (deleted as usize) < self.cfg.batch {
                    break;
                }
                if n + 1 == self.cfg.max_batches {
                    report.more = true;
                }
            }
        }
        for table in RetentionTable::ALL {
            let Some(before) = self.age(table).and_then(|a| cut_off(now, a)) else {
                continue;
            };
            let mut total = 0;
            for n in 0..self.cfg.max_batches {
                let deleted = self
                    .store
                    .retention_prune(RetentionPrune {
                        table,
                        before,
                        limit: self.cfg.batch as i64,
                    })
                    .await?;
                total += deleted;
                if (deleted as usize) < self.cfg.batch {
                    break;
                }
                if n + 1 == self.cfg.max_batches {
                    report.more = true;
                }
            }
            if total > 0 {
                tracing::info!(table = table.as_str(), rows = total, "pruned old rows");
                report.tables.push((table, total));
            }
        }
        if report.events > 0 {
            tracing::info!(events = report.events, "pruned inbound events");
        }
        if report.artifacts > 0 {
            tracing::info!(artifacts = report.artifacts, "pruned artifacts");
        }
        if report.succeeded_jobs + report.dead_jobs > 0 {
            tracing::info!(
                succeeded_jobs = report.succeeded_jobs,
                dead_jobs = report.dead_jobs,
                attempts = report.attempts,
                more = report.more,
                "pruned finished jobs"
            );
        }
        if report.succeeded_jobs + report.dead_jobs > 0 && self.vacuum_due(now) {
            let v = self
                .store
                .db_vacuum(kairos_store::DbVacuum::default())
                .await?;
            if !v.tables.is_empty() {
                tracing::info!(
                    tables = ?v.tables,
                    "vacuumed the job tables (the database's autovacuum is off)"
                );
            }
            report.vacuumed = v.tables;
        }
        Ok(report)
    }

    /// Whether the last vacuum is at least [`VACUUM_EVERY`] (or the interval) before `now`;
    /// if so, `now` is recorded as the last.
    fn vacuum_due(&self, now: DateTime<Utc>) -> bool {
        let every = chrono::Duration::from_std(VACUUM_EVERY.max(self.cfg.interval))
            .unwrap_or(chrono::Duration::MAX);
        let mut last = self.vacuumed_at.lock().unwrap_or_else(|e| e.into_inner());
        let due = last.is_none_or(|t| now.signed_duration_since(t) >= every);
        if due {
            *last = Some(now);
        }
        due
    }
}

#[async_trait]
impl Service for Pruner {
    type Report = PrunerReport;
    type Config = PrunerConfig;
    fn name(&self) -> &'static str {
        "pruner"
    }
    fn config(&self) -> &PrunerConfig {
        &self.cfg
    }
    fn leader_only(&self) -> bool {
        true
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<PrunerReport, kairos_store::Error> {
        Pruner::run_once(self, now).await
    }
    async fn next_run(&self, report: &PrunerReport, _now: DateTime<Utc>) -> crate::service::Next {
        crate::service::Next::In(if report.more {
            CATCH_UP_PAUSE.min(self.cfg.interval)
        } else {
            self.cfg.interval
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_7_and_30_days_and_validated() {
        let c = PrunerConfig::default();
        assert_eq!(c.succeeded, Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(c.dead, Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(c.validate(), Ok(()));
        let bad = |f: fn(&mut PrunerConfig)| {
            let mut c = PrunerConfig::default();
            f(&mut c);
            c.validate().unwrap_err().field().to_string()
        };
        assert_eq!(bad(|c| c.interval = Duration::ZERO), "pruner.interval");
        assert_eq!(
            bad(|c| c.succeeded = Some(Duration::from_secs(5))),
            "pruner.succeeded"
        );
        assert_eq!(bad(|c| c.dead = Some(Duration::MAX)), "pruner.dead");
        assert_eq!(bad(|c| c.batch = 0), "pruner.batch");
        assert_eq!(bad(|c| c.max_batches = 0), "pruner.max_batches");
        assert_eq!(bad(|c| c.batch_time = Duration::ZERO), "pruner.batch_time");
        assert_eq!(
            bad(|c| c.batch_time = Duration::from_secs(11)),
            "pruner.batch_time"
        );
        let keep = PrunerConfig {
            succeeded: None,
            dead: None,
            ..PrunerConfig::default()
        };
        assert_eq!(keep.validate(), Ok(()));
    }

    #[tokio::test]
    async fn a_run_with_a_backlog_left_is_followed_after_a_short_pause() {
        use crate::service::Next;
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(
            kairos_store_sqlite::SqliteStore::open(&dir.path().join("k.db"))
                .await
                .expect("open"),
        );
        let p = Pruner::new(PrunerConfig::default(), store).expect("pruner");
        let now = DateTime::parse_from_rfc3339("2026-12-05T12:00:00Z")
            .expect("a time")
            .with_timezone(&Utc);
        let more = PrunerReport {
            more: true,
            ..PrunerReport::default()
        };
        assert_eq!(p.next_run(&more, now).await, Next::In(CATCH_UP_PAUSE));
        assert_eq!(
            p.next_run(&PrunerReport::default(), now).await,
            Next::In(Duration::from_secs(600))
        );
        // Vacuums are spaced by the interval (10 minutes here), whatever asks.
        assert!(p.vacuum_due(now));
        assert!(!p.vacuum_due(now + chrono::Duration::seconds(599)));
        assert!(p.vacuum_due(now + chrono::Duration::seconds(600)));
    }

    #[test]
    fn cut_off_never_panics() {
        let now = DateTime::<Utc>::MIN_UTC;
        assert_eq!(cut_off(now, Duration::from_secs(86_400)), None);
    }

    /// A batch slower than the target shrinks the next in proportion, never below the floor;
    /// a quick one doubles it, never past the configured batch; one near the target stays.
    #[test]
    fn job_batches_follow_how_long_the_last_one_held_its_transaction() {
        let ms = Duration::from_millis;
        let target = ms(20);
        assert_eq!(next_job_batch(1000, ms(80), target, 1000), 250);
        assert_eq!(next_job_batch(250, ms(10), target, 1000), 250);
        assert_eq!(next_job_batch(250, ms(9), target, 1000), 500);
        assert_eq!(next_job_batch(600, ms(2), target, 1000), 1000);
        assert_eq!(
            next_job_batch(100, Duration::from_secs(5), target, 1000),
            MIN_JOB_BATCH
        );
        // A configured batch below the floor is kept as it is.
        assert_eq!(next_job_batch(3, Duration::from_secs(5), target, 3), 3);
        assert_eq!(next_job_batch(1000, Duration::ZERO, target, 1000), 1000);
    }
}
