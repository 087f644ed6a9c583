//! `/v1/deliveries`: the delivery log of audience jobs (seed 003's admin log), one row per
//! (topic, recipient, target, period) with each channel's state, attempts and last error.
//!
//! Filters combine: `topic`, `recipient`, `target`, `period`, `channel`, `state` (on any
//! channel, or on `channel` when given) and `state.<channel>` per channel, so that "the mail
//! died and the webhook was sent" is one question (`state.email=dead&state.webhook=succeeded`).
//! The filters are read by hand rather than by serde: `state.<channel>` keys are open-ended,
//! and each bad one is a 422 naming it. The admin page parses the same way.

use crate::AppState;
use crate::problem::{ApiResult, Problem};
use crate::routes::occurrences::derive_status;
use crate::views::{ts, ts_opt};
use axum::extract::{RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kairos_core::JobState;
use kairos_store::{Delivery, DeliveryKey, DeliveryList};
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// Default page size.
pub const DEFAULT_LIMIT: i64 = 50;

/// The routes (mounted under `/v1/deliveries`).
pub fn router() -> Router<AppState> {
    Router::new().route("/", get(list))
}

/// The filters (documentation of the query string; see the module documentation).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this recipient id.
    pub recipient: Option<String>,
    /// Only this target.
    pub target: Option<String>,
    /// Only this period key (`2026-W48`).
    pub period: Option<String>,
    /// Only rows with a job on this channel (`email`, `webhook`).
    pub channel: Option<String>,
    /// Only rows with a job in this state on any channel (on `channel` when given):
    /// `available`, `running`, `succeeded`, `skipped`, `cancelled`, `dead`.
    pub state: Option<String>,
    /// Only rows whose email job is in this state.
    #[param(rename = "state.email")]
    pub state_email: Option<String>,
    /// Only rows whose webhook job is in this state.
    #[param(rename = "state.webhook")]
    pub state_webhook: Option<String>,
    /// Rows after this cursor (the previous page's `next_before`).
    pub before: Option<String>,
    /// Page size, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One channel of a delivery row: its newest job.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryChannelView {
    /// The job's state (`succeeded`, `dead`, `skipped`, …; an unknown stored value as it is).
    pub state: String,
    /// Attempts started.
    pub attempts: i64,
    /// The last failed attempt's error.
    pub last_error: Option<String>,
    /// Why the job was skipped or cancelled.
    pub reason: Option<String>,
    /// The job (`job_…`).
    pub job_id: String,
    /// When it reached a final state.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
}

/// One delivery: a recipient's period of a topic for one target.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryView {
    /// The topic.
    pub topic: String,
    /// The recipient id.
    pub recipient: String,
    /// The target; null when the subscription has none.
    pub target: Option<String>,
    /// The period key.
    pub period: String,
    /// The occurrence's nominal firing time.
    #[schema(format = DateTime)]
    pub fire_at: Option<String>,
    /// The row's status over its channels (`success`, `partial`, `failure`, `skipped`,
    /// `cancelled`, or `pending` while a job is open).
    pub status: String,
    /// Each channel by name.
    pub channels: BTreeMap<String, DeliveryChannelView>,
}

impl From<&Delivery> for DeliveryView {
    fn from(d: &Delivery) -> Self {
        DeliveryView {
            topic: d.key.topic.clone(),
            recipient: d.key.recipient_id.clone(),
            target: (!d.key.target.is_empty()).then(|| d.key.target.clone()),
            period: d.key.period_key.clone(),
            fire_at: d.fire_at.map(ts),
            status: derive_status(d.channels.iter().map(|c| (c.state.as_str(), 1))).into(),
            channels: d
                .channels
                .iter()
                .map(|c| {
                    (
                        c.channel.clone(),
                        DeliveryChannelView {
                            state: c.state.clone(),
                            attempts: c.attempts,
                            last_error: c.last_error.clone(),
                            reason: c.reason.clone(),
                            job_id: c.job_id.clone(),
                            finished_at: ts_opt(c.finished_at),
                        },
                    )
                })
                .collect(),
        }
    }
}

/// A page of deliveries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryPage {
    /// Newest period first.
    pub data: Vec<DeliveryView>,
    /// Pass as `before` for the next page; null on the last page.
    pub next_before: Option<String>,
}

/// The cursor of a row: its key, opaque to the client.
pub fn cursor_of(k: &DeliveryKey) -> String {
    let parts = [&k.period_key, &k.topic, &k.recipient_id, &k.target];
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&parts).unwrap_or_default())
}

fn parse_cursor(v: &str) -> Result<DeliveryKey, Problem> {
    let bad = || Problem::invalid("before", "is not a cursor this list returned");
    let bytes = URL_SAFE_NO_PAD.decode(v).map_err(|_| bad())?;
    let [period_key, topic, recipient_id, target]: [String; 4] =
        serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok(DeliveryKey {
        period_key,
        topic,
        recipient_id,
        target,
    })
}

fn known_state(field: &str, v: &str) -> Result<String, Problem> {
    JobState::parse_known(v)
        .map(|s| s.as_str().to_string())
        .ok_or_else(|| {
            Problem::invalid(
                field,
                &format!(
                    "\"{v}\" is not one of available, running, succeeded, skipped, cancelled, dead"
                ),
            )
        })
}

fn known_channel(field: &str, v: &str) -> Result<String, Problem> {
    if kairos_engine::audience::CHANNELS.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(Problem::invalid(
            field,
            &format!(
                "\"{v}\" is not an audience channel ({})",
                kairos_engine::audience::CHANNELS.join(", ")
            ),
        ))
    }
}

/// The store query of the filters in `pairs` (a query string's or a form's). A blank value is
/// no filter; an unknown key, an unknown state or channel, a bad cursor or limit is a 422
/// naming the field.
pub fn parse_filters<I, K, V>(pairs: I) -> Result<DeliveryList, Problem>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut q = DeliveryList {
        limit: DEFAULT_LIMIT,
        ..Default::default()
    };
    let mut seen: Vec<String> = Vec::new();
    for (k, v) in pairs {
        let (k, v) = (k.as_ref(), v.as_ref().trim());
        if seen.iter().any(|s| s == k) {
            return Err(Problem::invalid(k, "is given more than once"));
        }
        seen.push(k.to_string());
        if v.is_empty() {
            continue;
        }
        match k {
            "topic" => q.topic = Some(v.into()),
            "recipient" => q.recipient_id = Some(v.into()),
            "target" => q.target = Some(v.into()),
            "period" => q.period_key = Some(v.into()),
            "channel" => q.channel = Some(known_channel(k, v)?),
            "state" => q.state = Some(known_state(k, v)?),
            "before" => q.after = Some(parse_cursor(v)?),
            "limit" => {
                q.limit = v
                    .parse::<i64>()
                    .ok()
                    .filter(|l| (1..=1000).contains(l))
                    .ok_or_else(|| Problem::invalid(k, "must be an integer from 1 to 1000"))?
            }
            _ => match k.strip_prefix("state.") {
                Some(ch) => {
                    let ch = known_channel(k, ch)?;
                    let st = known_state(k, v)?;
                    q.channel_states.push((ch, st));
                }
                None => {
                    return Err(Problem::invalid(
                        k,
                        "is not a filter (topic, recipient, target, period, channel, state, \
                         state.<channel>, before, limit)",
                    ));
                }
            },
        }
    }
    Ok(q)
}

/// One page of deliveries for `q`.
pub async fn page(state: &AppState, q: DeliveryList) -> ApiResult<DeliveryPage> {
    let limit = q.limit;
    let rows = state
        .kairos
        .store()
        .delivery_list(q)
        .await
        .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))?;
    let next_before = if rows.len() as i64 == limit {
        rows.last().map(|d| cursor_of(&d.key))
    } else {
        None
    };
    Ok(DeliveryPage {
        data: rows.iter().map(DeliveryView::from).collect(),
        next_before,
    })
}

/// The delivery log: one row per (topic, recipient, target, period), newest period first,
/// with each channel's state, attempts and last error.
#[utoipa::path(operation_id = "deliveries_list", get, path = "/v1/deliveries", tag = "audiences",
    params(DeliveryQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of deliveries", body = DeliveryPage),
        (status = 422, description = "A filter is not valid (the problem names it)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<DeliveryPage>> {
    let raw = raw.unwrap_or_default();
    let q = parse_filters(url::form_urlencoded::parse(raw.as_bytes()))?;
    Ok(Json(page(&state, q).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(r: Result<DeliveryList, Problem>) -> String {
        r.expect_err("refused").field.unwrap_or_default()
    }

    #[test]
    fn bad_filters_are_refused_naming_the_field() {
        assert_eq!(field(parse_filters([("state.push", "dead")])), "state.push");
        assert_eq!(
            field(parse_filters([("state.email", "lost")])),
            "state.email"
        );
        assert_eq!(field(parse_filters([("state", "lost")])), "state");
        assert_eq!(field(parse_filters([("channel", "fax")])), "channel");
        assert_eq!(field(parse_filters([("colour", "red")])), "colour");
        assert_eq!(field(parse_filters([("limit", "0")])), "limit");
        assert_eq!(field(parse_filters([("before", "nope")])), "before");
        assert_eq!(
            field(parse_filters([("topic", "a"), ("topic", "b")])),
            "topic"
        );
    }

    #[test]
    fn filters_and_cursor_roundtrip() {
        let key = DeliveryKey {
            period_key: "2026-W48".into(),
            topic: "news".into(),
            recipient_id: "r1".into(),
            target: String::new(),
        };
        let c = cursor_of(&key);
        let q = parse_filters([
            ("state.email", "dead"),
            ("state.webhook", "succeeded"),
            ("before", c.as_str()),
            ("period", " "),
        ])
        .expect("valid");
        assert_eq!(
            q.channel_states,
            [
                ("email".to_string(), "dead".to_string()),
                ("webhook".to_string(), "succeeded".to_string())
            ]
        );
        assert_eq!(q.after, Some(key));
        assert_eq!(q.period_key, None, "a blank value is no filter");
        assert_eq!(q.limit, DEFAULT_LIMIT);
    }
}
