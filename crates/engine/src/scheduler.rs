//! The scheduler: claims due schedules (oldest first, bounded batch), plans their
//! firings per misfire policy, expands each firing into jobs and advances `next_fire_at` in
//! one transaction per schedule. A [`Service`] run by the [`Runner`](crate::service::Runner)
//! on every node: at the earliest known due time, on a wake-up, or at the poll interval.

use crate::catch_up::{self, Need};
use crate::expand::jobs_for_firing;
use crate::overlap;
use crate::service::{Next, Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_core::schedule::{Overlap, period_key, plan};
use kairos_store::{
    CatchUp, CatchUpDue, CatchUpFire, Schedule, ScheduleBufferFire, ScheduleBuffered, ScheduleDue,
    ScheduleFire, ScheduleGapNew, Store,
};
use std::sync::Arc;
use std::time::Duration;

/// Scheduler settings.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// This node's name.
    pub node: String,
    /// Most schedules handled per tick. Default 100.
    pub batch: usize,
    /// How long a claimed schedule is held against other nodes. Default 60 s.
    pub lock: Duration,
    /// A firing later than this is *missed* and follows the misfire policy; within it, it is
    /// on time. The default of schedules that set no `misfire_threshold` of their own
    /// (`KAIROS_MISFIRE_THRESHOLD`). Default 60 s.
    pub misfire_threshold: Duration,
    /// Longest idle wait (fallback to wake-ups). Default 1 s.
    pub poll_interval: Duration,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            node: "node".into(),
            batch: 100,
            lock: Duration::from_secs(60),
            misfire_threshold: kairos_core::schedule::DEFAULT_MISFIRE_THRESHOLD,
            poll_interval: Duration::from_secs(1),
        }
    }
}

impl ServiceConfig for SchedulerConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        SchedulerConfig::validate(self)
    }
}

impl SchedulerConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.batch == 0 || self.batch > 10_000 {
            return Err(Error::invalid(
                "scheduler.batch",
                "must be between 1 and 10000",
            ));
        }
        if self.lock < Duration::from_secs(1) {
            return Err(Error::invalid("scheduler.lock", "must be at least 1s"));
        }
        if self.poll_interval.is_zero() {
            return Err(Error::invalid(
                "scheduler.poll_interval",
                "must be more than 0",
            ));
        }
        Ok(())
    }
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerReport {
    /// Schedules claimed.
    pub schedules: usize,
    /// Firings materialized.
    pub fired: usize,
    /// Jobs created.
    pub jobs_created: usize,
    /// Missed firings dropped by misfire policies.
    pub misfires_skipped: u64,
    /// Schedules another node had advanced first.
    pub lost_races: usize,
    /// Schedules that could not be handled (logged; the tick went on).
    pub errors: usize,
    /// Audience expansions have pages left after this tick's budget.
    pub expanding: bool,
    /// Firings an overlap policy did not run (recorded as missed, reason `overlap`).
    pub overlap_skipped: u64,
    /// Firings held by `buffer_one` until the previous occurrence's jobs end.
    pub buffered: usize,
    /// Held firings run this tick.
    pub buffers_released: usize,
    /// Jobs of previous occurrences cancelled by `cancel_previous`.
    pub overlap_cancelled: u64,
    /// Catch-up times handled.
    pub catch_ups: usize,
    /// Jobs created by catch-ups (periods whose product was missing).
    pub catch_up_jobs: usize,
}

/// The scheduler.
#[derive(Clone)]
pub struct Scheduler {
    cfg: SchedulerConfig,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// The node's kinds: retry defaults, topics, products.
    kinds: Arc<crate::kinds::Kinds>,
    /// Maintenance mode: no firings while on.
    pause: crate::maintenance::Maintenance,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

fn chrono_dur(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Scheduler {
    /// A scheduler over `store`. Fails if the config is not valid.
    pub fn new(
        cfg: SchedulerConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Scheduler {
            cfg,
            store,
            clock,
            kinds: Arc::default(),
            pause: Default::default(),
        })
    }

    /// Fire schedules of `kinds` (the built-in kinds without this call).
    pub fn with_kinds(mut self, kinds: Arc<crate::kinds::Kinds>) -> Self {
        self.kinds = kinds;
        self
    }

    /// Fire nothing while `pause` is on (maintenance mode): due firings wait, and
    /// their misfire policy applies when it ends.
    pub fn with_pause(mut self, pause: crate::maintenance::Maintenance) -> Self {
        self.pause = pause;
        self
    }

    /// One tick at `now`.
    pub async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<SchedulerReport, kairos_store::Error> {
        if self.pause.is_on() {
            return Ok(SchedulerReport::default());
        }
        let due = self
            .store
            .schedule_due(ScheduleDue {
                now,
                limit: self.cfg.batch as i64,
                lock_until: now + chrono_dur(self.cfg.lock),
                node: self.cfg.node.clone(),
            })
            .await?;
        let mut report = SchedulerReport {
            schedules: due.len(),
            ..Default::default()
        };
        // Held firings first: one whose previous occurrence ended runs before the regular
        // firings, which then see it as their previous occurrence.
        let held = self
            .store
            .schedule_buffered(ScheduleBuffered {
                limit: self.cfg.batch as i64,
            })
            .await?;
        for s in held {
            if let Err(e) = self.release_buffer(&s, now, &mut report).await {
                report.errors += 1;
                tracing::error!(schedule_id = %s.id, error = %e, "running a held firing failed");
            }
        }
        for s in due {
            // One schedule's failure is logged and the tick goes on; its lock expires
            // and it is tried again.
            if let Err(e) = self.fire(&s, now, &mut report).await {
                report.errors += 1;
                tracing::error!(schedule_id = %s.id, error = %e, "firing a schedule failed");
            }
        }
        // Catch-ups after the regular firings, so a period's regular job exists first.
        let due = self
            .store
            .catch_up_due(CatchUpDue {
                now,
                limit: self.cfg.batch as i64,
            })
            .await?;
        for c in due {
            if let Err(e) = self.catch_up(&c, now, &mut report).await {
                report.errors += 1;
                tracing::error!(schedule_id = %c.schedule_id, at = %c.at, error = %e, "a catch-up failed");
            }
        }
        // Audience expansions (this tick's firings and any left half done), a bounded number
        // of pages per tick.
        let expander = crate::audience::Expander::new(Default::default(), self.store.clone())
            .map_err(|e| kairos_store::Error::new(kairos_store::ErrorKind::Invalid, e.to_string()))?
            .with_kinds(self.kinds.clone());
        let x = expander.run_once(now).await?;
        report.jobs_created += x.jobs_created;
        report.errors += x.errors;
        report.expanding = x.more;
        Ok(report)
    }

    /// Handle one due catch-up (see [`crate::catch_up`]): create the period's job again only
    /// if its product is missing, and advance the catch-up to its next instant.
    async fn catch_up(
        &self,
        c: &CatchUp,
        now: DateTime<Utc>,
        report: &mut SchedulerReport,
    ) -> Result<(), String> {
        let Some(s) = self
            .store
            .schedule_get(&c.schedule_id)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(());
        };
        let tz = crate::zone::tz_of(&s).map_err(|e| e.to_string())?;
        // The latest instant of this time of day at or before now: a node that was down
        // handles only the latest one it missed.
        let at = catch_up::clock(&c.at)
            .prev_at_or_before(tz, now)
            .or(c.next_at)
            .unwrap_or(now);
        let mut next = catch_up::next_after(tz, &c.at, now);
        let mut jobs = Vec::new();
        if let Some(fire_at) = catch_up::covered_firing(&s, tz, at) {
            let period = period_key(s.period, tz, fire_at);
            let outcome;
            match catch_up::need(self.store.as_ref(), &self.kinds, &s, &period)
                .await
                .map_err(|e| e.to_string())?
            {
                Need::Present => outcome = "present",
                Need::InFlight => {
                    outcome = "in flight: looking again shortly";
                    let soon = now + catch_up::IN_FLIGHT_RECHECK;
                    next = Some(next.map_or(soon, |n| n.min(soon)));
                }
                Need::Missing => {
                    outcome = "missing: running again";
                    jobs = catch_up::catch_up_job(&self.kinds, &s, tz, fire_at, &c.at, now);
                }
            }
            tracing::info!(schedule_id = %s.id, at = %c.at, period = %period, outcome, "catch-up");
        }
        let fired = self
            .store
            .catch_up_fire(CatchUpFire {
                schedule_id: s.id.clone(),
                at: c.at.clone(),
                expected_next_at: c.next_at,
                next_at: next,
                jobs,
            })
            .await
            .map_err(|e| e.to_string())?;
        if fired.advanced {
            report.catch_ups += 1;
            report.catch_up_jobs += fired.created.len();
        } else {
            report.lost_races += 1;
        }
        Ok(())
    }

    /// Run the held firing of `s` (`buffer_one`) if its previous occurrence has no open jobs
    /// left (or the schedule no longer buffers).
    async fn release_buffer(
        &self,
        s: &Schedule,
        now: DateTime<Utc>,
        report: &mut SchedulerReport,
    ) -> Result<(), String> {
        let Some(fire_at) = s.buffered_fire_at else {
            return Ok(());
        };
        let tz = crate::zone::tz_of(s).map_err(|e| e.to_string())?;
        if s.overlap != Overlap::Allow
            && overlap::previous_open(self.store.as_ref(), s, tz)
                .await
                .map_err(|e| e.to_string())?
        {
            return Ok(());
        }
        let jobs = if crate::audience::topic_of(&self.kinds, s).is_some() {
            crate::audience::begin(self.store.as_ref(), s, tz, fire_at, now)
                .await
                .map_err(|e| e.to_string())?;
            Vec::new()
        } else {
            jobs_for_firing(&self.kinds, s, tz, fire_at, now)
        };
        let fired = self
            .store
            .schedule_buffer_fire(ScheduleBufferFire {
                schedule_id: s.id.clone(),
                buffered_fire_at: fire_at,
                jobs,
                now,
            })
            .await
            .map_err(|e| e.to_string())?;
        if fired.advanced {
            tracing::info!(schedule_id = %s.id, fire_at = %fire_at.to_rfc3339(),
                jobs = fired.created.len(), "overlap: held firing runs");
            crate::telemetry::schedule_fired(s, &[fire_at], fired.created.len(), 0, now);
            report.fired += 1;
            report.buffers_released += 1;
            report.jobs_created += fired.created.len();
        } else {
            report.lost_races += 1;
        }
        Ok(())
    }

    async fn fire(
        &self,
        s: &Schedule,
        now: DateTime<Utc>,
        report: &mut SchedulerReport,
    ) -> Result<(), String> {
        let tz = crate::zone::tz_of(s).map_err(|e| e.to_string())?;
        let Some(next) = s.next_fire_at else {
            return Ok(());
        };
        let rule = s.misfire_rule(self.cfg.misfire_threshold);
        let plan = plan(&s.spec, tz, rule, next, now);
        let previous_open = match s.overlap {
            Overlap::Allow => false,
            _ if plan.fires.is_empty() => false,
            _ => overlap::previous_open(self.store.as_ref(), s, tz)
                .await
                .map_err(|e| e.to_string())?,
        };
        let decision = overlap::decide(s, &plan.fires, previous_open);
        // An on-time firing recovers the gaps recorded before it (the missed_firings check).
        let on_time = decision.run.iter().any(|f| now - *f <= rule.threshold);
        if decision.cancel_previous
            && let Some(first) = decision.run.first()
        {
            // Before the new firing's jobs exist: the previous occurrence ends first.
            let n = overlap::cancel_previous(self.store.as_ref(), s, tz, *first, now)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(schedule_id = %s.id, cancelled = n, "overlap: previous occurrence cancelled");
            report.overlap_cancelled += n;
        }
        for f in &decision.skipped {
            tracing::warn!(schedule_id = %s.id, fire_at = %f.to_rfc3339(),
                overlap = s.overlap.as_str(), "overlap: firing not run, the previous occurrence is still open");
        }
        if let Some(f) = decision.buffer {
            tracing::info!(schedule_id = %s.id, fire_at = %f.to_rfc3339(),
                "overlap: firing held until the previous occurrence ends");
        }
        let mut jobs = Vec::new();
        for fire_at in &decision.run {
            if crate::audience::topic_of(&self.kinds, s).is_some() {
                // An audience firing expands in pages after this transaction (see
                // `crate::audience`); recording it first means a crash between the two
                // leaves a firing to resume, never one lost.
                crate::audience::begin(self.store.as_ref(), s, tz, *fire_at, now)
                    .await
                    .map_err(|e| e.to_string())?;
                continue;
            }
            jobs.extend(jobs_for_firing(&self.kinds, s, tz, *fire_at, now));
        }
        for g in &plan.gaps {
            tracing::warn!(schedule_id = %s.id, reason = g.reason.as_str(), count = g.count,
                first = %g.first.to_rfc3339(), last = %g.last.to_rfc3339(),
                misfire = %s.misfire.to_string_repr(), "due firings not run");
        }
        let gaps = plan
            .gaps
            .iter()
            .map(|g| ScheduleGapNew {
                reason: g.reason.as_str().to_string(),
                first_fire_at: g.first,
                last_fire_at: g.last,
                count: i64::try_from(g.count).unwrap_or(i64::MAX),
            })
            .chain(decision.gaps())
            .collect();
        let fired = self
            .store
            .schedule_fire(ScheduleFire {
                schedule_id: s.id.clone(),
                expected_next_fire_at: Some(next),
                next_fire_at: plan.next_fire_at,
                last_fire_at: decision.run.last().copied(),
                jobs,
                gaps,
                on_time,
                buffer: decision.buffer,
                now,
            })
            .await
            .map_err(|e| e.to_string())?;
        if fired.advanced {
            crate::telemetry::schedule_fired(
                s,
                &decision.run,
                fired.created.len(),
                plan.skipped,
                now,
            );
            crate::telemetry::spans::firings(
                s,
                &decision.run,
                fired.created.len(),
                now,
                self.clock.now().max(now),
            );
            report.fired += decision.run.len();
            report.jobs_created += fired.created.len();
            report.misfires_skipped += plan.skipped;
            report.overlap_skipped += decision.skipped.len() as u64;
            report.buffered += usize::from(decision.buffer.is_some());
        } else {
            report.lost_races += 1;
        }
        Ok(())
    }
}

#[async_trait]
impl Service for Scheduler {
    type Report = SchedulerReport;
    type Config = SchedulerConfig;
    fn name(&self) -> &'static str {
        "scheduler"
    }
    fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }
    fn interval(&self) -> Duration {
        self.cfg.poll_interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<SchedulerReport, kairos_store::Error> {
        Scheduler::run_once(self, now).await
    }
    fn made_jobs(&self, report: &SchedulerReport) -> bool {
        report.jobs_created > 0
    }
    /// At once while there is a backlog (a full batch, expansions with pages left: drained
    /// fairly, oldest first); else at the earliest known firing or catch-up after this tick,
    /// within the poll interval.
    async fn next_run(&self, r: &SchedulerReport, now: DateTime<Utc>) -> Next {
        if r.schedules >= self.cfg.batch || r.expanding {
            return Next::Now;
        }
        let mut wait = self.cfg.poll_interval;
        let next_catch_up = self.store.catch_up_next_at().await.ok().flatten();
        let next_fire = self.store.schedule_next_fire_at().await.ok().flatten();
        let next = match (next_fire, next_catch_up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(next) = next {
            // A schedule that was due at this tick and is still there was not ours to
            // fire: another node holds its lock, or firing it failed and its lock must
            // expire first. Waking "at" its past due time would re-query every
            // millisecond until then, so only a firing after this tick shortens the poll
            // interval.
            if next > now {
                wait = wait.min((next - self.clock.now()).to_std().unwrap_or(Duration::ZERO));
            }
        }
        Next::In(wait.max(Duration::from_millis(1)))
    }
}
