//! A schedule's channels (`"channels": [{"name", "kind", "<kind>": {…}, "payload"?,
//! "retry"?}]`): each firing creates one job per channel, each retried on its own, so a
//! channel that succeeded is never sent again when a sibling retries.
//!
//! A body with `kind` (or neither `kind` nor `channels`) is a schedule with one channel named
//! after its kind, stored as it always was; only explicit channels are stored as a list.

use super::{Kairos, WebhookTarget};
use crate::error::OpsError;
use crate::kinds::{KindRequest, RequestParts, RequestScope};
use kairos_core::retry::RetrySpec;
use kairos_store::ScheduleChannel;
use serde::Deserialize;

/// At most this many channels per schedule.
pub const MAX_CHANNELS: usize = 8;
/// At most this many characters in a channel's name.
pub const MAX_CHANNEL_NAME: usize = 64;

/// One channel of a schedule (`POST /v1/schedules` `channels[]`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChannelBody))]
pub struct NewChannel {
    /// The channel's name, unique in the schedule: 1 to 64 of `a-z`, `0-9`, `_`, `-`.
    pub name: String,
    /// The job kind it creates: `webhook` or `http`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::ops::api_enums::ChannelKindSchema))]
    pub kind: String,
    /// Target of a `webhook` channel.
    #[serde(default)]
    pub webhook: Option<WebhookTarget>,
    /// Not a channel kind of a plain schedule: mail goes to a topic's subscribers (an
    /// audience schedule, `"kind": "email", "topic": …`). Accepted here only to say so.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub email: Option<serde_json::Value>,
    /// The channel's payload (default: the schedule's `payload`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payload: Option<serde_json::Value>,
    /// The channel's retry policy (default: the schedule's `retry`, else the kind's).
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// The channel's concurrency limit (default: the schedule's `concurrency`).
    #[serde(default)]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// The channel kind's request part (`"http": {…}`): every other field, read by the kind
    /// that owns it; a field no channel kind owns is refused as unknown.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub parts: RequestParts,
}

/// Whether `name` is a valid channel name.
pub fn valid_channel_name(name: &str) -> bool {
    (1..=MAX_CHANNEL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

impl Kairos {
    /// Validate and store the targets of explicit channels. `schedule_retry` is the
    /// schedule's own policy, the default of each channel's.
    pub(super) async fn schedule_channels(
        &self,
        channels: &[NewChannel],
        schedule_retry: Option<&RetrySpec>,
    ) -> Result<Vec<ScheduleChannel>, OpsError> {
        if channels.is_empty() {
            return Err(OpsError::invalid(
                "channels",
                "must list 1 to 8 channels (or leave it out and give \"kind\")",
            ));
        }
        if channels.len() > MAX_CHANNELS {
            return Err(OpsError::invalid(
                "channels",
                format!("lists {} channels; at most {MAX_CHANNELS}", channels.len()),
            ));
        }
        // Names first: a bad or repeated name is reported before any target is stored.
        for (i, c) in channels.iter().enumerate() {
            if !valid_channel_name(&c.name) {
                return Err(OpsError::invalid(
                    format!("channels[{i}].name"),
                    format!(
                        "{:?} is not a channel name: 1 to {MAX_CHANNEL_NAME} of a-z, 0-9, _ and -",
                        c.name
                    ),
                ));
            }
            if channels[..i].iter().any(|o| o.name == c.name) {
                return Err(OpsError::invalid(
                    format!("channels[{i}].name"),
                    format!("{:?} is listed twice: channel names are unique", c.name),
                ));
            }
            match self.kinds.find(&c.kind) {
                Some(k) if k.is_channel() => {}
                Some(k) if k.delivers_to_topic() => {
                    return Err(OpsError::invalid(
                        format!("channels[{i}].kind"),
                        format!(
                            "mail goes to a topic's subscribers: create an audience schedule \
                             (\"kind\": {:?}, \"topic\": …) and list the channels on each \
                             subscription",
                            k.name()
                        ),
                    ));
                }
                _ => {
                    // The kind must exist at all; a known kind that is not a channel (a
                    // digest builds an artifact, it does not deliver) is refused too.
                    self.check_kind(Some(&c.kind))
                        .map_err(|e| e.under(&format!("channels[{i}]")))?;
                    let usable: Vec<String> = self
                        .kinds
                        .names()
                        .into_iter()
                        .filter(|k| self.kinds.get(k).is_channel())
                        .map(|k| format!("{k:?}"))
                        .collect();
                    return Err(OpsError::invalid(
                        format!("channels[{i}].kind"),
                        format!(
                            "{:?} is not a channel kind; use {}",
                            c.kind,
                            usable.join(" or ")
                        ),
                    ));
                }
            }
            if let Some(cc) = &c.concurrency {
                crate::concurrency::check(cc).map_err(|e| e.under(&format!("channels[{i}]")))?;
            }
            if c.email.is_some() {
                return Err(OpsError::invalid(
                    format!("channels[{i}].email"),
                    "mail goes to a topic's subscribers, not to a schedule's channel",
                ));
            }
        }
        let mut out = Vec::with_capacity(channels.len());
        for (i, c) in channels.iter().enumerate() {
            let at = format!("channels[{i}]");
            let kind = self.check_kind(Some(&c.kind)).map_err(|e| e.under(&at))?;
            let k = self.kinds.get(kind.as_str());
            let default = k.default_retry();
            let retry = c
                .retry
                .as_ref()
                .or(schedule_retry)
                .map(|r| r.to_policy(&default))
                .transpose()
                .map_err(|e| OpsError::from(e).under(&at))?;
            let payload = match &c.payload {
                Some(p) => Some(Self::check_payload(Some(p.clone())).map_err(|e| e.under(&at))?),
                None => None,
            };
            let endpoint_id = self
                .endpoint_for(&kind, c.webhook.as_ref())
                .await
                .map_err(|e| e.under(&at))?;
            let parts = KindRequest {
                payload: payload.as_ref(),
                parts: &c.parts,
                retry: retry.as_ref(),
                scope: RequestScope::Schedule,
            };
            // A kind with a request part of its own (an http channel's `http` definition)
            // stores its payload (which names the target; its secrets stay in
            // `http_targets`); the others keep the channel's `payload`, or none, meaning the
            // schedule's.
            let payload = if k.request_part().is_some() {
                Some(
                    k.request_payload(&self.env(), parts)
                        .await
                        .map_err(|e| e.under(&at))?,
                )
            } else {
                parts
                    .refuse_foreign(k.name(), None)
                    .map_err(|e| e.under(&at))?;
                payload
            };
            out.push(ScheduleChannel {
                name: c.name.clone(),
                kind,
                payload,
                endpoint_id,
                retry,
                concurrency: c.concurrency.clone(),
            });
        }
        Ok(out)
    }
}

impl Kairos {
    /// The definition of a schedule with explicit channels: `base` carries the clock, name and
    /// zone already validated; the rest comes from `req`.
    pub(super) async fn schedule_def_channels(
        &self,
        mut base: kairos_store::ScheduleCreate,
        req: &super::NewSchedule,
        channels: &[NewChannel],
        tz: chrono_tz::Tz,
    ) -> Result<(kairos_store::ScheduleCreate, Vec<String>), OpsError> {
        if req.kind.is_some() {
            return Err(OpsError::invalid(
                "channels",
                "give either \"kind\" (one channel) or \"channels\", not both",
            ));
        }
        // Targets belong to their channel; a top-level one would be silently unused.
        let parts = req.parts.iter().map(|(p, v)| (p.as_str(), !v.is_null()));
        let fields = [("webhook", req.webhook.is_some())]
            .into_iter()
            .chain(parts)
            .chain([("topic", req.topic.is_some())]);
        for (field, given) in fields {
            if given {
                return Err(OpsError::invalid(
                    field,
                    "not with \"channels\": give each channel its own target",
                ));
            }
        }
        if req.catch_up.as_ref().is_some_and(|c| !c.is_empty()) {
            // A catch-up re-runs a period whose product is missing; with several channels it
            // would re-send the ones that succeeded.
            return Err(OpsError::invalid(
                "catch_up",
                "is not available for schedules with channels",
            ));
        }
        let payload = Self::check_payload(req.payload.clone())?;
        let list = self.schedule_channels(channels, req.retry.as_ref()).await?;
        let next_fire_at = base.spec.next_at_or_after(tz, base.now);
        if next_fire_at.is_none() {
            return Err(OpsError::invalid(
                "at",
                "is in the past: the schedule would never fire",
            ));
        }
        // The row's own kind and endpoint are its first channel's, for readers that list
        // schedules by kind.
        base.kind = list[0].kind.clone();
        base.endpoint_id = list[0].endpoint_id.clone();
        base.payload = payload;
        base.channels = list;
        base.next_fire_at = next_fire_at;
        Ok((base, Vec::new()))
    }
}
