//! Retention: deleting finished jobs and their attempts, and old rows of other tables, in
//! bounded batches.

use chrono::{DateTime, Utc};
use kairos_core::JobState;

/// `job_prune`: delete jobs in `states` that finished before `older_than`, with their
/// attempts, at most `limit` jobs. Only final states are ever deleted: a state that is not
/// final in the list deletes nothing. A deleted job's `dedupe_key` is kept as a tombstone in
/// the same transaction, so no insert path creates that key again (until the tombstone's own
/// retention, [`RetentionTable::DedupeTombstones`]).
#[derive(Debug, Clone)]
pub struct JobPrune {
    /// The states to delete (final ones: succeeded, skipped, cancelled, dead).
    pub states: Vec<JobState>,
    /// Jobs whose `finished_at` is before this are deleted.
    pub older_than: DateTime<Utc>,
    /// At most this many jobs (a bounded batch: one short transaction).
    pub limit: i64,
}

/// The message of the `Conflict` error `job_insert` answers when its `dedupe_key` belongs to
/// a job that was pruned: nothing is created and there is no job to return.
pub const PRUNED_KEY: &str =
    "job insert: the dedupe key was used by a job that has since been pruned (retention)";

/// What `job_prune` deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobPruned {
    /// Jobs deleted.
    pub jobs: u64,
    /// Their attempts deleted.
    pub attempts: u64,
}

impl JobPrune {
    /// The stored names of the final states in `states` (others are dropped).
    pub fn final_state_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .states
            .iter()
            .filter(|s| s.is_final())
            .map(|s| s.as_str().to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// A table the pruner keeps to an age with [`RetentionPrune`] (besides jobs, artifacts and
/// inbound events, which have their own methods). Active state is never deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetentionTable {
    /// Dedupe keys of pruned jobs, by when their job finished. Once a tombstone is gone its
    /// key can be created again, so this age bounds how far back a re-fire is refused.
    DedupeTombstones,
    /// A/B exposures, by when they were recorded.
    Exposures,
    /// Finished audience expansions (their cursors), by their last update. An unfinished one
    /// is never deleted.
    Expansions,
    /// The suppression log, by when the entry was written. The newest entry of an address
    /// that is still suppressed stays (it says why).
    SuppressionLog,
    /// SLO alert state, by its last update: only resolved alerts whose recovery has been
    /// notified. A firing alert, or one with a notification pending, stays.
    SloAlerts,
    /// Endpoint health's hourly counters, by their hour (only the last 24 h are read).
    EndpointHealthHours,
    /// Concurrency slot rows (`concurrency_slots`) no job holds any more, by when they were
    /// taken: a slot whose job is not `running` under the lease that took it. A held slot
    /// stays.
    ConcurrencySlots,
}

impl RetentionTable {
    /// Every table, in the order the pruner works them.
    pub const ALL: [RetentionTable; 7] = [
        RetentionTable::DedupeTombstones,
        RetentionTable::Exposures,
        RetentionTable::Expansions,
        RetentionTable::SuppressionLog,
        RetentionTable::SloAlerts,
        RetentionTable::EndpointHealthHours,
        RetentionTable::ConcurrencySlots,
    ];

    /// The table's name (for logs and reports).
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionTable::DedupeTombstones => "dedupe_tombstones",
            RetentionTable::Exposures => "exposures",
            RetentionTable::Expansions => "expansions",
            RetentionTable::SuppressionLog => "suppression_log",
            RetentionTable::SloAlerts => "slo_alerts",
            RetentionTable::EndpointHealthHours => "endpoint_health_hours",
            RetentionTable::ConcurrencySlots => "concurrency_slots",
        }
    }
}

/// `retention_prune`: delete rows of `table` older than `before` (see [`RetentionTable`] for
/// which instant counts and what is kept), at most `limit`, in one transaction.
#[derive(Debug, Clone)]
pub struct RetentionPrune {
    /// The table.
    pub table: RetentionTable,
    /// Rows older than this are deleted.
    pub before: DateTime<Utc>,
    /// At most this many rows (a bounded batch).
    pub limit: i64,
}
