//! The `http` channel: one HTTP call of a URL on a schedule — the seed-004 pattern of a clock
//! calling a route — with a method, headers, a body and an optional bearer token or Standard
//! Webhooks signature.
//!
//! Only a 2xx answer is a success: anything else is a failure with its status and a body
//! excerpt, classified by the shared table (see [`crate::transport`]), never a logged success.
//! Every call has a hard timeout (2 minutes unless the job says otherwise) that turns a
//! silent hang into a transient failure. Targets are checked by [`crate::ssrf`] as webhooks are.

use crate::signing::{WebhookSecret, sign};
use crate::ssrf::check_target;
use crate::transport::{
    build_client, call_span, read_excerpt, record_call, request_failure, retry_after_of,
    status_failure, traceparent,
};
use chrono::{DateTime, Utc};
use kairos_core::{Failure, Outcome};
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use std::collections::BTreeMap;
use std::time::Duration;
use tracing::Instrument;
use url::Url;

/// Settings of an [`HttpCaller`]. Every field has a default; [`HttpCallConfig::validate`]
/// names the field that is wrong. The timeout is per call ([`HttpCall::timeout`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCallConfig {
    /// Allow targets on loopback, private and link-local networks (the
    /// `KAIROS_ALLOW_PRIVATE_TARGETS=1` setting). Default `false`.
    pub allow_private_targets: bool,
    /// The `user-agent` header unless the call sets one. Default `kairos-http/<version>`.
    pub user_agent: String,
    /// How much of a response body is kept as the attempt's excerpt. Default 4096 bytes; at
    /// most 1 MiB.
    pub max_response_bytes: usize,
    /// The longest `Retry-After` read from an answer (the job's retry policy caps it again).
    /// Default 1 hour.
    pub retry_after_cap: Duration,
}

impl Default for HttpCallConfig {
    fn default() -> Self {
        HttpCallConfig {
            allow_private_targets: false,
            user_agent: concat!("kairos-http/", env!("CARGO_PKG_VERSION")).to_string(),
            max_response_bytes: 4096,
            retry_after_cap: Duration::from_secs(3600),
        }
    }
}

impl HttpCallConfig {
    /// The largest accepted `max_response_bytes`.
    pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

    /// Check every field; the error names the field and the reason.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
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

/// How a call authenticates.
#[derive(Debug, Clone, Copy)]
pub enum HttpCallAuth<'a> {
    /// Only the headers given.
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(&'a str),
    /// Standard Webhooks headers (`webhook-id` = the message id, `webhook-timestamp`,
    /// `webhook-signature`) signed over the body.
    Signature(&'a WebhookSecret),
}

/// One call.
#[derive(Debug, Clone)]
pub struct HttpCall<'a> {
    /// `http://` or `https://` URL.
    pub url: &'a str,
    /// Method name (`GET`, `POST`, …).
    pub method: &'a str,
    /// Request headers.
    pub headers: &'a BTreeMap<String, String>,
    /// Request body.
    pub body: Option<&'a [u8]>,
    /// Hard limit of the whole call, connection to the last byte of the excerpt.
    pub timeout: Duration,
    /// Authentication.
    pub auth: HttpCallAuth<'a>,
}

/// Check a method name and headers as given by a user; the error names the field
/// (`http.method`, `http.headers.<name>`).
pub fn check_request_parts(
    method: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(), kairos_core::Error> {
    use kairos_core::Error;
    if method.is_empty() || Method::from_bytes(method.as_bytes()).is_err() {
        return Err(Error::invalid(
            "http.method",
            format!("{method:?} is not an HTTP method like \"GET\" or \"POST\""),
        ));
    }
    if !ALLOWED_METHODS.contains(&method) {
        return Err(Error::invalid(
            "http.method",
            format!(
                "{method:?} is not allowed: use one of {}",
                ALLOWED_METHODS.join(", ")
            ),
        ));
    }
    for (name, value) in headers {
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(Error::invalid(
                format!("http.headers.{name}"),
                "is not a valid header name",
            ));
        }
        if is_framing_header(name) {
            return Err(Error::invalid(
                format!("http.headers.{name}"),
                "is a framing or hop-by-hop header, which kairos sets itself: remove it",
            ));
        }
        if HeaderValue::from_str(value).is_err() {
            return Err(Error::invalid(
                format!("http.headers.{name}"),
                "is not a valid header value (visible ASCII, no line breaks)",
            ));
        }
    }
    Ok(())
}

/// The methods an `http` job may use (`CONNECT`, `TRACE` and made-up methods are refused).
pub const ALLOWED_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Headers that frame the message or concern only one hop (RFC 9110 §7.6.1, RFC 9112): the
/// HTTP client sets them from the URL and the body, and one given by a user would redirect the
/// request to another virtual host (`host`) or desynchronise the body (`content-length`,
/// `transfer-encoding`).
const FRAMING_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "trailer",
    "upgrade",
    "keep-alive",
];

/// Whether `name` (any case) is a framing or hop-by-hop header, `proxy-*` included.
pub fn is_framing_header(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    FRAMING_HEADERS.contains(&lower.as_str()) || lower.starts_with("proxy-")
}

/// Makes HTTP calls over one shared client (connection reuse across targets).
#[derive(Debug, Clone)]
pub struct HttpCaller {
    client: reqwest::Client,
    config: HttpCallConfig,
}

impl HttpCaller {
    /// Validate `config` and build the client (no redirects, no proxies, the SSRF-safe
    /// resolver unless private targets are allowed; see [`crate::transport`]).
    pub fn new(config: HttpCallConfig) -> Result<Self, crate::Error> {
        config.validate()?;
        let client = build_client(
            &config.user_agent,
            None,
            config.allow_private_targets,
            "http",
        )?;
        Ok(HttpCaller { client, config })
    }

    /// The configuration in use.
    pub fn config(&self) -> &HttpCallConfig {
        &self.config
    }

    /// Make `call` as message `msg_id` (the job id: the `webhook-id` of signed calls) at `now`.
    ///
    /// Never panics and never returns an error: 2xx is `Delivered` with the status and a
    /// response excerpt; anything else is `Failed` with its status, excerpt and class (3xx and
    /// 4xx but 408/429 permanent, 408/429/5xx transient, `Retry-After` read); a timeout,
    /// refused or reset connection is transient; an invalid or private target permanent.
    /// Messages never contain the URL, the headers or a secret.
    pub async fn call(&self, call: &HttpCall<'_>, msg_id: &str, now: DateTime<Utc>) -> Outcome {
        let url = match Url::parse(call.url) {
            Ok(u) => u,
            Err(e) => return failed(Failure::permanent(format!("invalid URL: {e}"))),
        };
        let span = call_span("http", call.method);
        let request = match self.request(url.clone(), call, msg_id, now, traceparent(&span)) {
            Ok(r) => r,
            Err(f) => return failed(f),
        };
        // The timeout covers the name lookup of the target check and the excerpt too: a slow
        // resolver, or a server that sends headers and then trickles the body, must not hold
        // the attempt past its limit.
        let run = async {
            if let Err(e) = check_target(&url, self.config.allow_private_targets).await {
                return failed(e.to_failure());
            }
            let mut response = match request.send().await {
                Ok(r) => r,
                Err(e) => return failed(request_failure(&e, call.timeout)),
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
            let mut f = status_failure("target", status);
            f.response = excerpt;
            f.retry_after = retry_after;
            failed(f)
        };
        let outcome = match tokio::time::timeout(call.timeout, run.instrument(span.clone())).await {
            Ok(outcome) => outcome,
            Err(_) => failed(Failure::transient(format!(
                "request timed out after {}",
                kairos_core::retry::format_duration(call.timeout)
            ))),
        };
        record_call(&span, &outcome);
        outcome
    }

    fn request(
        &self,
        url: Url,
        call: &HttpCall<'_>,
        msg_id: &str,
        now: DateTime<Utc>,
        trace: Option<HeaderValue>,
    ) -> Result<reqwest::RequestBuilder, Failure> {
        check_request_parts(call.method, call.headers)
            .map_err(|e| Failure::permanent(e.to_string()))?;
        let method = Method::from_bytes(call.method.as_bytes())
            .map_err(|_| Failure::permanent("http.method: not an HTTP method"))?;
        let mut rb = self.client.request(method, url).timeout(call.timeout);
        for (name, value) in call.headers {
            // With tracing on, the call's own trace context replaces one given by the user.
            if trace.is_some() && name.eq_ignore_ascii_case("traceparent") {
                continue;
            }
            rb = rb.header(name.as_str(), value.as_str());
        }
        if let Some(tp) = trace {
            rb = rb.header("traceparent", tp);
        }
        let body = call.body.unwrap_or_default();
        match call.auth {
            HttpCallAuth::None => {}
            HttpCallAuth::Bearer(token) => {
                let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    Failure::permanent("the bearer token is not a valid header value")
                })?;
                v.set_sensitive(true);
                rb = rb.header(AUTHORIZATION, v);
            }
            HttpCallAuth::Signature(secret) => {
                let id = HeaderValue::from_str(msg_id)
                    .map_err(|_| Failure::permanent("invalid message id: not a header value"))?;
                let timestamp = now.timestamp();
                rb = rb
                    .header("webhook-id", id)
                    .header("webhook-timestamp", timestamp.to_string())
                    .header("webhook-signature", sign(secret, msg_id, timestamp, body));
            }
        }
        if let Some(b) = call.body {
            rb = rb.body(b.to_vec());
        }
        Ok(rb)
    }
}

fn failed(f: Failure) -> Outcome {
    Outcome::Failed(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_validation() {
        let c = HttpCallConfig::default();
        assert!(!c.allow_private_targets);
        assert_eq!(c.max_response_bytes, 4096);
        assert_eq!(c.validate(), Ok(()));
        let bad = |f: fn(&mut HttpCallConfig)| {
            let mut c = HttpCallConfig::default();
            f(&mut c);
            c.validate().unwrap_err().field().to_string()
        };
        assert_eq!(bad(|c| c.user_agent = "a\nb".into()), "user_agent");
        assert_eq!(
            bad(|c| c.max_response_bytes = 2 << 20),
            "max_response_bytes"
        );
        assert_eq!(
            bad(|c| c.retry_after_cap = Duration::ZERO),
            "retry_after_cap"
        );
    }

    #[test]
    fn request_parts_are_checked_by_field() {
        let mut h = BTreeMap::new();
        assert_eq!(check_request_parts("POST", &h), Ok(()));
        assert_eq!(
            check_request_parts("PO ST", &h).unwrap_err().field(),
            "http.method"
        );
        assert_eq!(
            check_request_parts("", &h).unwrap_err().field(),
            "http.method"
        );
        h.insert("x-ok".to_string(), "fine".to_string());
        assert_eq!(check_request_parts("GET", &h), Ok(()));
        h.insert("bad name".to_string(), "v".to_string());
        assert_eq!(
            check_request_parts("GET", &h).unwrap_err().field(),
            "http.headers.bad name"
        );
        let mut h = BTreeMap::new();
        h.insert("x-evil".to_string(), "a\r\nInjected: 1".to_string());
        assert_eq!(
            check_request_parts("GET", &h).unwrap_err().field(),
            "http.headers.x-evil"
        );
    }

    #[test]
    fn framing_headers_and_unusual_methods_are_refused() {
        for name in [
            "host",
            "Host",
            "content-length",
            "transfer-encoding",
            "connection",
            "te",
            "upgrade",
            "keep-alive",
            "proxy-authorization",
            "proxy-connection",
        ] {
            let h = BTreeMap::from([(name.to_string(), "x".to_string())]);
            let e = check_request_parts("POST", &h).unwrap_err();
            assert_eq!(e.field(), format!("http.headers.{name}"));
            assert!(e.reason().contains("hop-by-hop"), "{e}");
        }
        let h = BTreeMap::from([("x-host".to_string(), "x".to_string())]);
        assert_eq!(check_request_parts("POST", &h), Ok(()));
        for m in ALLOWED_METHODS {
            assert_eq!(check_request_parts(m, &BTreeMap::new()), Ok(()), "{m}");
        }
        for m in ["CONNECT", "TRACE", "PROPFIND", "FOO"] {
            let e = check_request_parts(m, &BTreeMap::new()).unwrap_err();
            assert_eq!(e.field(), "http.method", "{m}");
        }
    }
}
