//! The queue over time (issue 36): one sample per minute of the queue's depth, the jobs
//! running and the lateness of the jobs that started in that minute, written by the engine's
//! sampler and drawn by the admin's overview.

use chrono::{DateTime, Utc};

/// `queue_sample_record`: measure the queue now and store it as the sample of `minute`,
/// unless that minute has a sample already (two nodes, or a second run in the same minute,
/// write it once: the first writer wins).
#[derive(Debug, Clone)]
pub struct QueueSampleRecord {
    /// The minute sampled (its start; a later second is rounded down to it).
    pub minute: DateTime<Utc>,
    /// The instant the depth and the running jobs are measured at (at or after the minute's
    /// end, usually a few seconds later).
    pub now: DateTime<Utc>,
}

/// One minute of the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSample {
    /// The minute (its start).
    pub minute: DateTime<Utc>,
    /// Jobs due (`available` with `run_at` at or before the measurement) when measured.
    pub due: i64,
    /// Jobs `available`, due or not (waiting for their time or a retry), when measured.
    pub available: i64,
    /// Jobs `running` when measured.
    pub running: i64,
    /// Jobs that started an attempt in the minute (and have not gone back to wait for a
    /// retry since).
    pub started: i64,
    /// The 99th percentile (nearest rank) of those jobs' lateness, milliseconds from
    /// `run_at` to the attempt's start; `None` when none started.
    pub lateness_p99_ms: Option<i64>,
    /// When the sample was measured.
    pub recorded_at: DateTime<Utc>,
    /// Jobs that succeeded in the minute (`finished_at` in it), counted when it was sampled;
    /// `None` in samples taken before the database had the column (migration 0036).
    pub succeeded: Option<i64>,
    /// Jobs that ended dead in the minute, likewise.
    pub dead: Option<i64>,
}

/// `queue_sample_list`: the samples of the minutes in `[since, until)`, oldest first.
#[derive(Debug, Clone)]
pub struct QueueSampleList {
    /// First minute (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
}

/// `queue_sample_prune`: delete the samples of the minutes before `before`.
#[derive(Debug, Clone)]
pub struct QueueSamplePrune {
    /// Samples of earlier minutes are deleted.
    pub before: DateTime<Utc>,
}

/// The start of the minute holding `t`.
pub fn minute_of(t: DateTime<Utc>) -> DateTime<Utc> {
    start_of(t, chrono::TimeDelta::minutes(1))
}

/// The start of the span of length `span` (counted from the Unix epoch) holding `t`.
pub(crate) fn start_of(t: DateTime<Utc>, span: chrono::TimeDelta) -> DateTime<Utc> {
    let w = span.num_milliseconds().max(1);
    let ms = t.timestamp_millis().div_euclid(w) * w;
    DateTime::from_timestamp_millis(ms).unwrap_or(t)
}
