//! Retention: deleting finished jobs and their attempts in bounded batches.

use chrono::{DateTime, Utc};
use kairos_core::JobState;

/// `job_prune`: delete jobs in `states` that finished before `older_than`, with their
/// attempts, at most `limit` jobs. Only final states are ever deleted: a state that is not
/// final in the list deletes nothing.
#[derive(Debug, Clone)]
pub struct JobPrune {
    /// The states to delete (final ones: succeeded, skipped, cancelled, dead).
    pub states: Vec<JobState>,
    /// Jobs whose `finished_at` is before this are deleted.
    pub older_than: DateTime<Utc>,
    /// At most this many jobs (a bounded batch: one short transaction).
    pub limit: i64,
}

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
