//! The queue's hot path: what the executor, the rescuer and the pruner do to jobs.

use crate::*;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;

/// Jobs as a queue: insert, claim under a lease, complete, rescue, prune.
///
/// The idempotency chain lives here: an insert is deduplicated by `dedupe_key`; a claim is a
/// conditional update only one worker can win, with a lease and a fencing token; only the
/// holder of the current lease token can record an outcome.
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Insert a job; an existing `dedupe_key` returns the existing job with `created = false`.
    /// A key whose job was pruned (a tombstone) creates nothing either; there is no job to
    /// return, so the answer is a `Conflict` error saying the key was used by a pruned job.
    async fn job_insert(&self, p: JobInsert) -> Result<JobInserted>;
    /// Insert many jobs in one statement batch, skipping existing dedupe keys. Returns the ids
    /// created.
    async fn job_insert_many(&self, p: Vec<JobInsert>) -> Result<Vec<String>>;
    /// Insert the jobs of one batch enqueue (`POST /v1/jobs/batch`: at most a thousand) in
    /// one transaction and answer for each, in the order given, as [`JobStore::job_insert`]
    /// does: the new job, or with a `dedupe_key` that exists the job holding it and
    /// `created = false`. Of entries sharing a key, the first is inserted and the later ones
    /// answer with its job. All or nothing: a key held only by a pruned job's tombstone (the
    /// `Conflict` of `job_insert`) or any other error inserts none of them.
    async fn job_insert_batch(&self, p: Vec<JobInsert>) -> Result<Vec<JobInserted>>;
    /// A job by id.
    async fn job_get(&self, id: &str) -> Result<Option<Job>>;
    /// Claim due jobs (`state = available AND run_at <= now`), oldest `run_at` first, at most
    /// `limit`, under a lease. Only one claimer can win a job.
    async fn job_claim(&self, p: JobClaim) -> Result<Vec<Job>>;
    /// Extend the leases of running jobs still held with the given token. Returns how many.
    async fn job_lease_renew(&self, p: JobLeaseRenew) -> Result<u64>;
    /// Record outcomes of many attempts in one transaction (group commit). A completion whose
    /// lease token no longer matches is not applied and is reported as stale.
    async fn job_complete_many(&self, p: Vec<JobComplete>) -> Result<CompleteReport>;
    /// Return jobs whose lease expired to `available` (or `dead` if their attempts are spent),
    /// recording the lost attempt. Returns the ids rescued.
    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>>;
    /// The earliest `run_at` of an available job (for the executor's wake-up).
    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>>;
    /// Delete finished jobs (in the given final states, finished before a cut-off) and their
    /// attempts, oldest first, at most `limit` jobs, in one transaction (retention).
    /// The deleted jobs' dedupe keys are kept as tombstones in the same transaction: an
    /// insert with a tombstoned key creates nothing, as if the key were taken.
    async fn job_prune(&self, p: JobPrune) -> Result<JobPruned>;
    /// Delete old rows of one retention table (dedupe tombstones, exposures, finished
    /// expansions, the suppression log, resolved SLO alerts), oldest first, at most `limit`,
    /// in one transaction. Returns how many. Active state is never deleted.
    async fn retention_prune(&self, p: RetentionPrune) -> Result<u64>;
}
