//! What an operator does to jobs through the API, the CLI and the admin UI.

use crate::*;
use async_trait::async_trait;
use kairos_core::Job;

/// Jobs seen and steered by an operator: lists, searches, cancel and retry (one or in bulk),
/// the attempt log and a schedule's occurrences.
#[async_trait]
pub trait JobAdminStore: Send + Sync {
    /// Jobs matching filters, newest first.
    async fn job_list(&self, p: JobList) -> Result<Vec<Job>>;
    /// Jobs matching every given filter, newest first, keyset-paginated (the admin UI).
    async fn job_search(&self, p: JobSearch) -> Result<Vec<Job>>;
    /// Cancel a job that has not finished. `None` if it does not exist.
    async fn job_cancel(&self, p: JobCancel) -> Result<Option<Job>>;
    /// Make a job run again now: a dead, cancelled or skipped job gets a fresh set of attempts;
    /// an available job waiting for a retry is moved to now. `None` if it does not exist.
    async fn job_retry(&self, p: JobRetry) -> Result<Option<Job>>;
    /// Cancel at most `limit` of the selected jobs that have not finished, in one
    /// transaction, in ascending id order; the caller repeats from `last_id` until it is
    /// `None`.
    async fn job_bulk_cancel(&self, p: JobBulkCancel) -> Result<JobBulkDone>;
    /// Queue at most `limit` of the selected dead or cancelled jobs again (now, fresh
    /// attempts), in one transaction, in ascending id order; the caller repeats from `last_id`
    /// until it is `None`.
    async fn job_bulk_retry(&self, p: JobBulkRetry) -> Result<JobBulkDone>;
    /// The attempts of a job, oldest first.
    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>>;
    /// A schedule's occurrences (newest first): job counts per period, channel and state.
    async fn occurrence_list(&self, p: OccurrenceList) -> Result<Vec<OccurrenceCount>>;
    /// The delivery log: audience jobs grouped by (topic, recipient, target, period), each
    /// channel's newest job, ordered by that key descending (newest period first).
    async fn delivery_list(&self, p: DeliveryList) -> Result<Vec<Delivery>>;
}
