//! Bulk actions on jobs: cancel or retry every job of a list of ids or of a filter, in
//! batches. A store call acts on at most `limit` jobs in one transaction and says where it
//! stopped; the caller calls again from there until the store reports no more candidates, so
//! no statement, transaction or lock grows with the number of jobs matched.

use chrono::{DateTime, Utc};

/// The most jobs one bulk call takes (one transaction).
pub const JOB_BULK_BATCH: i64 = 1_000;

/// The filter of a bulk action. Every field is optional and they combine; an empty filter
/// matches every job (the action's own state rule still applies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFilter {
    /// Only jobs in this stored state.
    pub state: Option<String>,
    /// Only jobs of this kind.
    pub kind: Option<String>,
    /// Only jobs of this schedule.
    pub schedule_id: Option<String>,
    /// Only jobs on this channel.
    pub channel: Option<String>,
    /// Only jobs created before this instant (exclusive).
    pub created_before: Option<DateTime<Utc>>,
    /// Only jobs created at or after this instant (inclusive).
    pub created_after: Option<DateTime<Utc>>,
    /// Only jobs whose payload names this recipient (`payload.recipient_id`): the erasure of
    /// a recipient cancels their pending jobs.
    pub recipient_id: Option<String>,
}

/// Which jobs a bulk call looks at: `ids` (when given, the filter is ignored) or the filter,
/// in ascending id order after `after_id`, at most `limit` of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSelect {
    /// Exactly these jobs (unknown ids are ignored).
    pub ids: Option<Vec<String>>,
    /// Otherwise: the jobs matching this filter.
    pub filter: JobFilter,
    /// Only ids after this one (the previous call's [`JobBulkDone::last_id`]).
    pub after_id: Option<String>,
    /// At most this many candidates (clamped to 1..=[`JOB_BULK_BATCH`]).
    pub limit: i64,
}

/// `job_bulk_cancel`: cancel the selected jobs that have not finished (`available` or
/// `running`, the rule of `job_cancel`), recording the reason.
#[derive(Debug, Clone)]
pub struct JobBulkCancel {
    /// The jobs.
    pub select: JobSelect,
    /// Why (stored as each job's reason).
    pub reason: String,
    /// Now (each job's `finished_at`).
    pub now: DateTime<Utc>,
}

/// `job_bulk_retry`: queue the selected `dead` and `cancelled` jobs again, now, with a fresh
/// set of attempts (the replay of `job_retry` and the dead-letter queue).
#[derive(Debug, Clone)]
pub struct JobBulkRetry {
    /// The jobs.
    pub select: JobSelect,
    /// Now: the jobs become due now.
    pub now: DateTime<Utc>,
}

/// What one bulk call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobBulkDone {
    /// Jobs acted on (cancelled, or queued again).
    pub count: u64,
    /// The greatest id this call looked at; `None` when it found no candidate, which ends
    /// the loop. Pass it as the next call's [`JobSelect::after_id`].
    pub last_id: Option<String>,
}
