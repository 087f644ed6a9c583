//! The `http` kind's request: the `http` object of a job or schedule request is validated, its
//! budget checked against its deadline, and stored as an HTTP target row; the jobs' payload is
//! only `{"http_target_id": "ht_…"}` (and `"deadline_ms"` with a deadline), so no token,
//! `Authorization` header or signing secret is ever in a payload.

use super::NAME;
use crate::error::OpsError;
use crate::kinds::{Kind, RequestEnv};
use kairos_channels::http::check_request_parts;
use kairos_channels::signing::WebhookSecret;
use kairos_core::RetryPolicy;
use kairos_core::budget::{DEFAULT_CALL_TIMEOUT, check_budget, parse_call_timeout};
use kairos_core::id::{IdPrefix, new_id};
use kairos_store::{HttpAuth, HttpTargetUpsert};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The payload key of an `http` job: the id of its stored target.
pub const HTTP_TARGET_KEY: &str = "http_target_id";

/// The payload key of an `http` job's deadline (`http.deadline` in milliseconds), read at run
/// time: it is not a secret, and a schedule's jobs copy it from the schedule's payload.
pub const DEADLINE_KEY: &str = "deadline_ms";

/// The largest request body an `http` job may send.
const MAX_BODY_BYTES: usize = 256 * 1024;

/// What an `http` job calls (`"http": {…}` on `POST /v1/jobs` and `POST /v1/schedules`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = HttpBody))]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// `http://` or `https://` URL.
    pub url: String,
    /// Method (default `POST` with a body, `GET` without).
    #[serde(default)]
    pub method: Option<String>,
    /// Request headers. Names are case-insensitive (stored lowercased). An `Authorization`
    /// header is kept with the target, never in a job payload, and never shown.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Request body: a JSON string is sent as it is (`text/plain` unless a `content-type`
    /// header says otherwise); any other JSON value is sent as JSON (`application/json`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub body: Option<serde_json::Value>,
    /// Hard timeout of one call (default `"2m"`, at most `"10m"`): a hang past it is a
    /// transient failure.
    #[serde(default)]
    pub timeout: Option<String>,
    /// The longest the job may take, waits included (`"15m"`), counted from its occurrence's
    /// firing (or its enqueue): a retry policy whose worst case (attempts × timeout + waits,
    /// each wait the larger of its delay and the honoured `Retry-After`, plus jitter) exceeds it
    /// is rejected; at run time no attempt starts past it, a retry that would is not scheduled
    /// (the job ends `dead`, "deadline exceeded"), and an attempt's timeout is cut to the time
    /// left. Default: none.
    #[serde(default)]
    pub deadline: Option<String>,
    /// Sent as `Authorization: Bearer <token>`. Stored with the target, never returned.
    #[serde(default)]
    pub bearer_token: Option<String>,
    /// A `whsec_…` secret: the call carries Standard Webhooks headers (`webhook-id` = the job
    /// id, `webhook-timestamp`, `webhook-signature`). Stored with the target, never returned.
    #[serde(default)]
    pub signing_secret: Option<String>,
}

fn invalid(field: &str, reason: impl Into<String>) -> OpsError {
    OpsError::invalid(field, reason)
}

/// The payload of an `http` job or schedule: validate `http` (required), check the budget of
/// `retry` (None: the kind's default) against the deadline, store the target, and return
/// `{"http_target_id": …}`.
pub async fn payload(
    env: &RequestEnv<'_>,
    kind: &dyn Kind,
    http: Option<&HttpSpec>,
    payload: serde_json::Value,
    retry: Option<&RetryPolicy>,
) -> Result<serde_json::Value, OpsError> {
    let Some(spec) = http else {
        return Err(invalid(
            "http",
            format!(
                "required for kind {NAME:?}: {{\"url\", \"method\", \"headers\", \"body\", \"timeout\"}}"
            ),
        ));
    };
    if payload.as_object().is_none_or(|o| !o.is_empty()) {
        return Err(invalid(
            "payload",
            "not for kind \"http\": the request body is \"http.body\"",
        ));
    }
    let target = http_target(env, spec)?;
    let timeout = std::time::Duration::from_millis(target.timeout_ms.max(0) as u64);
    let deadline = match &spec.deadline {
        Some(d) => Some(kairos_core::retry::parse_duration("http.deadline", d)?),
        None => kind.deadline(),
    };
    let default = kind.default_retry();
    check_budget(retry.unwrap_or(&default), timeout, deadline)?;
    let stored = env.store.http_target_upsert(target).await?;
    let mut payload = serde_json::json!({ HTTP_TARGET_KEY: stored.id });
    if let (Some(d), Some(o)) = (
        spec.deadline.as_ref().and(deadline),
        payload.as_object_mut(),
    ) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        o.insert(DEADLINE_KEY.into(), ms.into());
    }
    Ok(payload)
}

/// The target row for `spec`, validated; every error names its field.
fn http_target(env: &RequestEnv<'_>, spec: &HttpSpec) -> Result<HttpTargetUpsert, OpsError> {
    let url = url::Url::parse(spec.url.trim())
        .map_err(|e| invalid("http.url", format!("not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("http.url", "must be an http:// or https:// URL"));
    }
    if !env.allow_private_targets && kairos_channels::ssrf::is_obviously_private(&url) {
        return Err(invalid(
            "http.url",
            "targets a private or loopback address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow",
        ));
    }
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in spec.headers.clone().unwrap_or_default() {
        let lower = name.trim().to_ascii_lowercase();
        if headers.insert(lower, value).is_some() {
            return Err(invalid(
                &format!("http.headers.{name}"),
                "is given twice (header names are case-insensitive)",
            ));
        }
    }
    let body = match &spec.body {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => {
            headers
                .entry("content-type".into())
                .or_insert_with(|| "text/plain; charset=utf-8".into());
            Some(s.clone())
        }
        Some(v) => {
            headers
                .entry("content-type".into())
                .or_insert_with(|| "application/json".into());
            Some(v.to_string())
        }
    };
    if body.as_ref().is_some_and(|b| b.len() > MAX_BODY_BYTES) {
        return Err(invalid(
            "http.body",
            format!("larger than {MAX_BODY_BYTES} bytes"),
        ));
    }
    let method = spec
        .method
        .as_deref()
        .map(|m| m.trim().to_ascii_uppercase())
        .unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.into());
    check_request_parts(&method, &headers)?;
    let timeout = match &spec.timeout {
        Some(t) => parse_call_timeout("http.timeout", t)?,
        None => DEFAULT_CALL_TIMEOUT,
    };
    let (auth, secret) = match (&spec.bearer_token, &spec.signing_secret) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "http.bearer_token",
                "give either \"bearer_token\" or \"signing_secret\", not both",
            ));
        }
        (Some(t), None) => {
            let t = t.trim();
            if t.is_empty() || reqwest_header_unsafe(t) {
                return Err(invalid(
                    "http.bearer_token",
                    "must be a non-empty token of visible ASCII characters",
                ));
            }
            if headers.contains_key("authorization") {
                return Err(invalid(
                    "http.bearer_token",
                    "an \"Authorization\" header is given too: give one of them",
                ));
            }
            (HttpAuth::Bearer, Some(t.to_string()))
        }
        (None, Some(s)) => {
            WebhookSecret::parse(s).map_err(|e| invalid("http.signing_secret", e.reason()))?;
            (HttpAuth::Signature, Some(s.clone()))
        }
        (None, None) => (HttpAuth::None, None),
    };
    let now = env.now;
    let timeout_ms = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
    // The same definition (secret included) is stored once; the hash never leaves the
    // database and is of the whole definition, so it identifies nothing on its own.
    let canonical = serde_json::json!([
        url.as_str(),
        method,
        headers,
        body,
        timeout_ms,
        auth.as_str(),
        secret
    ])
    .to_string();
    let fingerprint: String = Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(HttpTargetUpsert {
        id: new_id(IdPrefix::HttpTarget, now),
        fingerprint,
        url: url.to_string(),
        method,
        headers,
        body,
        timeout_ms,
        auth,
        secret,
        now,
    })
}

/// Characters a header value cannot carry (control characters, non-ASCII).
fn reqwest_header_unsafe(s: &str) -> bool {
    s.bytes().any(|b| !(0x20..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_safety() {
        assert!(!reqwest_header_unsafe("abc.DEF-123_~"));
        assert!(reqwest_header_unsafe("a\nb"));
        assert!(reqwest_header_unsafe("é"));
    }
}
