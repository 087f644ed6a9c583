//! The `http` kind's request: the `http` object of a job or schedule request is validated, its
//! budget checked against its deadline, and stored as an HTTP target row; the jobs' payload is
//! only `{"http_target_id": "ht_…", "http_origin": "https://host:443"}` (and `"deadline_ms"`
//! with a deadline), so no token, `Authorization` header or signing secret is ever in a
//! payload. The origin (scheme, host and port of the URL) is what the limits of the `http`
//! object (`rate_limit`, `max_in_flight`) hold for: every `http` job calling it shares them.

use super::NAME;
use crate::error::OpsError;
use crate::kinds::{Kind, RequestEnv};
use kairos_channels::http::check_request_parts;
use kairos_channels::signing::WebhookSecret;
use kairos_core::RetryPolicy;
use kairos_core::budget::{DEFAULT_CALL_TIMEOUT, check_budget, parse_call_timeout};
use kairos_core::id::{IdPrefix, new_id};
use kairos_store::{HttpAuth, HttpTargetUpsert};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The payload key of an `http` job: the id of its stored target.
pub const HTTP_TARGET_KEY: &str = "http_target_id";

/// The payload key of the origin an `http` job calls (`https://api.example.com:443`): the
/// jobs of a schedule copy it from the schedule's payload, and the job's `http_origin` column
/// (which the claim's limits probe reads) is set from it.
pub const HTTP_ORIGIN_KEY: &str = "http_origin";

/// The payload key of an `http` job's deadline (`http.deadline` in milliseconds), read at run
/// time: it is not a secret, and a schedule's jobs copy it from the schedule's payload.
pub const DEADLINE_KEY: &str = "deadline_ms";

/// The largest request body an `http` job may send.
const MAX_BODY_BYTES: usize = 256 * 1024;

/// What an `http` job calls (`"http": {…}` on `POST /v1/jobs` and `POST /v1/schedules`).
// Serialized, it is the request's part again (what `HttpSpec::into_parts` gives).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = HttpBody))]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// `http://` or `https://` URL.
    pub url: String,
    /// Method (default `POST` with a body, `GET` without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request headers. Names are case-insensitive (stored lowercased). An `Authorization`
    /// header is kept with the target, never in a job payload, and never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Request body: a JSON string is sent as it is (`text/plain` unless a `content-type`
    /// header says otherwise); any other JSON value is sent as JSON (`application/json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub body: Option<serde_json::Value>,
    /// Hard timeout of one call (default `"2m"`, at most `"10m"`): a hang past it is a
    /// transient failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The longest the job may take, waits included (`"15m"`), counted from its occurrence's
    /// firing (or its enqueue): a retry policy whose worst case (attempts × timeout + waits,
    /// each wait the larger of its delay and the honoured `Retry-After`, plus jitter) exceeds it
    /// is rejected; at run time no attempt starts past it, a retry that would is not scheduled
    /// (the job ends `dead`, "deadline exceeded"), and an attempt's timeout is cut to the time
    /// left. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// Sent as `Authorization: Bearer <token>`. Stored with the target, never returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<String>,
    /// A `whsec_…` secret: the call carries Standard Webhooks headers (`webhook-id` = the job
    /// id, `webhook-timestamp`, `webhook-signature`). Stored with the target, never returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
    /// Calls per second to the URL's origin (scheme, host and port), with a burst:
    /// `{"per_second": 20, "burst": 20}` (1 to 10000; burst 1 to 100000, default
    /// `per_second`). The limit belongs to the origin and holds for every `http` job calling
    /// it, on every node; the job or schedule saved last that names `rate_limit` or
    /// `max_in_flight` sets both (one left out: no limit of that kind; `null`, and the other
    /// left out: none at all). Neither given: the origin's limits stay as they are.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::RateLimitBody>, nullable))]
    pub rate_limit: Option<Option<crate::ops::RateLimitBody>>,
    /// Calls in flight at once to the URL's origin, on all nodes together (1 to 10000); see
    /// `rate_limit` for which save sets it.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, nullable))]
    pub max_in_flight: Option<Option<i64>>,
}

impl HttpSpec {
    /// This object as a request's parts (`{"http": {…}}`), for a job or schedule request
    /// built in code.
    pub fn into_parts(self) -> crate::kinds::RequestParts {
        let v = serde_json::to_value(self).unwrap_or_default();
        [(NAME.to_string(), v)].into()
    }
}

/// A field that was given, `null` included (`Some(None)`); left out is `None` (its default).
fn given<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The origin of `url` (`https://api.example.com:443`: scheme, host and port, the default
/// port written out), which the limits of `http` jobs are kept for.
pub fn origin_of_url(url: &url::Url) -> Option<String> {
    Some(format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?
    ))
}

/// The origin an `http` job of `kind` calls, from its payload (`None` for other kinds, and for
/// a schedule saved before origins were recorded).
pub fn origin_of_payload(kind: &str, payload: &serde_json::Value) -> Option<String> {
    (kind == NAME)
        .then(|| payload.get(HTTP_ORIGIN_KEY)?.as_str().map(str::to_string))
        .flatten()
}

/// The host limits an `http` object declares: `None` when it names neither `rate_limit` nor
/// `max_in_flight`; else the origin and its limits from now on. Every error names its field.
pub fn declared_limits(
    spec: &HttpSpec,
) -> Result<Option<kairos_store::flow::HostLimitsSet>, OpsError> {
    if spec.rate_limit.is_none() && spec.max_in_flight.is_none() {
        return Ok(None);
    }
    let (rate_limit, max_in_flight) = crate::ops::check_limits(
        "http.",
        spec.rate_limit.as_ref().and_then(Option::as_ref),
        spec.max_in_flight.flatten(),
    )?;
    let url = url::Url::parse(spec.url.trim())
        .map_err(|e| invalid("http.url", format!("not a valid URL: {e}")))?;
    let origin = origin_of_url(&url).ok_or_else(|| invalid("http.url", "has no host"))?;
    Ok(Some(kairos_store::flow::HostLimitsSet {
        origin,
        rate_limit,
        max_in_flight,
        now: chrono::DateTime::<chrono::Utc>::MIN_UTC,
    }))
}

/// Set the host limits `spec` declares, if any, as of `env.now`.
pub(super) async fn limits_apply(env: &RequestEnv<'_>, spec: &HttpSpec) -> Result<(), OpsError> {
    if let Some(mut set) = declared_limits(spec)? {
        set.now = env.now;
        let origin = set.origin.clone();
        env.store.host_limits_set(set).await?;
        tracing::info!(origin = %origin, "host limits set");
    }
    Ok(())
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
    // The limits are checked before anything is stored; they are set once the job or schedule
    // is (`Http::request_accepted`).
    declared_limits(spec)?;
    let target = http_target(env, spec)?;
    let origin = url::Url::parse(&target.url)
        .ok()
        .as_ref()
        .and_then(origin_of_url)
        .ok_or_else(|| invalid("http.url", "has no host"))?;
    let timeout = std::time::Duration::from_millis(target.timeout_ms.max(0) as u64);
    let deadline = match &spec.deadline {
        Some(d) => Some(kairos_core::retry::parse_duration("http.deadline", d)?),
        None => kind.deadline(),
    };
    let default = kind.default_retry();
    check_budget(retry.unwrap_or(&default), timeout, deadline)?;
    let stored = env.store.http_target_upsert(target).await?;
    let mut payload = serde_json::json!({ HTTP_TARGET_KEY: stored.id, HTTP_ORIGIN_KEY: origin });
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
    fn an_origin_is_scheme_host_and_port_with_the_default_port_written_out() {
        let o = |u: &str| origin_of_url(&url::Url::parse(u).unwrap());
        assert_eq!(
            o("https://API.example.com/x?y=1").as_deref(),
            Some("https://api.example.com:443")
        );
        assert_eq!(
            o("http://127.0.0.1:8080/").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            o("http://user:pw@h/").as_deref(),
            Some("http://h:80"),
            "no user info"
        );
    }

    #[test]
    fn limits_given_as_null_declare_none_and_left_out_declare_nothing() {
        let spec: HttpSpec = serde_json::from_value(serde_json::json!({
            "url": "https://h.example/", "rate_limit": null
        }))
        .unwrap();
        let d = declared_limits(&spec).unwrap().expect("declared");
        assert_eq!((d.rate_limit, d.max_in_flight), (None, None));
        let spec: HttpSpec =
            serde_json::from_value(serde_json::json!({"url": "https://h.example/"})).unwrap();
        assert!(declared_limits(&spec).unwrap().is_none());
        let spec: HttpSpec = serde_json::from_value(serde_json::json!({
            "url": "https://h.example/", "rate_limit": {"per_second": 0}
        }))
        .unwrap();
        let e = declared_limits(&spec).unwrap_err();
        assert!(
            matches!(e.kind(), crate::error::OpsErrorKind::Invalid { field, .. }
                if field == "http.rate_limit.per_second"),
            "{e}"
        );
    }

    #[test]
    fn header_safety() {
        assert!(!reqwest_header_unsafe("abc.DEF-123_~"));
        assert!(reqwest_header_unsafe("a\nb"));
        assert!(reqwest_header_unsafe("é"));
    }
}
