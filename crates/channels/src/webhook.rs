//! The webhook channel: one signed HTTP POST of a JSON body to an endpoint.
//!
//! Headers follow Standard Webhooks: `webhook-id` (the job id, identical on every retry so that
//! receivers can deduplicate), `webhook-timestamp` (Unix seconds of `now`) and
//! `webhook-signature` (see [`crate::signing`]). Only a 2xx answer is a delivery; redirects are
//! not followed; 410 Gone disables the endpoint; targets are checked by [`crate::ssrf`].

use crate::signing::{WebhookSecret, sign};
use crate::ssrf::{PrivateAddressError, PublicOnlyResolver, check_target, private_message};
use chrono::{DateTime, Utc};
use kairos_core::{ErrorClass, Failure, Outcome};
use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use std::error::Error as StdError;
use std::time::{Duration, SystemTime};
use url::Url;

/// Settings of a [`WebhookSender`]. Every field has a default; [`WebhookConfig::validate`]
/// names the field that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// The whole request, connection to last byte of the response excerpt. Default 10 s
    /// (S0-9); at most 5 minutes.
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
        // reqwest is built with `rustls-no-provider`: without a process-wide provider, building
        // a client panics. Installing fails harmlessly when one is already installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(config.user_agent.clone());
        if !config.allow_private_targets {
            builder = builder.dns_resolver(std::sync::Arc::new(PublicOnlyResolver));
        }
        let client = builder
            .build()
            .map_err(|e| crate::Error::client("could not build the webhook HTTP client", e))?;
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
    /// [`ErrorClass::from_http_status`] with `Retry-After` honoured up to the cap; connection
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
        let url = match Url::parse(url) {
            Ok(u) => u,
            Err(e) => return failed(Failure::permanent(format!("invalid webhook URL: {e}"))),
        };
        if let Err(e) = check_target(&url, self.config.allow_private_targets).await {
            return failed(e.to_failure());
        }
        self.post(url, secret, msg_id, now, body).await
    }

    /// The request itself, after the target check.
    async fn post(
        &self,
        url: Url,
        secret: &WebhookSecret,
        msg_id: &str,
        now: DateTime<Utc>,
        body: &[u8],
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
        let signature = sign(secret, msg_id, timestamp, body);
        let request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body.to_vec());
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failed(self.classify_error(&e)),
        };

        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, now, self.config.retry_after_cap));
        let excerpt = read_excerpt(&mut response, self.config.max_response_bytes).await;

        if (200..300).contains(&status) {
            return Outcome::Delivered {
                provider_id: None,
                status_code: Some(status),
                response: excerpt,
            };
        }
        let mut failure = match status {
            410 => {
                let mut f = Failure::permanent("endpoint answered 410 Gone; disabling it");
                f.disable_endpoint = true;
                f
            }
            300..=399 => Failure::permanent(format!(
                "endpoint answered a redirect ({status}); redirects are not followed, \
                 configure the final URL"
            )),
            _ => Failure::new(
                ErrorClass::from_http_status(status),
                format!("endpoint answered HTTP {status}"),
            ),
        };
        failure.status_code = Some(status);
        failure.response = excerpt;
        failure.retry_after = retry_after;
        failed(failure)
    }

    /// Turn a request error into a classified failure without the URL in its message.
    fn classify_error(&self, e: &reqwest::Error) -> Failure {
        if let Some(p) = find_source::<PrivateAddressError>(e) {
            return Failure::permanent(private_message(p.0));
        }
        if e.is_timeout() {
            return Failure::transient(format!(
                "request timed out after {:?}",
                self.config.timeout
            ));
        }
        if e.is_builder() {
            return Failure::permanent(format!("could not build the request: {}", root_cause(e)));
        }
        let io_kind = find_source::<std::io::Error>(e).map(|io| io.kind());
        let what = match io_kind {
            Some(std::io::ErrorKind::ConnectionRefused) => "connection refused".to_string(),
            Some(std::io::ErrorKind::ConnectionReset) => "connection reset".to_string(),
            Some(std::io::ErrorKind::ConnectionAborted) => "connection aborted".to_string(),
            _ if e.is_connect() => format!("could not connect: {}", root_cause(e)),
            _ => format!("request failed: {}", root_cause(e)),
        };
        Failure::transient(what)
    }
}

fn failed(f: Failure) -> Outcome {
    Outcome::Failed(f)
}

/// The first error of type `T` in `e`'s source chain (not `e` itself).
fn find_source<'a, T: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut cur = e.source();
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        cur = err.source();
    }
    None
}

/// The innermost cause's message: reqwest's own message includes the URL, inner ones do not.
fn root_cause(e: &(dyn StdError + 'static)) -> String {
    let mut last: &(dyn StdError + 'static) = e;
    while let Some(next) = last.source() {
        last = next;
    }
    if std::ptr::addr_eq(last, e) {
        "unknown error".to_string()
    } else {
        last.to_string()
    }
}

/// Read at most `max` bytes of the body (stopping early, so a huge body is not downloaded) and
/// return them as text cut at a UTF-8 boundary; `None` when empty. A read error keeps what was
/// read.
async fn read_excerpt(response: &mut reqwest::Response, max: usize) -> Option<String> {
    if max == 0 {
        return None;
    }
    let mut buf: Vec<u8> = Vec::new();
    while buf.len() < max {
        match response.chunk().await {
            Ok(Some(chunk)) => buf.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    let text = truncate_utf8(&buf, max);
    if text.is_empty() { None } else { Some(text) }
}

/// At most `max` bytes of `bytes` as a string, never splitting a UTF-8 character; invalid
/// sequences elsewhere become U+FFFD (which may make the result slightly longer).
fn truncate_utf8(bytes: &[u8], max: usize) -> String {
    let cut = &bytes[..bytes.len().min(max)];
    match std::str::from_utf8(cut) {
        Ok(s) => s.to_string(),
        // An incomplete character at the end only: drop it.
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&cut[..e.valid_up_to()]).into_owned()
        }
        Err(_) => {
            // Binary or mis-encoded: cut back to a character boundary of the lossy text.
            let lossy = String::from_utf8_lossy(cut);
            let mut end = lossy.len().min(max);
            while !lossy.is_char_boundary(end) {
                end -= 1;
            }
            lossy[..end].to_string()
        }
    }
}

/// Parse a `Retry-After` value — delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`) read relative to `now` — capped at `cap`. A date in the
/// past gives zero; anything unparsable gives `None`.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>, cap: Duration) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let delay = if value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for u64 is "very long": the cap applies.
        Duration::from_secs(value.parse::<u64>().unwrap_or(u64::MAX))
    } else {
        let when = httpdate::parse_http_date(value).ok()?;
        when.duration_since(SystemTime::from(now))
            .unwrap_or(Duration::ZERO)
    };
    Some(delay.min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2015, 10, 21, 7, 27, 0).unwrap()
    }
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn retry_after_delta_seconds() {
        assert_eq!(
            parse_retry_after("7", now(), HOUR),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after(" 0 ", now(), HOUR), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("86400", now(), HOUR), Some(HOUR));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now(), HOUR),
            Some(HOUR)
        );
    }

    #[test]
    fn retry_after_http_date_is_relative_to_now() {
        let v = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            parse_retry_after(v, now(), HOUR),
            Some(Duration::from_secs(60))
        );
        let past = "Wed, 21 Oct 2015 07:00:00 GMT";
        assert_eq!(parse_retry_after(past, now(), HOUR), Some(Duration::ZERO));
        let far = "Thu, 22 Oct 2015 07:28:00 GMT";
        assert_eq!(parse_retry_after(far, now(), HOUR), Some(HOUR));
    }

    #[test]
    fn retry_after_garbage_is_none() {
        for v in ["", "-5", "1.5", "soon", "Wed, 99 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(v, now(), HOUR), None, "{v:?}");
        }
    }

    #[test]
    fn excerpt_never_splits_a_character() {
        assert_eq!(truncate_utf8("héllo".as_bytes(), 2), "h");
        assert_eq!(truncate_utf8("héllo".as_bytes(), 3), "hé");
        assert_eq!(truncate_utf8(b"abc", 10), "abc");
        let binary = truncate_utf8(&[0xff, 0xfe, b'a', 0xff], 3);
        assert!(binary.len() <= 3, "{binary:?}");
    }

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
        let Outcome::Failed(f) = sender.post(url, &secret, "msg_1", now(), b"{}").await else {
            panic!("expected a failure");
        };
        assert_eq!(f.class, ErrorClass::Permanent, "{f:?}");
        assert!(
            f.message.contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"),
            "{f:?}"
        );
    }
}
