//! Artifacts (products of periodic jobs, unique per name and period key) and
//! catch-up times of schedules: records and the params of their store methods.

use crate::JobInsert;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A stored artifact: one period's product of a job (a day's digest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// The artifact's name (a digest's `name`).
    pub name: String,
    /// The period it covers (`2026-10-20`).
    pub period_key: String,
    /// The text product (a digest's summary, plain text / Markdown).
    pub content: String,
    /// Structured data: the items, the feeds that failed, the summarizer used.
    pub data: serde_json::Value,
    /// The job that built it.
    pub job_id: Option<String>,
    /// The schedule of that job.
    pub schedule_id: Option<String>,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// `artifact_put`: insert if absent. Nothing is overwritten: the first artifact of a period
/// stays (a re-run is safe).
#[derive(Debug, Clone)]
pub struct ArtifactPut {
    /// The artifact (its `created_at` is the time of the write).
    pub artifact: Artifact,
    /// Jobs to insert in the same transaction, only if the artifact was created (the
    /// `digest.created` webhook, fan-out to subscribers). Their dedupe keys make a
    /// repeat harmless.
    pub then: Vec<JobInsert>,
}

/// What `artifact_put` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArtifactPutResult {
    /// Whether the artifact was created now (false: the period's artifact existed).
    pub created: bool,
    /// Ids of the follow-up jobs created.
    pub jobs: Vec<String>,
}

/// `artifact_get`: one artifact by name and period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactKey {
    /// The name.
    pub name: String,
    /// The period key.
    pub period_key: String,
}

/// `artifact_list`: newest period first.
#[derive(Debug, Clone, Default)]
pub struct ArtifactList {
    /// Only artifacts of this name.
    pub name: Option<String>,
    /// Only periods before this key (pagination within one name).
    pub before_period: Option<String>,
    /// At most this many (default 100, clamped to 1..=1000).
    pub limit: Option<i64>,
}

/// `artifact_prune`: delete artifacts created before `before`, at most `limit` (retention, in
/// bounded batches).
#[derive(Debug, Clone)]
pub struct ArtifactPrune {
    /// Artifacts created before this instant are deleted.
    pub before: DateTime<Utc>,
    /// At most this many in one call.
    pub limit: i64,
}

/// A catch-up time of a schedule: at `at` (`HH:MM` in the schedule's zone) the
/// scheduler checks whether the period's product is missing and, only then, runs it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUp {
    /// The schedule.
    pub schedule_id: String,
    /// The wall clock time, `HH:MM`.
    pub at: String,
    /// The next instant it is due (None: never again).
    pub next_at: Option<DateTime<Utc>>,
}

/// `catch_up_set`: replace a schedule's catch-up times.
#[derive(Debug, Clone)]
pub struct CatchUpSet {
    /// The schedule.
    pub schedule_id: String,
    /// The new list (empty: none).
    pub entries: Vec<CatchUp>,
}

/// `catch_up_due`: catch-ups of active schedules with `next_at <= now`, oldest first.
#[derive(Debug, Clone)]
pub struct CatchUpDue {
    /// Now.
    pub now: DateTime<Utc>,
    /// At most this many.
    pub limit: i64,
}

/// `catch_up_fire`: advance a catch-up and insert its jobs, in one transaction, only if its
/// `next_at` is still `expected_next_at` (two nodes handle it once; the jobs' dedupe keys make
/// even a repeat harmless).
#[derive(Debug, Clone)]
pub struct CatchUpFire {
    /// The schedule.
    pub schedule_id: String,
    /// The catch-up time (`HH:MM`).
    pub at: String,
    /// Apply only if the stored `next_at` is still this.
    pub expected_next_at: Option<DateTime<Utc>>,
    /// The new `next_at`.
    pub next_at: Option<DateTime<Utc>>,
    /// Jobs to create (none when the period's product exists).
    pub jobs: Vec<JobInsert>,
}
