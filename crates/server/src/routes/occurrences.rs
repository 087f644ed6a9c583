//! `/v1/occurrences?schedule=…&period=…&state=…`: each firing (period) of a schedule with its jobs'
//! states per channel and the derived status:
//!
//! - `pending`: some job has not finished (available or running);
//! - `success`: every job finished, something succeeded and nothing died;
//! - `partial`: every job finished, something succeeded and something died;
//! - `failure`: every job finished, something died and nothing succeeded;
//! - `skipped`: every job finished, none succeeded or died, and some were skipped;
//! - `cancelled`: every job finished and all were cancelled.
//!
//! A skip is a decision, not a delivery: an occurrence whose jobs were all skipped says so
//! rather than claiming `success`, and skipped plus dead is a `failure` (nothing was delivered).
//!
//! Beside them, each recorded gap of due firings that did not run (misfire policy, window):
//! `"status": "missed"` with its `reason`, first and last period and `count`.

use crate::AppState;
use crate::problem::{ApiQuery, ApiResult};
use crate::views::ts;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use kairos_store::OccurrenceCount;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/occurrences`).
pub fn router() -> Router<AppState> {
    Router::new().route("/", get(list))
}

/// One channel of an occurrence: job counts by state.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChannelView {
    /// The channel's name (the job kind for jobs without a channel).
    pub channel: String,
    /// Jobs per state (`succeeded`, `skipped`, `dead`, `available`, …).
    pub states: BTreeMap<String, i64>,
    /// Jobs in all.
    pub total: i64,
    /// This channel's own derived status.
    #[schema(value_type = kairos_engine::ops::api_enums::OccurrenceStatusSchema)]
    pub status: String,
}

/// One occurrence.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OccurrenceView {
    /// The schedule.
    pub schedule_id: String,
    /// The period key.
    pub period_key: String,
    /// The nominal firing time.
    pub fire_at: Option<String>,
    /// `success`, `partial`, `failure`, `skipped`, `cancelled` or `pending`; `missed` for a
    /// recorded gap.
    #[schema(value_type = kairos_engine::ops::api_enums::OccurrenceStatusSchema)]
    pub status: String,
    /// Per channel.
    pub channels: Vec<ChannelView>,
    /// The channels whose jobs failed (dead), on a `partial` occurrence (shown as `partial:
    /// <channels>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_channels: Option<Vec<String>>,
    /// For a `missed` record (`period_key` and `fire_at` are its first): why its firings did
    /// not run (`skip`, `window`, …), its last period and firing, and how many firings.
    #[serde(flatten)]
    pub missed: Option<MissedView>,
}

/// A recorded gap of due firings that did not run.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MissedView {
    /// `skip` (the misfire policy dropped them), `window` (later than the misfire window), …
    pub reason: String,
    /// The period key of the first missed firing.
    pub first_period: String,
    /// The period key of the last missed firing.
    pub last_period: String,
    /// The first missed nominal firing.
    #[schema(format = DateTime)]
    pub first_fire_at: String,
    /// The last missed nominal firing.
    #[schema(format = DateTime)]
    pub last_fire_at: String,
    /// How many firings did not run.
    pub count: i64,
    /// When the schedule next fired on time after the gap (null: not yet).
    #[schema(format = DateTime)]
    pub recovered_at: Option<String>,
}

/// A gap as a `missed` occurrence.
fn missed(schedule_id: &str, g: kairos_engine::ops::ScheduleGapPeriods) -> OccurrenceView {
    OccurrenceView {
        schedule_id: schedule_id.to_string(),
        period_key: g.first_period.clone(),
        fire_at: Some(ts(g.gap.first_fire_at)),
        status: "missed".into(),
        channels: Vec::new(),
        failed_channels: None,
        missed: Some(MissedView {
            reason: g.gap.reason,
            first_period: g.first_period,
            last_period: g.last_period,
            first_fire_at: ts(g.gap.first_fire_at),
            last_fire_at: ts(g.gap.last_fire_at),
            count: g.gap.count,
            recovered_at: g.gap.recovered_at.map(ts),
        }),
    }
}

/// Occurrences, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OccurrenceList {
    /// Occurrences.
    pub data: Vec<OccurrenceView>,
}

/// Filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// The schedule (`sch_…`; `schedule_id` is an alias). Required.
    #[serde(alias = "schedule_id")]
    pub schedule: String,
    /// Only this period key (`2026-W49`).
    pub period: Option<String>,
    /// Only occurrences of this status (`missed`: only the recorded gaps).
    #[param(value_type = Option<kairos_engine::ops::api_enums::OccurrenceStatusSchema>)]
    pub state: Option<String>,
    /// At most this many periods (1–200, default 20), counted after `state`.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
}

/// The status of a set of job-state counts (the rule in the module documentation).
pub fn derive_status<'a>(states: impl IntoIterator<Item = (&'a str, i64)>) -> &'static str {
    let (mut open, mut ok, mut dead, mut skipped) = (0, 0, 0, 0);
    for (s, n) in states {
        match s {
            "succeeded" => ok += n,
            "skipped" => skipped += n,
            "dead" => dead += n,
            "cancelled" => {}
            _ => open += n, // available, running, and states this version does not know
        }
    }
    match (open, ok, dead, skipped) {
        (o, _, _, _) if o > 0 => "pending",
        (_, o, 0, _) if o > 0 => "success",
        (_, o, _, _) if o > 0 => "partial",
        (_, _, d, _) if d > 0 => "failure",
        (_, _, _, s) if s > 0 => "skipped",
        _ => "cancelled",
    }
}

/// Group the store's counts into occurrences.
pub fn group(schedule_id: &str, counts: Vec<OccurrenceCount>) -> Vec<OccurrenceView> {
    let mut out: Vec<OccurrenceView> = Vec::new();
    let mut per: BTreeMap<(String, String), BTreeMap<String, i64>> = BTreeMap::new();
    let mut order: Vec<(String, Option<String>)> = Vec::new();
    for c in counts {
        if !order.iter().any(|(p, _)| *p == c.period_key) {
            order.push((c.period_key.clone(), c.fire_at.map(ts)));
        }
        *per.entry((c.period_key, c.channel))
            .or_default()
            .entry(c.state)
            .or_default() += c.count;
    }
    for (period, fire_at) in order {
        let channels: Vec<ChannelView> = per
            .iter()
            .filter(|((p, _), _)| *p == period)
            .map(|((_, ch), states)| ChannelView {
                channel: ch.clone(),
                total: states.values().sum(),
                status: derive_status(states.iter().map(|(k, v)| (k.as_str(), *v))).into(),
                states: states.clone(),
            })
            .collect();
        let status = derive_status(
            channels
                .iter()
                .flat_map(|c| c.states.iter().map(|(k, v)| (k.as_str(), *v))),
        );
        let failed_channels = (status == "partial").then(|| {
            channels
                .iter()
                .filter(|c| c.states.get("dead").is_some_and(|n| *n > 0))
                .map(|c| c.channel.clone())
                .collect()
        });
        out.push(OccurrenceView {
            schedule_id: schedule_id.to_string(),
            period_key: period,
            fire_at,
            status: status.into(),
            channels,
            failed_channels,
            missed: None,
        });
    }
    out
}

/// A schedule's occurrences with per-channel job states and derived status.
#[utoipa::path(operation_id = "occurrences_list", get, path = "/v1/occurrences", tag = "audiences", params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Occurrences, newest first", body = OccurrenceList),
        (status = 404, description = "No such schedule", body = crate::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad filter (`state`, `limit`)", body = crate::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<OccurrenceList>> {
    let data = occurrences(
        &state.kairos,
        kairos_store::OccurrenceList {
            schedule_id: q.schedule,
            period_key: q.period,
            limit: q.limit,
            status: q.state,
        },
    )
    .await?;
    Ok(Json(OccurrenceList { data }))
}

/// A schedule's occurrences, newest first, with its recorded gaps as `missed` ones: what
/// `GET /v1/occurrences` answers and `kairos occurrence list` prints. `period_key`: only
/// that period; `status`: only occurrences of that status (`missed`: only the gaps);
/// `limit`: at most this many (default 20).
pub async fn occurrences(
    kairos: &kairos_engine::Kairos,
    p: kairos_store::OccurrenceList,
) -> Result<Vec<OccurrenceView>, kairos_engine::OpsError> {
    let (schedule, period, limit) = (p.schedule_id.clone(), p.period_key.clone(), p.limit);
    let gaps_too = p.status.as_deref().is_none_or(|s| s == "missed");
    // The engine checks the status, the store filters on it (`missed` matches no period).
    let counts = kairos.occurrence_list(p).await?;
    let mut data = group(&schedule, counts);
    let gaps = if gaps_too {
        kairos
            .schedule_gap_list(&schedule, limit.unwrap_or(20))
            .await?
    } else {
        Vec::new()
    };
    data.extend(
        gaps.into_iter()
            .filter(|g| {
                period
                    .as_ref()
                    .is_none_or(|p| *p == g.first_period || *p == g.last_period)
            })
            .map(|g| missed(&schedule, g)),
    );
    // Newest first across both (the instants share one RFC 3339 format).
    data.sort_by(|a, b| b.fire_at.cmp(&a.fire_at));
    data.truncate(limit.unwrap_or(20) as usize);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::derive_status;
    use kairos_engine::ops::api_enums::OCCURRENCE_STATUSES;

    #[test]
    fn every_derived_status_is_in_the_documented_enum() {
        let states = [
            "available",
            "running",
            "succeeded",
            "skipped",
            "cancelled",
            "dead",
        ];
        // Every combination of present states.
        for mask in 0u32..(1 << states.len()) {
            let counts: Vec<(&str, i64)> = states
                .iter()
                .enumerate()
                .map(|(i, s)| (*s, i64::from(mask >> i & 1)))
                .collect();
            let status = derive_status(counts);
            assert!(OCCURRENCE_STATUSES.contains(&status), "{status}");
        }
    }

    #[test]
    fn status_is_pending_while_a_job_is_open() {
        assert_eq!(
            derive_status([("succeeded", 3), ("available", 1)]),
            "pending"
        );
        assert_eq!(derive_status([("running", 1), ("dead", 1)]), "pending");
        assert_eq!(derive_status([("exploded", 1)]), "pending");
    }

    #[test]
    fn status_success_when_something_succeeded_and_nothing_died() {
        assert_eq!(derive_status([("succeeded", 3)]), "success");
        assert_eq!(derive_status([("succeeded", 3), ("skipped", 1)]), "success");
        assert_eq!(
            derive_status([("succeeded", 1), ("cancelled", 2), ("dead", 0)]),
            "success"
        );
    }

    #[test]
    fn status_partial_when_something_succeeded_and_something_died() {
        assert_eq!(derive_status([("succeeded", 3), ("dead", 1)]), "partial");
        assert_eq!(
            derive_status([("succeeded", 1), ("dead", 1), ("skipped", 4)]),
            "partial"
        );
    }

    #[test]
    fn status_failure_when_something_died_and_nothing_succeeded() {
        assert_eq!(derive_status([("dead", 2), ("skipped", 0)]), "failure");
        assert_eq!(derive_status([("dead", 1), ("skipped", 3)]), "failure");
        assert_eq!(derive_status([("dead", 1), ("cancelled", 1)]), "failure");
    }

    #[test]
    fn status_skipped_when_jobs_were_only_skipped_or_cancelled() {
        assert_eq!(derive_status([("skipped", 2)]), "skipped");
        assert_eq!(derive_status([("skipped", 1), ("cancelled", 1)]), "skipped");
    }

    #[test]
    fn status_cancelled_when_nothing_else_happened() {
        assert_eq!(derive_status([("cancelled", 2)]), "cancelled");
        assert_eq!(derive_status(std::iter::empty()), "cancelled");
    }
}
