//! What the monitor's week- and day-long checks sum per quarter hour (migration 0038) instead
//! of reading every finished job of their window at every pass: per kind and topic, the mails
//! sent and how many bounced or were complained about (`bounce_rate`, `complaint_rate`), and
//! per schedule (or kind and topic) the jobs decided per state and skip reason (`skip_rate`);
//! per kind the jobs finished in each final state (`failure_rate`, migration 0039).
//! The leader's sampler counts each quarter once after it ends; the inbound path adds each
//! mail's first bounce and complaint to its send quarter as it is recorded.

use chrono::{DateTime, Utc};

/// The span of one count: a quarter hour.
pub const QUARTER: chrono::TimeDelta = chrono::TimeDelta::minutes(15);

/// The start of the quarter hour holding `t`.
pub fn quarter_of(t: DateTime<Utc>) -> DateTime<Utc> {
    crate::samples::start_of(t, QUARTER)
}

/// `quarter_count_record`: count the quarter hour starting at `start` — its succeeded jobs
/// with a topic per kind and topic, its decided jobs per schedule or topic, state and reason,
/// its finished jobs per kind and state —
/// and store the counts with a mark that the quarter was counted, unless it was (the first
/// writer wins, as for [`crate::QueueSampleRecord`]). A quarter's bounced and complained
/// mails are not counted here: they are added as each mail's first event of that type is
/// recorded (`inbound_event_record`).
#[derive(Debug, Clone)]
pub struct QuarterCountRecord {
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

/// Jobs decided (`succeeded`, `skipped`, `dead`) in a quarter or a range of the job table, of
/// one schedule, or of one kind and topic without a schedule, in one state and skip reason:
/// what `job_count_decided` reads and a quarter's count stores. Which of them the `skip_rate`
/// check counts, and under which subject, is [`DecidedGroup::subject`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecidedGroup {
    /// The schedule that created them; `None` for jobs enqueued directly.
    pub schedule_id: Option<String>,
    /// The kind of jobs without a schedule (which kinds' topics count is the engine's call);
    /// `None` for a schedule's.
    pub kind: Option<String>,
    /// The topic of jobs without a schedule; `None` for a schedule's.
    pub topic: Option<String>,
    /// `succeeded`, `skipped` or `dead`.
    pub state: String,
    /// The skip reason (skipped jobs only).
    pub reason: Option<String>,
    /// How many.
    pub count: i64,
}

impl DecidedGroup {
    /// The group as the `skip_rate` check counts it: a schedule's jobs under their schedule;
    /// jobs without one under their topic when their kind is one of `topic_kinds` (the kinds
    /// whose payload `topic` names an audience topic; any other job's `topic` is the caller's
    /// data); `None` for the rest.
    pub fn subject(self, topic_kinds: &[String]) -> Option<crate::DecidedCount> {
        let topic = match (&self.schedule_id, &self.kind) {
            (Some(_), _) => None,
            (None, Some(kind)) if topic_kinds.contains(kind) && self.topic.is_some() => self.topic,
            (None, _) => return None,
        };
        Some(crate::DecidedCount {
            schedule_id: self.schedule_id,
            topic,
            state: self.state,
            reason: self.reason,
            count: self.count,
        })
    }
}

/// Which counts [`QuarterCountList`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuarterCountOf {
    /// None: only which quarters were counted ([`QuarterCounts::taken`]).
    Marks,
    /// The mails per kind and topic ([`QuarterCounts::topics`]).
    Topics,
    /// The decided jobs ([`QuarterCounts::decided`]).
    Decided,
    /// The finished jobs per kind and state ([`QuarterCounts::kinds`]).
    Kinds,
}

/// `quarter_count_list`: the quarters counted in `[since, until)` (by their start), with one
/// kind of their counts.
#[derive(Debug, Clone)]
pub struct QuarterCountList {
    /// First quarter start (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
    /// Which counts.
    pub of: QuarterCountOf,
}

/// What [`QuarterCountList`] reads: the quarters counted, and their counts, read in one
/// snapshot (a quarter counted meanwhile is in both or in neither).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuarterCounts {
    /// The starts of the quarters counted, oldest first (a quarter without jobs is counted
    /// too, with no counts).
    pub taken: Vec<DateTime<Utc>>,
    /// With [`QuarterCountOf::Topics`]: each quarter's counts with its start, oldest first,
    /// then by kind and topic.
    pub topics: Vec<(DateTime<Utc>, TopicCount)>,
    /// With [`QuarterCountOf::Decided`]: each quarter's counts with its start, oldest first.
    pub decided: Vec<(DateTime<Utc>, DecidedGroup)>,
    /// With [`QuarterCountOf::Kinds`]: each quarter's finished jobs per kind and state (as
    /// `job_count_finished` counts them) with its start, oldest first, then by kind and state.
    pub kinds: Vec<(DateTime<Utc>, crate::JobCount)>,
}

/// `quarter_count_sum`: the counts of one kind summed over the quarters starting in
/// `[since, until)`, one row per key (kind and topic; schedule or kind and topic, state and
/// reason; kind and state). The caller names a range of quarters it found counted
/// ([`QuarterCountOf::Marks`]): rows of a quarter not counted (the bounces recorded before its
/// count) are summed too, and a quarter counted after the caller's list is read, if inside
/// the range, would be summed as well as counted from the job table.
#[derive(Debug, Clone)]
pub struct QuarterCountSum {
    /// First quarter start (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
    /// Which counts ([`QuarterCountOf::Marks`] sums nothing).
    pub of: QuarterCountOf,
}

/// What [`QuarterCountSum`] reads: the sums of one kind of counts, ordered by their key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuarterSums {
    /// With [`QuarterCountOf::Topics`]: per kind and topic.
    pub topics: Vec<TopicCount>,
    /// With [`QuarterCountOf::Decided`]: per schedule, or kind and topic, state and reason.
    pub decided: Vec<DecidedGroup>,
    /// With [`QuarterCountOf::Kinds`]: per kind and state.
    pub kinds: Vec<crate::JobCount>,
}

/// `topic_count_range`: the jobs with a topic that succeeded in `[since, until)`, per kind and
/// topic, with their bounced and complained mails, counted from the job table (the spans the
/// counted quarters do not cover).
#[derive(Debug, Clone)]
pub struct TopicCountRange {
    /// Start (inclusive).
    pub since: DateTime<Utc>,
    /// End (exclusive).
    pub until: DateTime<Utc>,
}

/// `quarter_count_prune`: delete the counts of the quarters starting before `before`.
#[derive(Debug, Clone)]
pub struct QuarterCountPrune {
    /// Counts of earlier quarters are deleted.
    pub before: DateTime<Utc>,
}
