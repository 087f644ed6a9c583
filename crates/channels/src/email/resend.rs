//! The `resend` transport: Resend's HTTP API (`POST {api}/emails`).
//!
//! - The job id is the `Idempotency-Key`: a retry after "Resend accepted but we did not
//!   record it" is answered with the first send's result, never a second mail.
//! - Pacing: at most `requests_per_second` (Resend's default limit is 2/s), and when an answer
//!   says `ratelimit-remaining: 0` the next request waits `ratelimit-reset` seconds.
//! - 429 `rate_limit_exceeded`: [`ErrorClass::RateLimited`] with the `retry-after` delay, so
//!   the executor retries without spending an attempt.
//! - 429 `daily_quota_exceeded` / `monthly_quota_exceeded`: the transport pauses (every send
//!   answers rate-limited at once, without calling Resend) until `retry-after` or a default
//!   pause, and a warning is logged.
//! - 409 `invalid_idempotent_request` (same key, different payload) is permanent;
//!   `concurrent_idempotent_requests` is transient.
//!
//! Resend's error messages can quote the address, so only the error `name` and the status are
//! recorded.

use super::{EmailMessage, SendReport};
use kairos_core::{ErrorClass, Failure, Outcome};
use reqwest::header::HeaderMap;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Resend's API.
pub const DEFAULT_API_URL: &str = "https://api.resend.com";

/// Resend settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ResendConfig {
    /// Base URL (`KAIROS_RESEND_API_URL`, default [`DEFAULT_API_URL`]).
    pub api_url: String,
    /// API key (`KAIROS_RESEND_API_KEY`).
    pub api_key: String,
    /// Timeout of one request. Default 10 s.
    pub timeout: Duration,
    /// Most requests per second from this node. Default 2 (Resend's default limit).
    pub requests_per_second: f64,
    /// How long a quota code pauses the transport when no `retry-after` says. Default 1 h.
    pub quota_pause: Duration,
}

impl ResendConfig {
    /// Settings with defaults for `api_key`.
    pub fn new(api_key: impl Into<String>) -> Self {
        ResendConfig {
            api_url: DEFAULT_API_URL.into(),
            api_key: api_key.into(),
            timeout: Duration::from_secs(10),
            requests_per_second: 2.0,
            quota_pause: Duration::from_secs(3600),
        }
    }
}

#[derive(Debug)]
struct Pace {
    next_at: Instant,
    paused_until: Option<Instant>,
}

/// Sends through Resend. Cheap to clone; clones share the pacing.
#[derive(Clone)]
pub struct ResendSender {
    cfg: Arc<ResendConfig>,
    client: reqwest::Client,
    pace: Arc<Mutex<Pace>>,
}

impl std::fmt::Debug for ResendSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResendSender")
            .field("api_url", &self.cfg.api_url)
            .finish_non_exhaustive()
    }
}

fn header_secs(h: &HeaderMap, name: &str) -> Option<Duration> {
    let v = h.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
    (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v.min(86_400.0 * 31.0)))
}

impl ResendSender {
    /// A sender. The key must be set; the URL must be http(s).
    pub fn new(cfg: ResendConfig) -> Result<Self, crate::Error> {
        use kairos_core::Error as E;
        if cfg.api_key.trim().is_empty() {
            return Err(
                E::invalid("resend_api_key", "is required for the resend transport").into(),
            );
        }
        if !(cfg.api_url.starts_with("http://") || cfg.api_url.starts_with("https://")) {
            return Err(E::invalid("resend_api_url", "must be an http:// or https:// URL").into());
        }
        if cfg.requests_per_second.is_nan() || cfg.requests_per_second <= 0.0 {
            return Err(E::invalid("resend.requests_per_second", "must be more than 0").into());
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .build()
            .map_err(|e| crate::Error::client("building the Resend client failed", e))?;
        Ok(ResendSender {
            cfg: Arc::new(cfg),
            client,
            pace: Arc::new(Mutex::new(Pace {
                next_at: Instant::now(),
                paused_until: None,
            })),
        })
    }

    /// Timeout of one send, including the longest pacing wait we accept inside it.
    pub fn timeout(&self) -> Duration {
        self.cfg.timeout + Duration::from_secs(5)
    }

    /// Wait for this request's slot; `Err(wait)` when the transport is paused.
    async fn take_slot(&self) -> Result<(), Duration> {
        let at = {
            let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if let Some(until) = p.paused_until {
                if until > now {
                    return Err(until - now);
                }
                p.paused_until = None;
            }
            let at = p.next_at.max(now);
            p.next_at = at + Duration::from_secs_f64(1.0 / self.cfg.requests_per_second);
            at
        };
        // A wait longer than the send's own budget is better spent as a rate-limited retry.
        let wait = at.saturating_duration_since(Instant::now());
        if wait > self.cfg.timeout {
            return Err(wait);
        }
        tokio::time::sleep_until(at).await;
        Ok(())
    }

    fn push_back(&self, d: Duration) {
        let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        p.next_at = p.next_at.max(Instant::now() + d);
    }

    fn pause(&self, d: Duration) {
        let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        p.paused_until = Some(Instant::now() + d);
    }

    /// The request body.
    pub fn body(m: &EmailMessage) -> serde_json::Value {
        let headers: serde_json::Map<String, serde_json::Value> = m
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let tags: Vec<_> = m
            .tags
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        let mut b = json!({
            "from": m.from,
            "to": [m.to],
            "subject": m.subject,
            "headers": headers,
            "tags": tags,
        });
        if let Some(h) = &m.html {
            b["html"] = json!(h);
        }
        if let Some(t) = &m.text {
            b["text"] = json!(t);
        }
        b
    }

    /// Send one message.
    pub async fn send(&self, m: &EmailMessage) -> SendReport {
        if let Err(wait) = self.take_slot().await {
            let mut f = Failure::new(
                ErrorClass::RateLimited,
                "resend: paced (rate limit or quota)",
            );
            f.retry_after = Some(wait);
            return SendReport::failed(f);
        }
        let url = format!("{}/emails", self.cfg.api_url.trim_end_matches('/'));
        let resp = self
            .client
            .post(url)
            .bearer_auth(&self.cfg.api_key)
            .header("Idempotency-Key", &m.id)
            .json(&Self::body(m))
            .send()
            .await;
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                let what = if e.is_timeout() {
                    "resend: timeout"
                } else {
                    "resend: connection failed"
                };
                return SendReport::failed(Failure::transient(what));
            }
        };
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        if headers
            .get("ratelimit-remaining")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() == "0")
            && let Some(reset) = header_secs(&headers, "ratelimit-reset")
        {
            self.push_back(reset);
        }
        let body: serde_json::Value = resp.json().await.unwrap_or(serde_json::Value::Null);
        if (200..300).contains(&status) {
            return SendReport::of(Outcome::Delivered {
                provider_id: body["id"].as_str().map(str::to_string),
                status_code: Some(status),
                response: Some(json!({"id": body["id"]}).to_string()),
            });
        }
        let name = body["name"].as_str().unwrap_or("").to_string();
        let retry_after = header_secs(&headers, "retry-after");
        let mut f = match (status, name.as_str()) {
            (429, "daily_quota_exceeded" | "monthly_quota_exceeded") => {
                let pause = retry_after.unwrap_or(self.cfg.quota_pause);
                self.pause(pause);
                tracing::warn!(code = %name, pause_secs = pause.as_secs(),
                    "resend quota exceeded: the email channel is paused");
                let mut f = Failure::new(
                    ErrorClass::RateLimited,
                    format!("resend 429 {name}: paused"),
                );
                f.retry_after = Some(pause);
                f
            }
            (429, _) => {
                let wait = retry_after.unwrap_or(Duration::from_secs(1));
                self.push_back(wait);
                let mut f = Failure::new(ErrorClass::RateLimited, format!("resend 429 {name}"));
                f.retry_after = Some(wait);
                f
            }
            (409, "concurrent_idempotent_requests") => {
                let mut f = Failure::transient(format!("resend 409 {name}"));
                f.retry_after = Some(retry_after.unwrap_or(Duration::from_secs(1)));
                f
            }
            (409, _) => Failure::permanent(format!("resend 409 {name}")),
            _ => {
                let mut f = Failure::new(
                    ErrorClass::from_http_status(status),
                    format!("resend {status} {name}"),
                );
                f.retry_after = retry_after;
                f
            }
        };
        f.status_code = Some(status);
        f.response = (!name.is_empty()).then(|| json!({"name": name}).to_string());
        SendReport::failed(f)
    }
}
