//! Bulk actions on jobs (`POST /v1/jobs/cancel`, `POST /v1/jobs/retry`, the admin job list's
//! "… selected" and "… all matching"): cancel or retry every job named by a list of ids or
//! matched by a filter, in batches of at most [`JOB_BULK_BATCH`] jobs, each batch its own
//! transaction, so no statement or lock grows with the match.
//!
//! The state rules are the single-job ones: cancel acts on jobs that have not finished
//! (`available`, `running`); retry acts on `dead` and `cancelled` jobs, which are queued again
//! now with a fresh set of attempts (the dead-letter replay). Jobs in other states are left
//! alone and not counted: the count is the jobs acted on.

use super::{Kairos, parse_instant};
use crate::error::OpsError;
use chrono::Duration;
use kairos_core::JobState;
use kairos_store::*;
use serde::Deserialize;

/// Most ids one bulk request may name.
pub const MAX_BULK_IDS: usize = 1_000;
/// Longest accepted cancel reason.
pub(crate) const MAX_REASON: usize = 200;

/// Which jobs a bulk action takes: `ids`, or any combination of the filter fields, or
/// `"all": true` for every job the action applies to (an empty request is refused, so a
/// forgotten filter never acts on every job). Instants are RFC 3339, on the job's creation time:
/// `created_after` is inclusive, `created_before` exclusive.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = JobBulkBody))]
#[serde(deny_unknown_fields)]
pub struct JobBulkRequest {
    /// These jobs (1 to 1000 ids). Not together with the filter fields.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Only jobs in this state (`available`, `running`, `succeeded`, `skipped`, `cancelled`,
    /// `dead`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::JobStateSchema>))]
    pub state: Option<String>,
    /// Only jobs of this kind (an open filter: any kind in the database).
    #[serde(default)]
    pub kind: Option<String>,
    /// Only jobs of this schedule (`schedule` is an alias: the name the list filters use).
    #[serde(default, alias = "schedule")]
    pub schedule_id: Option<String>,
    /// Only jobs on this channel.
    #[serde(default)]
    pub channel: Option<String>,
    /// Only jobs created before this instant (exclusive).
    #[serde(default)]
    pub created_before: Option<String>,
    /// Only jobs created at or after this instant (inclusive).
    #[serde(default)]
    pub created_after: Option<String>,
    /// Cancel only: the reason stored on each cancelled job (default `cancelled in bulk`).
    #[serde(default)]
    pub reason: Option<String>,
    /// `true`: every job the action applies to (narrowed by any filter fields given). Required
    /// when neither ids nor a filter field is given.
    #[serde(default)]
    pub all: Option<bool>,
}

/// The fields of [`JobBulkRequest`] that hold strings (all but `ids`).
const STRING_FIELDS: [&str; 8] = [
    "state",
    "kind",
    "schedule",
    "schedule_id",
    "channel",
    "created_before",
    "created_after",
    "reason",
];

impl JobBulkRequest {
    /// Read a request from a JSON body, naming the field that is wrong: an unknown field, a
    /// value of the wrong type, more than [`MAX_BULK_IDS`] ids. `null` is the same as absent.
    pub fn from_json(v: serde_json::Value) -> Result<Self, OpsError> {
        let serde_json::Value::Object(map) = v else {
            return Err(OpsError::invalid(
                "body",
                "must be a JSON object: {\"ids\": [...]} or filter fields",
            ));
        };
        let mut req = JobBulkRequest::default();
        for (key, value) in map {
            if value.is_null() {
                continue;
            }
            if key == "all" {
                let serde_json::Value::Bool(b) = value else {
                    return Err(OpsError::invalid("all", "must be true or false"));
                };
                req.all = Some(b);
                continue;
            }
            if key == "ids" {
                let serde_json::Value::Array(items) = value else {
                    return Err(OpsError::invalid("ids", "must be an array of job ids"));
                };
                if items.len() > MAX_BULK_IDS {
                    return Err(OpsError::invalid(
                        "ids",
                        format!(
                            "at most {MAX_BULK_IDS} ids per request (got {}); use a filter for more",
                            items.len()
                        ),
                    ));
                }
                let ids = items
                    .into_iter()
                    .map(|i| match i {
                        serde_json::Value::String(s) => Ok(s),
                        _ => Err(OpsError::invalid("ids", "must be an array of job ids")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                req.ids = Some(ids);
                continue;
            }
            if !STRING_FIELDS.contains(&key.as_str()) {
                return Err(OpsError::invalid(
                    key,
                    "unknown field; expected ids, all, state, kind, schedule (or schedule_id), channel, created_before, created_after (and reason for cancel)",
                ));
            }
            let serde_json::Value::String(s) = value else {
                return Err(OpsError::invalid(key, "must be a string"));
            };
            let slot = match key.as_str() {
                "state" => &mut req.state,
                "kind" => &mut req.kind,
                "schedule" | "schedule_id" => &mut req.schedule_id,
                "channel" => &mut req.channel,
                "created_before" => &mut req.created_before,
                "created_after" => &mut req.created_after,
                _ => &mut req.reason,
            };
            *slot = Some(s);
        }
        Ok(req)
    }

    fn has_filter(&self) -> bool {
        self.state.is_some()
            || self.kind.is_some()
            || self.schedule_id.is_some()
            || self.channel.is_some()
            || self.created_before.is_some()
            || self.created_after.is_some()
    }
}

impl Kairos {
    /// Validate a bulk request into the store's selection (the first batch).
    fn bulk_select(&self, req: &JobBulkRequest) -> Result<JobSelect, OpsError> {
        let mut select = JobSelect {
            ids: None,
            filter: JobFilter::default(),
            after_id: None,
            limit: JOB_BULK_BATCH,
        };
        if let Some(ids) = &req.ids {
            if req.all == Some(true) {
                return Err(OpsError::invalid(
                    "all",
                    "give either ids or \"all\": true, not both",
                ));
            }
            if req.has_filter() {
                return Err(OpsError::invalid(
                    "ids",
                    "give either ids or filter fields (state, kind, schedule_id, channel, created_before, created_after), not both",
                ));
            }
            if ids.len() > MAX_BULK_IDS {
                return Err(OpsError::invalid(
                    "ids",
                    format!("at most {MAX_BULK_IDS} ids per request"),
                ));
            }
            select.ids = Some(ids.clone());
            return Ok(select);
        }
        if !req.has_filter() && req.all != Some(true) {
            return Err(OpsError::invalid(
                "all",
                "no ids and no filter: give \"all\": true to act on every job the action applies to",
            ));
        }
        let f = &mut select.filter;
        if let Some(s) = &req.state {
            let st = JobState::parse_known(s).ok_or_else(|| {
                OpsError::invalid(
                    "state",
                    format!(
                        "unknown state {s:?}; one of available, running, succeeded, skipped, cancelled, dead"
                    ),
                )
            })?;
            f.state = Some(st.as_str().to_string());
        }
        if let Some(k) = &req.kind {
            f.kind = Some(self.check_kind(Some(k))?.as_str().to_string());
        }
        for (field, value, slot) in [
            ("schedule_id", &req.schedule_id, &mut f.schedule_id),
            ("channel", &req.channel, &mut f.channel),
        ] {
            if let Some(v) = value {
                if v.is_empty() || v.len() > MAX_REASON {
                    return Err(OpsError::invalid(
                        field,
                        format!("must be 1 to {MAX_REASON} characters"),
                    ));
                }
                *slot = Some(v.clone());
            }
        }
        f.created_before = req
            .created_before
            .as_deref()
            .map(|s| parse_instant("created_before", s))
            .transpose()?;
        f.created_after = req
            .created_after
            .as_deref()
            .map(|s| parse_instant("created_after", s))
            .transpose()?;
        if let (Some(a), Some(b)) = (f.created_after, f.created_before)
            && a >= b
        {
            return Err(OpsError::invalid(
                "created_after",
                "must be before created_before",
            ));
        }
        // Only jobs that exist when the request starts: jobs created while it runs do not
        // extend it.
        let bound = self.clock.now() + Duration::milliseconds(1);
        f.created_before = Some(f.created_before.map_or(bound, |b| b.min(bound)));
        Ok(select)
    }

    /// Cancel every selected job that has not finished (`available` or `running`), in
    /// batches of at most [`JOB_BULK_BATCH`]. Returns how many were cancelled.
    pub async fn job_bulk_cancel(&self, req: JobBulkRequest) -> Result<u64, OpsError> {
        if let Some(r) = &req.reason {
            kairos_core::text::check_text("reason", r)?;
        }
        let reason = match req.reason.as_deref().map(str::trim) {
            None => "cancelled in bulk".to_string(),
            Some(r) if r.is_empty() || r.len() > MAX_REASON => {
                return Err(OpsError::invalid(
                    "reason",
                    format!("must be 1 to {MAX_REASON} characters"),
                ));
            }
            Some(r) => r.to_string(),
        };
        let select = self.bulk_select(&req)?;
        self.job_bulk_cancel_select(select, &reason).await
    }

    /// Cancel the jobs of `select` (every batch), recording `reason`. Returns how many.
    pub(crate) async fn job_bulk_cancel_select(
        &self,
        mut select: JobSelect,
        reason: &str,
    ) -> Result<u64, OpsError> {
        let mut total = 0;
        loop {
            let done = self
                .store
                .job_bulk_cancel(JobBulkCancel {
                    select: select.clone(),
                    reason: reason.to_string(),
                    now: self.clock.now(),
                })
                .await?;
            total += done.count;
            match done.last_id {
                Some(last) => select.after_id = Some(last),
                None => return Ok(total),
            }
        }
    }

    /// Queue every selected `dead` or `cancelled` job again, now, with a fresh set of
    /// attempts, in batches of at most [`JOB_BULK_BATCH`]. Returns how many.
    pub async fn job_bulk_retry(&self, req: JobBulkRequest) -> Result<u64, OpsError> {
        if req.reason.is_some() {
            return Err(OpsError::invalid(
                "reason",
                "only a cancel records a reason",
            ));
        }
        let mut select = self.bulk_select(&req)?;
        let mut total = 0;
        loop {
            let done = self
                .store
                .job_bulk_retry(JobBulkRetry {
                    select: select.clone(),
                    now: self.clock.now(),
                })
                .await?;
            total += done.count;
            if done.count > 0 {
                self.wake.notify_one();
            }
            match done.last_id {
                Some(last) => select.after_id = Some(last),
                None => return Ok(total),
            }
        }
    }
}
