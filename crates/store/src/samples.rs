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
    let ms = t.timestamp_millis().div_euclid(60_000) * 60_000;
    DateTime::from_timestamp_millis(ms).unwrap_or(t)
}

/// The span of one topic count: a quarter hour.
pub const TOPIC_COUNT_SPAN: chrono::TimeDelta = chrono::TimeDelta::minutes(15);

/// The start of the quarter hour holding `t` (a [`TOPIC_COUNT_SPAN`]).
pub fn quarter_of(t: DateTime<Utc>) -> DateTime<Utc> {
    let span = TOPIC_COUNT_SPAN.num_milliseconds();
    let ms = t.timestamp_millis().div_euclid(span) * span;
    DateTime::from_timestamp_millis(ms).unwrap_or(t)
}

/// `topic_count_record`: count the jobs with a topic that succeeded in the quarter hour
/// starting at `start`, per kind and topic, and store the counts with a mark that the quarter
/// was counted, unless it was (the first writer wins, as for [`QueueSampleRecord`]). The
/// bounced and complained mails of a quarter are not counted here: they are added as each
/// mail's first event of that type is recorded (`inbound_event_record`).
#[derive(Debug, Clone)]
pub struct TopicCountRecord {
    /// The quarter's start (a later instant is rounded down to its quarter).
    pub start: DateTime<Utc>,
    /// When it is counted (recorded as the mark's time).
    pub now: DateTime<Utc>,
}

/// Jobs of one kind and topic that succeeded in a span, and how many of them have an
/// `email.bounced` and an `email.complained` event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicCount {
    /// The kind.
    pub kind: String,
    /// The topic.
    pub topic: String,
    /// Jobs that succeeded.
    pub succeeded: i64,
    /// Of those, jobs with an `email.bounced` event (each counted once).
    pub bounced: i64,
    /// Of those, jobs with an `email.complained` event (each counted once).
    pub complained: i64,
}

/// `topic_count_list`: the stored counts of the quarters starting in `[since, until)`.
#[derive(Debug, Clone)]
pub struct TopicCountList {
    /// First quarter start (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
}

/// What [`TopicCountList`] reads: the quarters counted, and their counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicCounts {
    /// The starts of the quarters counted, oldest first (a quarter without jobs of a topic is
    /// counted too, with no counts).
    pub taken: Vec<DateTime<Utc>>,
    /// Each quarter's counts with its start, oldest first, then by kind and topic.
    pub counts: Vec<(DateTime<Utc>, TopicCount)>,
}

/// `topic_count_range`: the jobs with a topic that succeeded in `[since, until)`, per kind and
/// topic, with their bounced and complained mails, counted from the job table (the spans the
/// stored quarters do not cover).
#[derive(Debug, Clone)]
pub struct TopicCountRange {
    /// Start (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
}

/// `topic_count_prune`: delete the counts of the quarters starting before `before`.
#[derive(Debug, Clone)]
pub struct TopicCountPrune {
    /// Counts of earlier quarters are deleted.
    pub before: DateTime<Utc>,
}
