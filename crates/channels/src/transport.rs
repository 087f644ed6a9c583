//! What every outgoing HTTP call of kairos shares (webhooks, `http` jobs): the client (no
//! redirects, no proxies, the SSRF-safe resolver), the classification of request errors and
//! statuses, bounded response excerpts, `Retry-After`, and with tracing on the call's span and
//! its W3C `traceparent` header.
//!
//! Messages never contain the URL (which may carry credentials) or a secret: reqwest's own
//! messages include the URL, so only the innermost cause's text is used.

use crate::ssrf::{PrivateAddressError, PublicOnlyResolver, private_message};
use chrono::{DateTime, Utc};
use kairos_core::Outcome;
use kairos_core::{ErrorClass, Failure};
use opentelemetry::trace::TraceContextExt;
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use std::error::Error as StdError;
use std::time::{Duration, SystemTime};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Build a client: no redirects, no proxies (the address checked is the address connected
/// to), `user_agent`, an overall `timeout` if given (a request may set its own), and — unless
/// private targets are allowed — a resolver that refuses private addresses at connection time.
/// Installs the rustls `ring` provider if none is installed yet.
pub(crate) fn build_client(
    user_agent: &str,
    timeout: Option<Duration>,
    allow_private_targets: bool,
    what: &str,
) -> Result<reqwest::Client, crate::Error> {
    // reqwest is built with `rustls-no-provider`: without a process-wide provider, building
    // a client panics. Installing fails harmlessly when one is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(user_agent.to_string());
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    if !allow_private_targets {
        builder = builder.dns_resolver(std::sync::Arc::new(PublicOnlyResolver));
    }
    builder
        .build()
        .map_err(|e| crate::Error::client(format!("could not build the {what} HTTP client"), e))
}

/// The span of one outgoing call (target `kairos::trace`: built only with tracing on), named
/// `<channel> <method>` (`webhook POST`, `http GET`, `feed GET`, `model POST`,
/// `entitlement POST`, `resend POST`, `smtp SEND`). Its attributes are the method and, once
/// known, the response status: never the URL, the address or a header.
pub(crate) fn call_span(channel: &'static str, method: &str) -> tracing::Span {
    tracing::info_span!(
        target: "kairos::trace",
        "outgoing call",
        otel.name = %format_args!("{channel} {method}"),
        kairos.channel = channel,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.response.status_code = tracing::field::Empty,
    )
}

/// Record the outcome of the call of `span`: the response status, and an error status when
/// it failed.
pub(crate) fn record_call(span: &tracing::Span, outcome: &Outcome) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Outcome::Delivered { status_code, .. } => record_status(span, *status_code, false),
        Outcome::Failed(f) => record_status(span, f.status_code, true),
        Outcome::Skipped(_) => {}
    }
}

/// Record a call's result on its `span`: the response (or SMTP reply) status when there was
/// one, and an error status when the call `failed`.
pub(crate) fn record_status(span: &tracing::Span, status: Option<u16>, failed: bool) {
    if span.is_disabled() {
        return;
    }
    if failed {
        span.record("otel.status_code", "error");
    }
    if let Some(code) = status {
        span.record("http.response.status_code", code);
    }
}

/// The W3C `traceparent` header naming `span` as the caller, or `None` with tracing off (the
/// span disabled, or no valid trace context).
pub(crate) fn traceparent(span: &tracing::Span) -> Option<HeaderValue> {
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    HeaderValue::from_str(&format!(
        "00-{:032x}-{:016x}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    ))
    .ok()
}

/// A request that got no response, as a classified failure: a private target refused at
/// connection time and a request that cannot be built are permanent; timeouts, refused, reset
/// and aborted connections and every other transport error are transient.
pub(crate) fn request_failure(e: &reqwest::Error, timeout: Duration) -> Failure {
    if let Some(p) = find_source::<PrivateAddressError>(e) {
        return Failure::permanent(private_message(p.0));
    }
    if e.is_timeout() {
        return Failure::transient(format!(
            "request timed out after {}",
            kairos_core::retry::format_duration(timeout)
        ));
    }
    if e.is_builder() {
        return Failure::permanent(format!("could not build the request: {}", root_cause(e)));
    }
    let io_kind = find_source::<std::io::Error>(e).map(|io| io.kind());
    Failure::transient(io_failure_message(io_kind, e.is_connect(), || {
        root_cause(e)
    }))
}

/// The message of a transport failure by I/O error kind (all of them transient).
pub(crate) fn io_failure_message(
    kind: Option<std::io::ErrorKind>,
    is_connect: bool,
    cause: impl FnOnce() -> String,
) -> String {
    match kind {
        Some(std::io::ErrorKind::ConnectionRefused) => "connection refused".to_string(),
        Some(std::io::ErrorKind::ConnectionReset) => "connection reset".to_string(),
        Some(std::io::ErrorKind::ConnectionAborted) => "connection aborted".to_string(),
        Some(std::io::ErrorKind::TimedOut) => "connection timed out".to_string(),
        _ if is_connect => format!("could not connect: {}", cause()),
        _ => format!("request failed: {}", cause()),
    }
}

/// A response outside 2xx as a failure (never a success): 3xx permanent (redirects are
/// not followed: configure the final URL), other statuses by
/// [`ErrorClass::from_http_status`]. `who` names the other side ("endpoint", "target").
pub(crate) fn status_failure(who: &str, status: u16) -> Failure {
    let mut f = match status {
        300..=399 => Failure::permanent(format!(
            "{who} answered a redirect ({status}); redirects are not followed, \
             configure the final URL"
        )),
        _ => Failure::new(
            ErrorClass::from_http_status(status),
            format!("{who} answered HTTP {status}"),
        ),
    };
    f.status_code = Some(status);
    f
}

/// The `Retry-After` of a response, read relative to `now`, capped at `cap`.
pub(crate) fn retry_after_of(
    headers: &HeaderMap,
    now: DateTime<Utc>,
    cap: Duration,
) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, now, cap))
}

/// The first error of type `T` in `e`'s source chain (not `e` itself).
pub(crate) fn find_source<'a, T: StdError + 'static>(
    e: &'a (dyn StdError + 'static),
) -> Option<&'a T> {
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
pub(crate) fn root_cause(e: &(dyn StdError + 'static)) -> String {
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
pub(crate) async fn read_excerpt(response: &mut reqwest::Response, max: usize) -> Option<String> {
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
pub(crate) fn truncate_utf8(bytes: &[u8], max: usize) -> String {
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
    fn retry_after_header_is_read_from_the_response_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after_of(&h, now(), HOUR), None);
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:29:30 GMT".parse().unwrap(),
        );
        assert_eq!(
            retry_after_of(&h, now(), HOUR),
            Some(Duration::from_secs(150))
        );
        h.insert(RETRY_AFTER, "45".parse().unwrap());
        assert_eq!(
            retry_after_of(&h, now(), HOUR),
            Some(Duration::from_secs(45))
        );
    }

    #[test]
    fn excerpt_never_splits_a_character() {
        assert_eq!(truncate_utf8("héllo".as_bytes(), 2), "h");
        assert_eq!(truncate_utf8("héllo".as_bytes(), 3), "hé");
        assert_eq!(truncate_utf8(b"abc", 10), "abc");
        let binary = truncate_utf8(&[0xff, 0xfe, b'a', 0xff], 3);
        assert!(binary.len() <= 3, "{binary:?}");
    }

    /// The classification table for answers: 2xx is never passed here; 3xx is permanent (redirects are
    /// not followed), 408/429/5xx transient, other 4xx permanent; the status is recorded.
    #[test]
    fn status_failures_follow_the_s4_3_table() {
        for (status, class) in [
            (301, ErrorClass::Permanent),
            (400, ErrorClass::Permanent),
            (401, ErrorClass::Permanent),
            (404, ErrorClass::Permanent),
            (410, ErrorClass::Permanent),
            (422, ErrorClass::Permanent),
            (408, ErrorClass::Transient),
            (429, ErrorClass::Transient),
            (500, ErrorClass::Transient),
            (502, ErrorClass::Transient),
            (503, ErrorClass::Transient),
            (504, ErrorClass::Transient),
        ] {
            let f = status_failure("target", status);
            assert_eq!(f.class, class, "{status}");
            assert_eq!(f.status_code, Some(status));
            assert!(f.message.contains(&status.to_string()), "{f:?}");
        }
    }

    /// The classification table for transport errors: refused, reset, aborted and timed-out connections
    /// are named; anything else is described by its cause.
    #[test]
    fn io_failures_are_named() {
        use std::io::ErrorKind as K;
        let cause = || "boom".to_string();
        assert_eq!(
            io_failure_message(Some(K::ConnectionRefused), true, cause),
            "connection refused"
        );
        assert_eq!(
            io_failure_message(Some(K::ConnectionReset), false, cause),
            "connection reset"
        );
        assert_eq!(
            io_failure_message(Some(K::ConnectionAborted), false, cause),
            "connection aborted"
        );
        assert_eq!(
            io_failure_message(Some(K::TimedOut), true, cause),
            "connection timed out"
        );
        assert_eq!(
            io_failure_message(None, true, cause),
            "could not connect: boom"
        );
        assert_eq!(
            io_failure_message(Some(K::Other), false, cause),
            "request failed: boom"
        );
    }
}
