//! Parameters of store methods: one struct per method, so adding a field breaks no caller.

use chrono::{DateTime, Utc};
use kairos_core::schedule::{Misfire, Overlap, PeriodUnit, ScheduleSpec};
use kairos_core::{JobKind, JobState, RetryPolicy};

/// `endpoint_upsert`.
#[derive(Debug, Clone)]
pub struct EndpointUpsert {
    /// Id to use if a new endpoint is created.
    pub id: String,
    /// URL.
    pub url: String,
    /// `whsec_…` secret.
    pub secret: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `endpoint_disable`.
#[derive(Debug, Clone)]
pub struct EndpointDisable {
    /// The endpoint.
    pub id: String,
    /// Why.
    pub reason: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `endpoint_list`: endpoints by id (keyset), optionally only the disabled or the enabled
/// ones.
#[derive(Debug, Clone, Default)]
pub struct EndpointList {
    /// Only ids after this one.
    pub after: Option<String>,
    /// `Some(true)`: only disabled endpoints; `Some(false)`: only enabled ones.
    pub disabled: Option<bool>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// `endpoint_enable`: clear an endpoint's disabled state.
#[derive(Debug, Clone)]
pub struct EndpointEnable {
    /// The endpoint.
    pub id: String,
}

/// `endpoint_failure_record`: remember a failed send to an endpoint (the latest one wins).
#[derive(Debug, Clone)]
pub struct EndpointFailureRecord {
    /// The endpoint.
    pub id: String,
    /// What failed.
    pub error: String,
    /// When.
    pub now: DateTime<Utc>,
}

/// `schedule_create`.
#[derive(Debug, Clone)]
pub struct ScheduleCreate {
    /// `sch_…`.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Kind of job created.
    pub kind: JobKind,
    /// The clock.
    pub spec: ScheduleSpec,
    /// IANA zone.
    pub timezone: String,
    /// Period key granularity.
    pub period: PeriodUnit,
    /// Misfire policy.
    pub misfire: Misfire,
    /// Misfire threshold (None: the node's default).
    pub misfire_threshold: Option<std::time::Duration>,
    /// Misfire window (None: the default, 7 days).
    pub misfire_window: Option<std::time::Duration>,
    /// Overlap policy.
    pub overlap: Overlap,
    /// Job payload.
    pub payload: serde_json::Value,
    /// Webhook endpoint.
    pub endpoint_id: Option<String>,
    /// Retry policy of created jobs.
    pub retry: Option<RetryPolicy>,
    /// Explicit channels (empty: one channel, the schedule's kind).
    pub channels: Vec<crate::ScheduleChannel>,
    /// The jobs' concurrency limit (a channel's own replaces it).
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// Start paused.
    pub paused: bool,
    /// The first firing.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `schedule_update`: the whole new definition.
#[derive(Debug, Clone)]
pub struct ScheduleUpdate {
    /// The schedule.
    pub id: String,
    /// The new definition (its `id` and `now` are used as given).
    pub def: ScheduleCreate,
}

/// `schedule_pause`.
#[derive(Debug, Clone)]
pub struct SchedulePause {
    /// The schedule.
    pub id: String,
    /// Pause (true) or resume (false).
    pub paused: bool,
    /// On resume: the next firing to set.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `schedule_list`.
#[derive(Debug, Clone, Default)]
pub struct ScheduleList {
    /// Only this state (`active`, `paused`, `finished`).
    pub state: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// `schedule_due`.
#[derive(Debug, Clone)]
pub struct ScheduleDue {
    /// Now: schedules with `next_fire_at <= now` are due.
    pub now: DateTime<Utc>,
    /// At most this many.
    pub limit: i64,
    /// Hold the claim until then.
    pub lock_until: DateTime<Utc>,
    /// The claiming node.
    pub node: String,
}

/// `schedule_release`.
#[derive(Debug, Clone)]
pub struct ScheduleRelease {
    /// The node whose claims are released.
    pub node: String,
    /// Now: only claims still in force (`locked_until > now`) are touched.
    pub now: DateTime<Utc>,
}

/// `schedule_fire`.
#[derive(Debug, Clone)]
pub struct ScheduleFire {
    /// The schedule.
    pub schedule_id: String,
    /// Apply only if the stored `next_fire_at` is still this (optimistic check).
    pub expected_next_fire_at: Option<DateTime<Utc>>,
    /// The new next firing (None: finished).
    pub next_fire_at: Option<DateTime<Utc>>,
    /// The last nominal firing materialized, if any.
    pub last_fire_at: Option<DateTime<Utc>>,
    /// Jobs to create (their dedupe keys make this idempotent).
    pub jobs: Vec<JobInsert>,
    /// Due firings that did not run, to record (one per gap and reason).
    pub gaps: Vec<ScheduleGapNew>,
    /// An on-time firing is materialized: the schedule's gaps recorded before this firing
    /// recover (`recovered_at = now`). The gaps of this firing stay open.
    pub on_time: bool,
    /// A firing to hold (`buffered_fire_at`) until the previous occurrence's jobs end
    /// (`buffer_one`); None leaves the held one, if any, as it is.
    pub buffer: Option<DateTime<Utc>>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `schedule_buffer_fire`: run a schedule's held firing.
#[derive(Debug, Clone)]
pub struct ScheduleBufferFire {
    /// The schedule.
    pub schedule_id: String,
    /// Apply only if the stored `buffered_fire_at` is still this (optimistic check): it is
    /// cleared and becomes `last_fire_at`.
    pub buffered_fire_at: DateTime<Utc>,
    /// The firing's jobs (their dedupe keys make this idempotent).
    pub jobs: Vec<JobInsert>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `schedule_buffered`: active schedules holding a firing, the oldest held first.
#[derive(Debug, Clone)]
pub struct ScheduleBuffered {
    /// At most this many.
    pub limit: i64,
}

/// `occurrence_open`: the jobs of one occurrence of a schedule that have not finished.
#[derive(Debug, Clone)]
pub struct OccurrenceOpen {
    /// The schedule.
    pub schedule_id: String,
    /// The occurrence's period key.
    pub period_key: String,
    /// At most this many ids.
    pub limit: i64,
}

/// A gap to record with [`ScheduleFire`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleGapNew {
    /// `skip`, `window`, …
    pub reason: String,
    /// The first missed nominal firing.
    pub first_fire_at: DateTime<Utc>,
    /// The last missed nominal firing.
    pub last_fire_at: DateTime<Utc>,
    /// How many.
    pub count: i64,
}

/// `schedule_gap_list`.
#[derive(Debug, Clone, Default)]
pub struct ScheduleGapList {
    /// Only this schedule's gaps.
    pub schedule_id: Option<String>,
    /// Only gaps not recovered yet.
    pub open: bool,
    /// At most this many (default 100), newest first.
    pub limit: Option<i64>,
}

/// `job_insert` and `job_insert_many`.
#[derive(Debug, Clone)]
pub struct JobInsert {
    /// `job_…`.
    pub id: String,
    /// Kind.
    pub kind: JobKind,
    /// Payload: ids and parameters, no secrets, no personal data.
    pub payload: serde_json::Value,
    /// Webhook endpoint.
    pub endpoint_id: Option<String>,
    /// The schedule that created it.
    pub schedule_id: Option<String>,
    /// Nominal firing time.
    pub fire_at: Option<DateTime<Utc>>,
    /// Period key.
    pub period_key: Option<String>,
    /// The channel it delivers on (a schedule's channel name, an audience channel).
    pub channel: Option<String>,
    /// Unique key (idempotency key or the expansion key).
    pub dedupe_key: Option<String>,
    /// Retry policy (resolved: its maximum of attempts is stored with the job).
    pub retry: RetryPolicy,
    /// The audience it delivers to (topic, recipient, variant), stored in columns: the
    /// stores never read them out of the payload.
    pub audience: kairos_core::JobAudience,
    /// Whether `retry` is its kind's default: then it is stored as NULL (smaller rows,
    /// nothing to parse on every claim) and read back as `retry: None`, which the engine
    /// resolves through its kind layer.
    pub retry_is_kind_default: bool,
    /// When due.
    pub run_at: DateTime<Utc>,
    /// Now.
    pub now: DateTime<Utc>,
    /// Its concurrency key and limit, rendered (`kairos_core::concurrency`).
    pub concurrency: Option<kairos_core::Concurrency>,
    /// The origin an `http` job calls (`https://api.example.com:443`), whose limits it
    /// shares with every job calling it (`crate::flow`); `None` for other kinds.
    pub http_origin: Option<String>,
}

/// `job_list`.
#[derive(Debug, Clone, Default)]
pub struct JobList {
    /// Only this state.
    pub state: Option<JobState>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only jobs of this schedule.
    pub schedule_id: Option<String>,
    /// Only ids before this one (pagination, newest first).
    pub before_id: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
    /// Only jobs of this channel (the `channel` column: a schedule's channel name, or an
    /// audience job's `email`/`webhook`).
    pub channel: Option<String>,
}

/// `job_claim`.
#[derive(Debug, Clone)]
pub struct JobClaim {
    /// Now: jobs with `run_at <= now` are due.
    pub now: DateTime<Utc>,
    /// At most this many.
    pub limit: i64,
    /// The claiming node.
    pub node: String,
    /// The fencing token written on every claimed job.
    pub lease_token: String,
    /// The lease ends then unless renewed.
    pub lease_until: DateTime<Utc>,
}

/// `job_lease_renew`.
#[derive(Debug, Clone)]
pub struct JobLeaseRenew {
    /// (job id, lease token) pairs.
    pub jobs: Vec<(String, String)>,
    /// The new end of the lease.
    pub lease_until: DateTime<Utc>,
}

/// The transition a completion makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// → succeeded.
    Succeeded,
    /// → skipped, with the reason.
    Skipped(String),
    /// → available at `run_at`. `refund_attempt` gives the attempt back (rate limits).
    Retry {
        /// When to run again.
        run_at: DateTime<Utc>,
        /// Do not count this attempt.
        refund_attempt: bool,
    },
    /// → dead.
    Dead,
}

/// One completion in `job_complete_many`.
#[derive(Debug, Clone)]
pub struct JobComplete {
    /// The job.
    pub id: String,
    /// The token of the lease under which the attempt ran.
    pub lease_token: String,
    /// What to record.
    pub attempt: crate::Attempt,
    /// Where the job goes.
    pub transition: Transition,
    /// After a success, record the job's A/B exposure (its payload's `topic`, `variant` and
    /// `recipient_id`) in the same transaction. Set by the kinds whose success is an exposure.
    pub record_exposure: bool,
}

impl JobComplete {
    /// Whether the job row holds this attempt instead of an attempt row: a success that
    /// carries nothing beyond its times and node (no status code, response, provider id or
    /// error). Such an attempt is stored in the job's `attempted_at`, `finished_at` and
    /// `attempted_by`, and `attempt_list` shows it like any other — one write per job fewer
    /// on the hot path, where most jobs are exactly that.
    ///
    /// Every field of [`crate::Attempt`] is named here: a new one does not compile until it
    /// is placed with what the job row holds or with what makes an attempt row needed.
    pub fn attempt_is_implicit(&self) -> bool {
        let crate::Attempt {
            // What the job row holds: its id, attempt count, times and node.
            job_id: _,
            attempt: _,
            started_at: _,
            finished_at: _,
            node,
            outcome,
            // What only an attempt row holds.
            error_class,
            status_code,
            error,
            response,
            provider_id,
        } = &self.attempt;
        matches!(self.transition, Transition::Succeeded)
            && *outcome == kairos_core::AttemptOutcome::Succeeded
            && node.is_some()
            && error_class.is_none()
            && status_code.is_none()
            && error.is_none()
            && response.is_none()
            && provider_id.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::{AttemptOutcome, ErrorClass};

    /// A named change to a completion.
    type Change = (&'static str, fn(&mut JobComplete));

    fn plain() -> JobComplete {
        let now = DateTime::from_timestamp(1_800_000_000, 0).expect("a time");
        JobComplete {
            id: "job_1".into(),
            lease_token: "t".into(),
            attempt: crate::Attempt {
                job_id: "job_1".into(),
                attempt: 2,
                started_at: now,
                finished_at: now,
                outcome: AttemptOutcome::Succeeded,
                error_class: None,
                status_code: None,
                error: None,
                response: None,
                provider_id: None,
                node: Some("node-a".into()),
            },
            transition: Transition::Succeeded,
            record_exposure: false,
        }
    }

    /// I14-implicit: a success with only its times and node is held by the job row; anything
    /// more, a missing node, or another outcome needs an attempt row.
    #[test]
    fn only_a_plain_success_with_its_node_is_implicit_i14_implicit() {
        assert!(plain().attempt_is_implicit());
        let changes: [Change; 8] = [
            ("error_class", |c| {
                c.attempt.error_class = Some(ErrorClass::Transient)
            }),
            ("status_code", |c| c.attempt.status_code = Some(200)),
            ("error", |c| c.attempt.error = Some("e".into())),
            ("response", |c| c.attempt.response = Some("ok".into())),
            ("provider_id", |c| c.attempt.provider_id = Some("p".into())),
            ("node", |c| c.attempt.node = None),
            ("outcome", |c| c.attempt.outcome = AttemptOutcome::Skipped),
            ("transition", |c| {
                c.transition = Transition::Skipped("no".into())
            }),
        ];
        for (what, change) in changes {
            let mut c = plain();
            change(&mut c);
            assert!(!c.attempt_is_implicit(), "{what} set: not implicit");
        }
    }
}

/// `job_cancel`.
#[derive(Debug, Clone)]
pub struct JobCancel {
    /// The job.
    pub id: String,
    /// Why.
    pub reason: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `job_retry`.
#[derive(Debug, Clone)]
pub struct JobRetry {
    /// The job.
    pub id: String,
    /// Now: the job becomes due now.
    pub now: DateTime<Utc>,
}

/// `job_rescue`.
#[derive(Debug, Clone)]
pub struct JobRescue {
    /// Leases that ended before now are expired.
    pub now: DateTime<Utc>,
    /// At most this many.
    pub limit: i64,
    /// This node has just started: every job still `running` under its name was held by its
    /// previous process and is lost now, whatever its lease says.
    pub restarted_node: Option<String>,
}

/// `job_search`: the operator's filtered job list (admin UI). Every filter is optional and they
/// combine; pages are keyset-paginated on the id (newest first), so a page deep into
/// millions of rows costs what the first page costs.
#[derive(Debug, Clone, Default)]
pub struct JobSearch {
    /// Only this state (stored string, so an unknown state can be searched too).
    pub state: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only jobs of this schedule.
    pub schedule_id: Option<String>,
    /// Only this period key.
    pub period_key: Option<String>,
    /// Only jobs whose payload names this topic (`payload.topic`, audience jobs).
    pub topic: Option<String>,
    /// Only jobs whose payload names this recipient (`payload.recipient_id`). Jobs carry ids,
    /// never addresses.
    pub recipient_id: Option<String>,
    /// Only jobs of this channel (the `channel` column).
    pub channel: Option<String>,
    /// Only jobs posting to this webhook endpoint (`ep_…`).
    pub endpoint_id: Option<String>,
    /// With `endpoint_id`: also the jobs of these kinds that have no endpoint of their own and
    /// post to their recipient's webhook, when that is the endpoint (an audience's `webhook`
    /// channel). Empty: only jobs naming the endpoint.
    pub recipient_endpoint_kinds: Vec<String>,
    /// Only jobs whose payload's JSON text contains this, ASCII case ignored; `%` and `_`
    /// match themselves. A scan of the filtered rows: an operator's search, not a hot path.
    pub payload_text: Option<String>,
    /// Only jobs created at or after this instant.
    pub created_from: Option<DateTime<Utc>>,
    /// Only jobs created before this instant.
    pub created_to: Option<DateTime<Utc>>,
    /// Only ids before this one (the keyset cursor: the last id of the previous page).
    pub before_id: Option<String>,
    /// At most this many (clamped to 1..=1000).
    pub limit: i64,
}
