//! HTTP helpers of the digest channel, over the shared [`crate::transport`] (client,
//! classification, `Retry-After`): each failure is prefixed with what was called ("feed 2",
//! "gemini") and keeps a short excerpt of the answer. Messages never contain a URL (which may
//! carry a key) or a secret.

use crate::transport;
use chrono::{DateTime, Utc};
use kairos_core::Failure;
use std::time::Duration;

/// A request failure (no response) as a classified failure: timeouts and dropped connections
/// are transient; a refused private target or a request that cannot be built is permanent.
pub(crate) fn request_failure(what: &str, e: &reqwest::Error, timeout: Duration) -> Failure {
    let mut f = transport::request_failure(e, timeout);
    f.message = format!("{what}: {}", f.message);
    f
}

/// A non-2xx answer as a classified failure with its status, `Retry-After` and an excerpt.
pub(crate) fn status_failure(
    what: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Failure {
    let mut f = transport::status_failure(what, status);
    f.retry_after = retry_after;
    let excerpt = excerpt(body, 1024);
    f.response = (!excerpt.is_empty()).then_some(excerpt);
    f
}

/// The `Retry-After` of a response, read relative to `now`, capped.
pub(crate) fn retry_after(
    r: &reqwest::Response,
    now: DateTime<Utc>,
    cap: Duration,
) -> Option<Duration> {
    transport::retry_after_of(r.headers(), now, cap)
}

/// Read at most `max` bytes of the body; `Err` when it is longer (a feed that large is refused,
/// not truncated into invalid XML) or the read fails.
pub(crate) async fn read_body(
    what: &str,
    r: &mut reqwest::Response,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    loop {
        match r.chunk().await {
            Ok(Some(c)) => {
                if buf.len() + c.len() > max {
                    return Err(Failure::permanent(format!(
                        "{what}: the response is larger than {max} bytes"
                    )));
                }
                buf.extend_from_slice(&c);
            }
            Ok(None) => return Ok(buf),
            Err(e) => return Err(request_failure(what, &e, timeout)),
        }
    }
}

/// Run one call of a digest under `timeout` and inside `span` (its client span, see
/// `transport::call_span`): the answer, with its status and any failure recorded on the span.
/// `call` yields the response's status beside the answer.
pub(crate) async fn traced<T>(
    what: &str,
    timeout: Duration,
    span: tracing::Span,
    call: impl std::future::Future<Output = Result<(u16, T), Failure>>,
) -> Result<T, Failure> {
    use tracing::Instrument;
    let done = tokio::time::timeout(timeout, call.instrument(span.clone()))
        .await
        .map_err(|_| {
            Failure::transient(format!(
                "{what}: timed out after {}",
                kairos_core::retry::format_duration(timeout)
            ))
        })
        .and_then(|r| r);
    match &done {
        Ok((status, _)) => crate::transport::record_status(&span, Some(*status), false),
        Err(f) => crate::transport::record_status(&span, f.status_code, true),
    }
    done.map(|(_, answer)| answer)
}

/// At most `max` bytes of `bytes` as text, cut at a character boundary.
pub(crate) fn excerpt(bytes: &[u8], max: usize) -> String {
    transport::truncate_utf8(bytes, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::ErrorClass;

    #[test]
    fn status_failures_follow_the_s4_3_table() {
        for s in [408, 429, 500, 502, 503, 504] {
            let f = status_failure("model", s, None, b"high demand");
            assert_eq!(f.class, ErrorClass::Transient, "{s}");
            assert_eq!(f.status_code, Some(s));
            assert_eq!(f.response.as_deref(), Some("high demand"));
        }
        for s in [400, 401, 403, 404, 422] {
            assert_eq!(
                status_failure("model", s, None, b"").class,
                ErrorClass::Permanent,
                "{s}"
            );
        }
        assert_eq!(status_failure("m", 503, None, b"").response, None);
    }

    #[test]
    fn excerpt_is_bounded_and_never_splits_a_character() {
        assert_eq!(excerpt("héllo".as_bytes(), 2), "h");
        assert_eq!(excerpt(b"abc", 10), "abc");
    }
}
