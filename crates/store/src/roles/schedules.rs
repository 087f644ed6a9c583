//! Schedules and their catch-up times: what the scheduler claims, fires and advances.

use crate::*;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Schedules (definition, claim, firing) and catch-up times.
///
/// A firing is materialized once: `schedule_fire` and `catch_up_fire` advance their cursor
/// only if it still has the expected value, and insert the firing's jobs in the same
/// transaction.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
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
    /// until `lock_until` so that one node expands each firing.
    async fn schedule_due(&self, p: ScheduleDue) -> Result<Vec<Schedule>>;
    /// Release every claim `node` holds on a schedule: its previous process (the node
    /// restarted) died between claiming and firing, and the firing must not wait for the lock
    /// to expire. Returns how many were released.
    async fn schedule_release(&self, p: ScheduleRelease) -> Result<u64>;
    /// Expand a claimed schedule's firings into jobs and advance `next_fire_at`, in one
    /// transaction. Applies only if `next_fire_at` is still `expected_next_fire_at`.
    async fn schedule_fire(&self, p: ScheduleFire) -> Result<ScheduleFired>;
    /// The earliest `next_fire_at` of an active schedule (for the scheduler's wake-up).
    async fn schedule_next_fire_at(&self) -> Result<Option<DateTime<Utc>>>;
    /// Replace a schedule's catch-up times.
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
    /// Recorded gaps (due firings that did not run), newest first by first firing.
    async fn schedule_gap_list(&self, p: ScheduleGapList) -> Result<Vec<ScheduleGap>>;
    /// Active schedules holding a firing (`buffered_fire_at`, the `buffer_one` overlap
    /// policy), the oldest held first, at most `limit`.
    async fn schedule_buffered(&self, p: ScheduleBuffered) -> Result<Vec<Schedule>>;
    /// Run a schedule's held firing: clear `buffered_fire_at` (if still the expected one),
    /// make it `last_fire_at` and insert its jobs, in one transaction. `advanced` is false
    /// when another node released it first.
    async fn schedule_buffer_fire(&self, p: ScheduleBufferFire) -> Result<ScheduleFired>;
    /// Ids of the jobs of one occurrence (schedule and period key) that have not finished
    /// (`available`: waiting, due or waiting for a retry; `running`), oldest first, at most
    /// `limit`. Empty: the occurrence has no open jobs.
    async fn occurrence_open(&self, p: OccurrenceOpen) -> Result<Vec<String>>;
}
