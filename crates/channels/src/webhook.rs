//! The webhook channel: one signed HTTP POST of a JSON body to an endpoint.
//!
//! Headers follow Standard Webhooks: `webhook-id` (the job id, identical on every retry so that
//! receivers can deduplicate), `webhook-timestamp` (Unix seconds of `now`) and
//! `webhook-signature` (see [`crate::signing`]). Only a 2xx answer is a delivery; redirects are
//! not followed; 410 Gone disables the endpoint; targets are checked by [`crate::ssrf`].

use crate::signing::{WebhookSecret, sign_all};
use crate::ssrf::check_target;
use crate::transport::{
    build_client, call_span, read_excerpt, record_call, request_failure, retry_after_of,
    status_failure, traceparent,
};
use chrono::{DateTime, Utc};
use kairos_core::{Failure, Outcome};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use std::time::Duration;
use tracing::Instrument;
use url::Url;

pub use crate::transport::parse_retry_after;

/// Settings of a [`WebhookSender`]. Every field has a default; [`WebhookConfig::validate`]
/// names the field that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// The whole request, connection to last byte of the response excerpt. Default 10 s
    ///; at most 5 minutes.
    pub timeout: Duration,
    /// Allow targets on loopback, private and link-local networks (the
    /// `KAIROS_ALLOW_PRIVATE_TARGETS=1` setting). Default `false`.
    pub allow_private_targets: bool,
    /// The `user-agent` header. Default `kairos-webhooks/<version>`.
    pub user_agent: String,
    /// How much of a response body is kept as the attempt's excerpt. Default 4096 bytes; at
    /// most 1 MiB.
    pub max_response_bytes: usize,
    /// The longest `Retry-After` honoured. Default 1 hour.
    pub retry_after_cap: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            timeout: Duration::from_secs(10),
            allow_private_targets: false,
            user_agent: concat!("kairos-webhooks/", env!("CARGO_PKG_VERSION")).to_string(),
            max_response_bytes: 4096,
            retry_after_cap: Duration::from_secs(3600),
        }
    }
}

impl WebhookConfig {
    /// The longest accepted `timeout`.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(300);
    /// The largest accepted `max_response_bytes`.
    pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

    /// Check every field; the error names the field and the reason.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.timeout.is_zero() || self.timeout > Self::MAX_TIMEOUT {
            return Err(Error::invalid(
                "timeout",
                format!("must be more than 0 and at most {:?}", Self::MAX_TIMEOUT),
            ));
        }
        if self.user_agent.trim().is_empty() || HeaderValue::from_str(&self.user_agent).is_err() {
            return Err(Error::invalid(
                "user_agent",
                "must be a non-empty header value (visible ASCII)",
            ));
        }
        if self.max_response_bytes > Self::MAX_RESPONSE_BYTES {
            return Err(Error::invalid(
                "max_response_bytes",
                format!("must be at most {}", Self::MAX_RESPONSE_BYTES),
            ));
        }
        if self.retry_after_cap.is_zero() {
            return Err(Error::invalid("retry_after_cap", "must be more than 0"));
        }
        Ok(())
    }
}

/// Sends webhooks over one shared HTTP client (connection reuse across endpoints).
#[derive(Debug, Clone)]
pub struct WebhookSender {
    client: reqwest::Client,
    config: WebhookConfig,
}

impl WebhookSender {
    /// Validate `config` and build the client: no redirects, no proxies, the configured
    /// timeout and user agent, and — unless private targets are allowed — a resolver that
    /// refuses private addresses at connection time. Installs the rustls `ring` provider if
    /// none is installed yet.
    pub fn new(config: WebhookConfig) -> Result<Self, crate::Error> {
        config.validate()?;
        let client = build_client(
            &config.user_agent,
            Some(config.timeout),
            config.allow_private_targets,
            "webhook",
        )?;
        Ok(WebhookSender { client, config })
    }

    /// The configuration in use.
    pub fn config(&self) -> &WebhookConfig {
        &self.config
    }

    /// POST `body` (JSON) to `url`, signed with `secret`, as message `msg_id` at `now`.
    ///
    /// Never panics and never returns an error: 2xx is `Delivered` (with the status and a
    /// response excerpt); anything else is `Failed` with a class — 410 permanent with
    /// `disable_endpoint`, 3xx permanent (redirects are not followed), other statuses by
    /// [`kairos_core::ErrorClass::from_http_status`] with `Retry-After` honoured up to the cap; connection
    /// refused, reset and timeouts transient; invalid or private targets permanent. Messages
    /// never contain the secret or the URL (which may carry credentials).
    pub async fn send(
        &self,
        url: &str,
        secret: &WebhookSecret,
        msg_id: &str,
        now: DateTime<Utc>,
        body: &[u8],
    ) -> Outcome {
        self.send_signed(url, &[secret], msg_id, now, body).await
    }

    /// [`send`](Self::send), signed by every secret of `secrets` (during a key rotation: the
    /// new one and the previous one), each signature in `webhook-signature`, space-separated.
    /// An empty `secrets` is a permanent failure (nothing is sent unsigned).
    pub async fn send_signed(
        &self,
        url: &str,
        secrets: &[&WebhookSecret],
        msg_id: &str,
        now: DateTime<Utc>,
        body: &[u8],
    ) -> Outcome {
        if secrets.is_empty() {
            return failed(Failure::permanent("no webhook secret to sign with"));
        }
        let url = match Url::parse(url) {
            Ok(u) => u,
            Err(e) => return failed(Failure::permanent(format!("invalid webhook URL: {e}"))),
        };
        if let Err(e) = check_target(&url, self.config.allow_private_targets).await {
            return failed(e.to_failure());
        }
        let span = call_span("webhook", "POST");
        let outcome = self
            .post(url, secrets, msg_id, now, body, traceparent(&span))
            .instrument(span.clone())
            .await;
        record_call(&span, &outcome);
        outcome
    }

    /// The request itself, after the target check.
    async fn post(
        &self,
        url: Url,
        secrets: &[&WebhookSecret],
        msg_id: &str,
        now: DateTime<Utc>,
        body: &[u8],
        trace: Option<HeaderValue>,
    ) -> Outcome {
        let id = match HeaderValue::from_str(msg_id) {
            Ok(v) => v,
            Err(_) => {
                return failed(Failure::permanent(
                    "invalid webhook id: not a valid header value",
                ));
            }
        };
        let timestamp = now.timestamp();
        let signature = sign_all(secrets, msg_id, timestamp, body);
        let mut request = self.client.post(url);
        if let Some(tp) = trace {
            request = request.header("traceparent", tp);
        }
        let request = request
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body.to_vec());
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failed(request_failure(&e, self.config.timeout)),
        };

        let status = response.status().as_u16();
        let retry_after = retry_after_of(response.headers(), now, self.config.retry_after_cap);
        let excerpt = read_excerpt(&mut response, self.config.max_response_bytes).await;

        if (200..300).contains(&status) {
            return Outcome::Delivered {
                provider_id: None,
                status_code: Some(status),
                response: excerpt,
            };
        }
        let mut failure = if status == 410 {
            let mut f = Failure::permanent("endpoint answered 410 Gone; disabling it");
            f.disable_endpoint = true;
            f.status_code = Some(status);
            f
        } else {
            status_failure("endpoint", status)
        };
        failure.response = excerpt;
        failure.retry_after = retry_after;
        failed(failure)
    }
}

fn failed(f: Failure) -> Outcome {
    Outcome::Failed(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use kairos_core::ErrorClass;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2015, 10, 21, 7, 27, 0).unwrap()
    }
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn config_defaults_and_validation() {
        let c = WebhookConfig::default();
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert!(!c.allow_private_targets);
        assert_eq!(c.max_response_bytes, 4096);
        assert_eq!(c.retry_after_cap, HOUR);
        assert_eq!(c.validate(), Ok(()));
        let bad = |f: fn(&mut WebhookConfig)| {
            let mut c = WebhookConfig::default();
            f(&mut c);
            c.validate().unwrap_err().field().to_string()
        };
        assert_eq!(bad(|c| c.timeout = Duration::ZERO), "timeout");
        assert_eq!(bad(|c| c.timeout = Duration::from_secs(301)), "timeout");
        assert_eq!(bad(|c| c.user_agent = String::new()), "user_agent");
        assert_eq!(bad(|c| c.user_agent = "a\nb".into()), "user_agent");
        assert_eq!(
            bad(|c| c.max_response_bytes = 2 << 20),
            "max_response_bytes"
        );
        assert_eq!(
            bad(|c| c.retry_after_cap = Duration::ZERO),
            "retry_after_cap"
        );
        let e = WebhookSender::new(WebhookConfig {
            timeout: Duration::ZERO,
            ..c
        })
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidConfig);
        assert!(e.to_string().contains("timeout"), "{e}");
    }

    /// DNS rebinding: even when the pre-send check is bypassed (as if the name had resolved
    /// publicly a moment before), the client's own resolver refuses a private answer.
    #[tokio::test]
    async fn resolver_refuses_private_answer_at_connect_time() {
        let sender = WebhookSender::new(WebhookConfig::default()).unwrap();
        let url = Url::parse("http://localhost:9/hook").unwrap();
        let secret = WebhookSecret::generate([1; 32]);
        let Outcome::Failed(f) = sender
            .post(url, &[&secret], "msg_1", now(), b"{}", None)
            .await
        else {
            panic!("expected a failure");
        };
        assert_eq!(f.class, ErrorClass::Permanent, "{f:?}");
        assert!(
            f.message.contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"),
            "{f:?}"
        );
    }
}
