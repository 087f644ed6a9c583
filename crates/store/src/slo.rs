//! Records and parameters of the monitoring reads (metrics, SLO checks, readiness) and of the
//! SLO alert state the monitor keeps (so that a restart or a new leader does not alert again).

use chrono::{DateTime, Utc};

/// A number of jobs in one state of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCount {
    /// The stored state (unknown values are passed through as stored).
    pub state: String,
    /// The job kind.
    pub kind: String,
    /// How many.
    pub count: i64,
}

/// Which jobs `job_count_group` counts. The two groups cost differently: the queue costs
/// what is waiting and running, and is read through the partial indexes that claims use;
/// what is retained costs what the pruner keeps (days of finished jobs), a read of the whole
/// job table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStateGroup {
    /// `available` and `running`: jobs that leave their state by themselves.
    Queued,
    /// Every other state (`succeeded`, `skipped`, `cancelled`, `dead`, and a state this
    /// version does not know): jobs that stay until the pruner, an erasure or a replay.
    Retained,
}

/// `job_count_group`: the jobs of one group, per state and kind.
#[derive(Debug, Clone, Copy)]
pub struct JobCountGroup {
    /// The group to count.
    pub group: JobStateGroup,
}

/// `job_backlog`: what is waiting, and what is stuck.
#[derive(Debug, Clone)]
pub struct JobBacklog {
    /// Now: available jobs with `run_at <= now` are due.
    pub now: DateTime<Utc>,
    /// Due jobs with `run_at <= stuck_before` count as stuck (due too long, not claimed).
    pub stuck_before: DateTime<Utc>,
    /// Running jobs whose lease ended at or before this count as running past their lease.
    pub lease_expired_before: DateTime<Utc>,
}

/// What `job_backlog` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Available jobs due now (the queue depth).
    pub due: i64,
    /// The earliest `run_at` of a due job (the oldest due age is `now` minus this).
    pub oldest_due_at: Option<DateTime<Utc>>,
    /// Due jobs due since `stuck_before` or longer.
    pub stuck: i64,
    /// Running jobs whose lease ended at or before `lease_expired_before`.
    pub lease_expired: i64,
}

/// `job_count_finished`: jobs that reached a final state in `[since, until)`.
#[derive(Debug, Clone)]
pub struct JobCountFinished {
    /// Start of the window (inclusive).
    pub since: DateTime<Utc>,
    /// End of the window (exclusive).
    pub until: DateTime<Utc>,
}

/// `job_finished_series`: jobs that reached `succeeded` or `dead` in `[since, until)`, counted
/// per bucket of `bucket_secs` (aligned on the Unix epoch) and state — the admin's throughput
/// charts.
#[derive(Debug, Clone)]
pub struct JobFinishedSeries {
    /// Start of the window (inclusive).
    pub since: DateTime<Utc>,
    /// End of the window (exclusive).
    pub until: DateTime<Utc>,
    /// The bucket width in seconds (at least 1).
    pub bucket_secs: i64,
}

/// One bucket of [`JobFinishedSeries`]: buckets without jobs are absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedBucket {
    /// The bucket's start.
    pub start: DateTime<Utc>,
    /// `succeeded` or `dead`.
    pub state: String,
    /// Jobs of that state finished in the bucket.
    pub count: i64,
}

/// `schedule_fire_times`: the distinct nominal firings materialized as jobs of a schedule in
/// `[since, until]`.
#[derive(Debug, Clone)]
pub struct ScheduleFireTimes {
    /// The schedule.
    pub schedule_id: String,
    /// Start of the window (inclusive).
    pub since: DateTime<Utc>,
    /// End of the window (inclusive).
    pub until: DateTime<Utc>,
}

/// The stored state of one SLO alert: a check on one subject (`failure_rate:webhook`).
#[derive(Debug, Clone, PartialEq)]
pub struct SloAlert {
    /// `check` or `check:subject`.
    pub key: String,
    /// The check's name (`failure_rate`, `stuck_due`, `lease_expired`, `missed_firings`, …).
    pub check: String,
    /// Whether the warning is active.
    pub active: bool,
    /// When the current state (warning or recovered) began.
    pub since: DateTime<Utc>,
    /// What the check said when the state began.
    pub message: String,
    /// Number of transitions so far (warning, recovery, warning, …).
    pub seq: i64,
    /// The last transition sent to the alert webhook (`seq` once it was delivered).
    pub notified_seq: i64,
    /// Last written.
    pub updated_at: DateTime<Utc>,
    /// When an operator last acknowledged it (`POST /v1/slo/alerts/{id}/ack`); kept across
    /// later warnings, so that what was acknowledged then does not warn again.
    pub acked_at: Option<DateTime<Utc>>,
}

impl SloAlert {
    /// Whether its current state is the recovery an acknowledgement made (and not one the
    /// check found).
    pub fn acked(&self) -> bool {
        !self.active && self.acked_at == Some(self.since)
    }
}

/// `slo_alert_ack`: acknowledge the alert `key` at `at`. An active alert becomes a recovery
/// (its `seq` advances, so the alert webhook is told once) with `acked_at` and `since` set to
/// `at`; an alert that is not active is left as it is.
#[derive(Debug, Clone)]
pub struct SloAlertAck {
    /// The alert's key (`check` or `check:subject`): its id in the API.
    pub key: String,
    /// When acknowledged.
    pub at: DateTime<Utc>,
    /// The recovery's message.
    pub message: String,
}

/// `monitor_pass_record`: the background monitor completed a pass.
#[derive(Debug, Clone)]
pub struct MonitorPassRecord {
    /// The pass's instant.
    pub at: DateTime<Utc>,
    /// What the pass found, as JSON (the monitor's check results), for readers that show the
    /// last pass instead of evaluating the checks again.
    pub report: Option<String>,
}

/// `monitor_pass_get`: the background monitor's last completed pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorPass {
    /// The pass's instant.
    pub at: DateTime<Utc>,
    /// What it found, as recorded; `None` for a pass recorded without it (before migration
    /// 0037).
    pub report: Option<String>,
}

/// `slo_alert_put`: write an alert's state (insert or replace by key).
#[derive(Debug, Clone)]
pub struct SloAlertPut {
    /// The whole record to store.
    pub alert: SloAlert,
}

/// `job_dead_scheduled`: the dead jobs of schedules that reached `dead` in `[since, until)`,
/// one row per schedule (its latest dead job), newest first (the `dead_runs` check).
#[derive(Debug, Clone)]
pub struct JobDeadScheduled {
    /// Start of the window (inclusive), by `finished_at`.
    pub since: DateTime<Utc>,
    /// End of the window (exclusive).
    pub until: DateTime<Utc>,
    /// Most schedules returned.
    pub limit: i64,
}

/// One schedule's dead jobs in a window: how many, and its latest.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadScheduledRun {
    /// The schedule.
    pub schedule_id: String,
    /// The schedule's name, if it still exists.
    pub schedule_name: Option<String>,
    /// Dead jobs of the schedule in the window.
    pub dead: i64,
    /// The latest dead job.
    pub job_id: String,
    /// Its kind.
    pub kind: String,
    /// Its channel (`None` for a job stored before channels existed).
    pub channel: Option<String>,
    /// Its occurrence's period key.
    pub period_key: Option<String>,
    /// Its last error.
    pub last_error: Option<String>,
    /// When it died.
    pub finished_at: DateTime<Utc>,
}

/// `job_count_decided`: jobs of schedules or topics that reached `succeeded`, `skipped` or
/// `dead` in `[since, until)`, counted per schedule (or, for jobs without a schedule, per kind
/// and topic), state and skip reason ([`crate::DecidedGroup`]; the `skip_rate` check).
#[derive(Debug, Clone)]
pub struct JobCountDecided {
    /// Start of the window (inclusive), by `finished_at`.
    pub since: DateTime<Utc>,
    /// End of the window (exclusive).
    pub until: DateTime<Utc>,
}

/// A number of decided jobs of one schedule or topic in one state (and skip reason), as the
/// `skip_rate` check counts them ([`crate::DecidedGroup::subject`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecidedCount {
    /// The schedule that created them; `None` for jobs enqueued directly.
    pub schedule_id: Option<String>,
    /// `payload.topic` of jobs of an audience kind without a schedule; `None` for jobs of a
    /// schedule.
    pub topic: Option<String>,
    /// `succeeded`, `skipped` or `dead`.
    pub state: String,
    /// The skip reason (skipped jobs only).
    pub reason: Option<String>,
    /// How many.
    pub count: i64,
}
