//! # kairos-store
//!
//! [`Store`] is the one seam between the engine and a database. Two implementations exist
//! (SQLite, PostgreSQL) and both run the same conformance suite (`kairos-store-conformance`):
//! a store behaviour exists when the suite tests it.
//!
//! Methods are named noun-then-verb (`job_claim`, `schedule_due`) and take a params struct, so
//! that adding a field does not break every caller. Every method that changes state is one
//! transaction; the idempotency chain of DESIGN.md lives here:
//!
//! 1. enqueue and expansion: `INSERT … ON CONFLICT (dedupe_key) DO NOTHING RETURNING` (S3-3);
//! 2. claim: a conditional update only one worker can win (S3-4), with a lease and a fencing
//!    token;
//! 3. completion: only the holder of the current lease token can record an outcome.
#![deny(missing_docs)]

pub mod batch;
mod error;
mod leader;
mod params;
mod types;

pub use error::{Error, ErrorKind, Result};
pub use leader::Leader;
pub use params::*;
pub use types::*;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;

/// The storage seam. See the crate docs.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Apply the embedded migrations (idempotent).
    async fn migrate(&self) -> Result<()>;

    /// Create a webhook endpoint, or return the existing one with the same URL and secret.
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint>;
    /// An endpoint by id.
    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>>;
    /// Disable an endpoint (HTTP 410); later jobs to it are skipped.
    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()>;

    /// Create a schedule.
    async fn schedule_create(&self, p: ScheduleCreate) -> Result<Schedule>;
    /// A schedule by id.
    async fn schedule_get(&self, id: &str) -> Result<Option<Schedule>>;
    /// Schedules, newest first, with an optional state filter.
    async fn schedule_list(&self, p: ScheduleList) -> Result<Vec<Schedule>>;
    /// Replace a schedule's definition (and its next firing). `None` if it does not exist.
    async fn schedule_update(&self, p: ScheduleUpdate) -> Result<Option<Schedule>>;
    /// Pause or resume. Resuming sets the given next firing. `None` if it does not exist.
    async fn schedule_pause(&self, p: SchedulePause) -> Result<Option<Schedule>>;
    /// Delete a schedule; its jobs stay for the log. `false` if it did not exist.
    async fn schedule_delete(&self, id: &str) -> Result<bool>;
    /// Claim due schedules (`next_fire_at <= now`), oldest first, at most `limit`, each locked
    /// until `lock_until` so that one node expands each firing (S0-1, S0-2).
    async fn schedule_due(&self, p: ScheduleDue) -> Result<Vec<Schedule>>;
    /// Expand a claimed schedule's firings into jobs and advance `next_fire_at`, in one
    /// transaction. Applies only if `next_fire_at` is still `expected_next_fire_at`.
    async fn schedule_fire(&self, p: ScheduleFire) -> Result<ScheduleFired>;
    /// The earliest `next_fire_at` of an active schedule (for the engine's wake-up).
    async fn schedule_next_fire_at(&self) -> Result<Option<DateTime<Utc>>>;

    /// Insert a job; an existing `dedupe_key` returns the existing job with `created = false`.
    async fn job_insert(&self, p: JobInsert) -> Result<JobInserted>;
    /// Insert many jobs in one statement batch, skipping existing dedupe keys. Returns the ids
    /// created.
    async fn job_insert_many(&self, p: Vec<JobInsert>) -> Result<Vec<String>>;
    /// A job by id.
    async fn job_get(&self, id: &str) -> Result<Option<Job>>;
    /// Jobs matching filters, newest first.
    async fn job_list(&self, p: JobList) -> Result<Vec<Job>>;
    /// Claim due jobs (`state = available AND run_at <= now`), oldest `run_at` first, at most
    /// `limit`, under a lease. Only one claimer can win a job (S3-4).
    async fn job_claim(&self, p: JobClaim) -> Result<Vec<Job>>;
    /// Extend the leases of running jobs still held with the given token. Returns how many.
    async fn job_lease_renew(&self, p: JobLeaseRenew) -> Result<u64>;
    /// Record outcomes of many attempts in one transaction (group commit). A completion whose
    /// lease token no longer matches is not applied and is reported as stale.
    async fn job_complete_many(&self, p: Vec<JobComplete>) -> Result<CompleteReport>;
    /// Cancel a job that has not finished. `None` if it does not exist.
    async fn job_cancel(&self, p: JobCancel) -> Result<Option<Job>>;
    /// Make a job run again now: a dead, cancelled or skipped job gets a fresh set of attempts;
    /// an available job waiting for a retry is moved to now. `None` if it does not exist.
    async fn job_retry(&self, p: JobRetry) -> Result<Option<Job>>;
    /// Return jobs whose lease expired to `available` (or `dead` if their attempts are spent),
    /// recording the lost attempt. Returns the ids rescued.
    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>>;
    /// The attempts of a job, oldest first.
    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>>;
    /// The earliest `run_at` of an available job (for the engine's wake-up).
    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>>;
    /// Number of jobs per state.
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>>;
}
