//! Webhook endpoints (issue 13, issue 15 §3): list them with their disabled state, last
//! failure and health, enable one again after it was disabled (by an HTTP 410 or a failure
//! streak), and rotate its secret with a window during which both secrets sign. Shared by the
//! API, the CLI and `/admin`.
//!
//! An endpoint is the (URL, secret) pair jobs post to; creating a job or schedule with the
//! same pair reuses the row, **disabled or not**: a disabled endpoint stays disabled until it
//! is enabled here, and the responses that name it show its `disabled_at`.

use super::Kairos;
use crate::error::OpsError;
use chrono::{DateTime, Utc};
use kairos_channels::signing::WebhookSecret;
use kairos_store::{
    Endpoint, EndpointEnable, EndpointHealthCounts, EndpointList, EndpointSecretRotate,
    MAX_ROTATION_WINDOW,
};
use serde::Deserialize;
use std::collections::HashMap;

/// The default rotation window: one day.
pub const DEFAULT_ROTATION_WINDOW_SECS: i64 = 86_400;

/// An endpoint with its sends and failed sends over the last 24 h (whole hours: the hour
/// 24 h ago is counted from its start).
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointStatus {
    /// The endpoint (its health streak included).
    pub endpoint: Endpoint,
    /// Sends in the last 24 h.
    pub attempts_24h: i64,
    /// Failed sends in the last 24 h.
    pub failures_24h: i64,
    /// Its limits and the deliveries waiting on them.
    pub limits: kairos_store::flow::EndpointLimits,
}

impl EndpointStatus {
    /// failures / attempts over 24 h; `None` without attempts.
    pub fn failure_rate_24h(&self) -> Option<f64> {
        (self.attempts_24h > 0).then(|| self.failures_24h as f64 / self.attempts_24h as f64)
    }
}

/// `POST /v1/endpoints/{id}/rotate` and `kairos endpoint rotate`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RotateBody))]
#[serde(deny_unknown_fields)]
pub struct SecretRotation {
    /// The new `whsec_…` secret (24 to 64 bytes after the prefix, base64). Absent: one is
    /// generated and returned once in the response.
    #[serde(default)]
    pub secret: Option<String>,
    /// How long the current secret keeps signing beside the new one, in seconds (0 to
    /// 2592000 = 30 days; default 86400). 0 ends the old secret at once.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 2592000))]
    pub window_secs: Option<i64>,
}

/// What a rotation did.
#[derive(Debug, Clone)]
pub struct Rotated {
    /// The endpoint after the rotation.
    pub endpoint: Endpoint,
    /// The new secret when it was generated (shown once); `None` when the caller gave it.
    pub generated_secret: Option<String>,
}

impl Kairos {
    /// Endpoints by id after `after`, at most `limit` (1 to 1000, default 100); with
    /// `disabled`, only the disabled (`true`) or the enabled (`false`) ones.
    pub async fn endpoint_list(
        &self,
        after: Option<String>,
        disabled: Option<bool>,
        limit: Option<i64>,
    ) -> Result<Vec<Endpoint>, OpsError> {
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be 1 to 1000"));
        }
        Ok(self
            .store
            .endpoint_list(EndpointList {
                after,
                disabled,
                limit: Some(limit.unwrap_or(100)),
            })
            .await?)
    }

    /// An endpoint by id.
    pub async fn endpoint_get(&self, id: &str) -> Result<Endpoint, OpsError> {
        self.store
            .endpoint_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("endpoint", id))
    }

    /// Enable an endpoint again: later jobs to it are sent. Jobs skipped (`endpoint_disabled`)
    /// while it was disabled stay skipped; retry them one by one if they are still wanted.
    /// Enabling an enabled endpoint changes nothing.
    pub async fn endpoint_enable(&self, id: &str) -> Result<Endpoint, OpsError> {
        let ep = self
            .store
            .endpoint_enable(EndpointEnable { id: id.to_string() })
            .await?
            .ok_or_else(|| OpsError::not_found("endpoint", id))?;
        tracing::info!(endpoint_id = %ep.id, "endpoint enabled");
        Ok(ep)
    }

    /// `endpoints` with their 24 h counts at `now`.
    pub async fn endpoint_statuses(
        &self,
        endpoints: Vec<Endpoint>,
        now: DateTime<Utc>,
    ) -> Result<Vec<EndpointStatus>, OpsError> {
        let mut limits: HashMap<String, kairos_store::flow::EndpointLimits> = self
            .store
            .endpoint_limits_list(endpoints.iter().map(|e| e.id.clone()).collect())
            .await?
            .into_iter()
            .map(|l| (l.endpoint_id.clone(), l))
            .collect();
        let counts: HashMap<String, (i64, i64)> = self
            .store
            .endpoint_health_counts(EndpointHealthCounts {
                ids: endpoints.iter().map(|e| e.id.clone()).collect(),
                since: now - chrono::Duration::hours(24),
            })
            .await?
            .into_iter()
            .map(|c| (c.endpoint_id, (c.attempts, c.failures)))
            .collect();
        Ok(endpoints
            .into_iter()
            .map(|e| {
                let (attempts_24h, failures_24h) = counts.get(&e.id).copied().unwrap_or((0, 0));
                EndpointStatus {
                    limits: limits.remove(&e.id).unwrap_or_else(|| {
                        kairos_store::flow::EndpointLimits {
                            endpoint_id: e.id.clone(),
                            rate_limit: None,
                            max_in_flight: None,
                            waiting_rate_limit: 0,
                            waiting_in_flight: 0,
                        }
                    }),
                    endpoint: e,
                    attempts_24h,
                    failures_24h,
                }
            })
            .collect())
    }

    /// One endpoint with its 24 h counts.
    pub async fn endpoint_status(&self, id: &str) -> Result<EndpointStatus, OpsError> {
        let ep = self.endpoint_get(id).await?;
        let now = self.clock.now();
        let mut v = self.endpoint_statuses(vec![ep], now).await?;
        v.pop().ok_or_else(|| OpsError::not_found("endpoint", id))
    }

    /// Rotate an endpoint's secret: `r.secret` (or a generated one) signs from now on, and
    /// the current secret keeps signing beside it for `r.window_secs` (default one day, at
    /// most 30 days). Bad input is an error naming the field and changes nothing; an unknown
    /// id is not found; a new secret that another endpoint with the same URL already has is a
    /// conflict (endpoints are unique on URL and secret).
    pub async fn endpoint_rotate(&self, id: &str, r: SecretRotation) -> Result<Rotated, OpsError> {
        let window = r.window_secs.unwrap_or(DEFAULT_ROTATION_WINDOW_SECS);
        let max = MAX_ROTATION_WINDOW.as_secs() as i64;
        if !(0..=max).contains(&window) {
            return Err(OpsError::invalid(
                "window_secs",
                format!("must be 0 to {max} seconds (30 days)"),
            ));
        }
        let (secret, generated) = match r.secret {
            Some(s) => {
                WebhookSecret::parse(&s).map_err(|e| OpsError::invalid("secret", e.reason()))?;
                (s.trim().to_string(), false)
            }
            None => (
                WebhookSecret::generate(rand::random::<[u8; 32]>()).expose_whsec(),
                true,
            ),
        };
        let current = self.endpoint_get(id).await?;
        if current.secret == secret {
            return Err(OpsError::invalid(
                "secret",
                "is the endpoint's current secret; give a new one (or none to generate one)",
            ));
        }
        let now = self.clock.now();
        let until = now + chrono::Duration::seconds(window);
        let ep = self
            .store
            .endpoint_secret_rotate(EndpointSecretRotate {
                id: id.to_string(),
                secret: secret.clone(),
                previous_expires_at: until,
            })
            .await
            .map_err(|e| match e.kind() {
                kairos_store::ErrorKind::Conflict => OpsError::conflict(
                    "another endpoint already has this URL and secret; choose another secret",
                ),
                _ => e.into(),
            })?
            .ok_or_else(|| OpsError::not_found("endpoint", id))?;
        tracing::info!(endpoint_id = %ep.id, window_secs = window, "endpoint secret rotated");
        Ok(Rotated {
            endpoint: ep,
            generated_secret: generated.then_some(secret),
        })
    }
}

/// The largest `rate_limit.per_second` and `max_in_flight`.
pub const MAX_LIMIT: i64 = 10_000;

/// `PUT /v1/endpoints/{id}/limits`: a field left out means no limit of that kind.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = EndpointLimitsBody))]
#[serde(deny_unknown_fields)]
pub struct EndpointLimitsBody {
    /// Deliveries per second, with a burst: `{"per_second": 20, "burst": 20}`.
    #[serde(default)]
    pub rate_limit: Option<RateLimitBody>,
    /// Deliveries in flight at once (1 to 10000).
    #[serde(default)]
    pub max_in_flight: Option<i64>,
}

/// A rate limit: a token bucket refilled at `per_second` up to `burst`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RateLimitBody))]
#[serde(deny_unknown_fields)]
pub struct RateLimitBody {
    /// Deliveries per second (1 to 10000).
    pub per_second: i64,
    /// How many may go at once after a quiet spell (1 to 100000; default `per_second`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
}

/// Check a rate limit and an in-flight limit (an endpoint's, or an `http` object's with
/// `prefix` `"http."`); an error names the field (`http.rate_limit.per_second`).
pub fn check_limits(
    prefix: &str,
    rate_limit: Option<&RateLimitBody>,
    max_in_flight: Option<i64>,
) -> Result<(Option<kairos_store::flow::RateLimit>, Option<u32>), OpsError> {
    let within = |field: &str, v: i64, most: i64| {
        if (1..=most).contains(&v) {
            Ok(u32::try_from(v).unwrap_or(u32::MAX))
        } else {
            Err(OpsError::invalid(
                format!("{prefix}{field}"),
                format!("must be between 1 and {most}"),
            ))
        }
    };
    let rate_limit = match rate_limit {
        Some(r) => {
            let per_second = within("rate_limit.per_second", r.per_second, MAX_LIMIT)?;
            let burst = within(
                "rate_limit.burst",
                r.burst.unwrap_or(r.per_second),
                10 * MAX_LIMIT,
            )?;
            Some(kairos_store::flow::RateLimit { per_second, burst })
        }
        None => None,
    };
    let max_in_flight = max_in_flight
        .map(|m| within("max_in_flight", m, MAX_LIMIT))
        .transpose()?;
    Ok((rate_limit, max_in_flight))
}

impl Kairos {
    /// The limits of the origin `origin` (those of the `http` jobs calling it).
    pub async fn host_limits(
        &self,
        origin: &str,
    ) -> Result<kairos_store::flow::HostLimits, OpsError> {
        let mut l = self
            .store
            .host_limits_list(vec![origin.to_string()])
            .await?;
        l.pop()
            .ok_or_else(|| OpsError::not_found("host limits", origin))
    }

    /// Set an endpoint's limits (`PUT /v1/endpoints/{id}/limits`): they hold for its
    /// deliveries on every node from their next claim. A bad value is an error naming the
    /// field, and nothing changes.
    pub async fn endpoint_limits_set(
        &self,
        id: &str,
        body: EndpointLimitsBody,
    ) -> Result<kairos_store::flow::EndpointLimits, OpsError> {
        let (rate_limit, max_in_flight) =
            check_limits("", body.rate_limit.as_ref(), body.max_in_flight)?;
        let limits = self
            .store
            .endpoint_limits_set(kairos_store::flow::EndpointLimitsSet {
                endpoint_id: id.to_string(),
                rate_limit,
                max_in_flight,
                now: self.clock.now(),
            })
            .await?
            .ok_or_else(|| OpsError::not_found("endpoint", id))?;
        tracing::info!(endpoint_id = %id, "endpoint limits set");
        Ok(limits)
    }
}
