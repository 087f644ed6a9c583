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

mod admin;
mod artifacts;
mod audience;
pub mod batch;
mod bulk;
mod erasure;
mod error;
mod http_targets;
mod inbound;
mod leader;
mod params;
mod retention;
pub mod sealing;
mod slo;
mod types;

pub use admin::*;
pub use artifacts::*;
pub use audience::*;
pub use bulk::*;
pub use erasure::*;
pub use error::{Error, ErrorKind, Result};
pub use http_targets::*;
pub use inbound::*;
pub use leader::Leader;
pub use params::*;
pub use retention::*;
pub use slo::*;
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
    /// Endpoints by id after `after`, optionally only disabled (or only enabled) ones.
    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>>;
    /// Enable an endpoint again (clear `disabled_at` and its reason); `None` if it does not
    /// exist. Jobs skipped while it was disabled stay skipped.
    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>>;
    /// Record the latest failed send to an endpoint; an unknown id changes nothing.
    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()>;

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
    /// Cancel at most `limit` of the selected jobs that have not finished, in one
    /// transaction, in ascending id order; the caller repeats from `last_id` until it is
    /// `None`.
    async fn job_bulk_cancel(&self, p: JobBulkCancel) -> Result<JobBulkDone>;
    /// Queue at most `limit` of the selected dead or cancelled jobs again (now, fresh
    /// attempts), in one transaction, in ascending id order; the caller repeats from `last_id`
    /// until it is `None`.
    async fn job_bulk_retry(&self, p: JobBulkRetry) -> Result<JobBulkDone>;
    /// Return jobs whose lease expired to `available` (or `dead` if their attempts are spent),
    /// recording the lost attempt. Returns the ids rescued.
    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>>;
    /// The attempts of a job, oldest first.
    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>>;
    /// The earliest `run_at` of an available job (for the engine's wake-up).
    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>>;
    /// Number of jobs per state.
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>>;
    /// Jobs matching every given filter, newest first, keyset-paginated (the admin UI).
    async fn job_search(&self, p: JobSearch) -> Result<Vec<Job>>;

    /// Number of jobs per state and kind (the `kairos_jobs` gauge).
    async fn job_count_by_state_kind(&self) -> Result<Vec<JobCount>>;
    /// The queue depth, the oldest due job, and stuck work (S3-16).
    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog>;
    /// Jobs that reached a final state (`finished_at`) in a window, per state and kind (the
    /// failure rate, S3-15).
    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>>;
    /// Schedules with jobs that reached `dead` in a window, one row per schedule with its
    /// latest dead job, newest first, at most `limit` (the `dead_runs` check).
    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>>;
    /// Jobs that reached `succeeded`, `skipped` or `dead` in a window, per schedule (or
    /// `payload.topic` of `email` jobs without a schedule), state and skip reason (the
    /// `skip_rate` check). Jobs with neither are not counted.
    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<DecidedCount>>;
    /// The distinct `fire_at` of a schedule's jobs and audience expansions in a window,
    /// ascending: the firings materialized (missed firings, S4-10).
    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>>;
    /// Every stored SLO alert state.
    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>>;
    /// Insert or replace an SLO alert state.
    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()>;
    /// Versions of the embedded migrations not applied to the database (empty: current).
    async fn migration_pending(&self) -> Result<Vec<i64>>;

    /// Store an artifact unless its (name, period key) exists — insert-if-absent, never an
    /// overwrite (S4-5) — and, only if it was created, its follow-up jobs in the same
    /// transaction (S4-9).
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult>;
    /// An artifact by name and period key.
    async fn artifact_get(&self, p: ArtifactKey) -> Result<Option<Artifact>>;
    /// Artifacts, newest period first, optionally of one name.
    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>>;
    /// Delete artifacts created before a cut-off, at most `limit` (retention, S4-8). Returns
    /// how many.
    async fn artifact_prune(&self, p: ArtifactPrune) -> Result<u64>;
    /// Replace a schedule's catch-up times (S4-4).
    async fn catch_up_set(&self, p: CatchUpSet) -> Result<()>;
    /// A schedule's catch-up times, by time of day.
    async fn catch_up_list(&self, schedule_id: &str) -> Result<Vec<CatchUp>>;
    /// Catch-ups of active schedules due at `now`, oldest first.
    async fn catch_up_due(&self, p: CatchUpDue) -> Result<Vec<CatchUp>>;
    /// The earliest `next_at` of an active schedule's catch-up (for the scheduler's wake-up).
    async fn catch_up_next_at(&self) -> Result<Option<DateTime<Utc>>>;
    /// Advance a catch-up (if still at `expected_next_at`) and insert its jobs, in one
    /// transaction.
    async fn catch_up_fire(&self, p: CatchUpFire) -> Result<ScheduleFired>;

    // --- Audiences (seed 003): recipients, topics, subscriptions, suppressions, expansion.

    /// Create or replace a recipient.
    async fn recipient_upsert(&self, p: RecipientUpsert) -> Result<Recipient>;
    /// Create or replace many recipients in one transaction. Returns how many were written.
    async fn recipient_upsert_many(&self, p: Vec<RecipientUpsert>) -> Result<u64>;
    /// A recipient by id.
    async fn recipient_get(&self, id: &str) -> Result<Option<Recipient>>;
    /// Recipients by id, ascending.
    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>>;
    /// Create or replace a topic.
    async fn topic_put(&self, p: TopicPut) -> Result<Topic>;
    /// A topic by name.
    async fn topic_get(&self, name: &str) -> Result<Option<Topic>>;
    /// Topics by name (at most 1000).
    async fn topic_list(&self) -> Result<Vec<Topic>>;
    /// Create or replace the subscription of (recipient, topic). An unknown recipient is a
    /// `Conflict`.
    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription>;
    /// The subscription of (recipient, topic).
    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>>;
    /// Subscriptions by (recipient_id, topic), keyset-paginated.
    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>>;
    /// Suppress an address; `false` if it was suppressed already (the first reason stays).
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool>;
    /// The suppression of an address (compared normalized), if any.
    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>>;
    /// Record that a firing must be expanded; `false` if it was recorded already.
    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool>;
    /// Expansions not done, least recently advanced first.
    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>>;
    /// One expansion.
    async fn expansion_get(&self, schedule_id: &str, period_key: &str)
    -> Result<Option<Expansion>>;
    /// Insert a page of jobs and move the cursor in one transaction; `None` (nothing
    /// written) if the cursor was not `expected_cursor` any more.
    async fn expansion_advance(&self, p: ExpansionAdvance) -> Result<Option<Vec<String>>>;
    /// Exposures (successful sends) per variant of a topic.
    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>>;
    /// A schedule's occurrences (newest first): job counts per period, channel and state.
    async fn occurrence_list(&self, p: OccurrenceList) -> Result<Vec<OccurrenceCount>>;

    // --- HTTP call targets and retention (issue 6: S4-2, S4-8).

    /// Store an HTTP call target, or return the existing one with the same fingerprint.
    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget>;
    /// An HTTP call target by id.
    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>>;
    /// Delete finished jobs (in the given final states, finished before a cut-off) and their
    /// attempts, oldest first, at most `limit` jobs, in one transaction (retention, S4-8).
    async fn job_prune(&self, p: JobPrune) -> Result<JobPruned>;

    // --- Inbound events, suppression, unsubscribe, settings (issue 5: S3-9 … S3-13, S3-18).

    /// Store a provider event once (`ON CONFLICT DO NOTHING RETURNING`, S3-11), matched to the
    /// job whose attempt recorded its provider message id, and — only on its first delivery —
    /// apply its suppressions with their cascade, all in one transaction.
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded>;
    /// A stored inbound event.
    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>>;
    /// Delete inbound events received before a time, oldest first, at most `limit`; returns
    /// how many (the pruner's retention of events, S4-8).
    async fn inbound_event_prune(&self, p: InboundEventPrune) -> Result<u64>;
    /// Suppress an address and disable every subscription of every recipient with it, in one
    /// transaction (S3-9, S3-12).
    async fn suppression_apply(&self, p: SuppressionApply) -> Result<SuppressionApplied>;
    /// The suppression list by address, keyset-paginated.
    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>>;
    /// Remove an address from the suppression list, logging the reason; `false` if it was not
    /// on it.
    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool>;
    /// Disable the subscription of (recipient, topic); `false` if it was not enabled (or does
    /// not exist) — the one-click unsubscribe (S3-18).
    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool>;
    // --- Erasure of a person (issue 15).

    /// Erase a recipient in one transaction: delete the recipient (with their attributes) and
    /// subscriptions, store the suppression of their address as its keyed hash (creating the
    /// erasure key on first use), and replace the address in stored inbound events and in
    /// the stored texts of their jobs. Their pending jobs are cancelled by the caller first
    /// (`job_bulk_cancel`). `None` if the recipient does not exist.
    async fn recipient_erase(&self, p: RecipientErase) -> Result<Option<RecipientErased>>;
    /// Delete a topic and every subscription to it, in one transaction; `false` if it did not
    /// exist.
    async fn topic_delete(&self, name: &str) -> Result<bool>;
    /// Delete the subscription of (recipient, topic); `false` if it did not exist.
    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool>;

    /// A setting by name.
    async fn setting_get(&self, name: &str) -> Result<Option<Setting>>;
    /// Set or clear a setting.
    async fn setting_put(&self, p: SettingPut) -> Result<()>;

    // --- Admin sessions (issue 12).

    /// Store an admin session, deleting expired ones in the same transaction.
    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()>;
    /// An admin session by the hash of its id (expired or not: the caller compares).
    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>>;
    /// End an admin session (logout); `false` if it did not exist.
    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool>;
}
