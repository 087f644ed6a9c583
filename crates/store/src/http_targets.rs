//! HTTP call targets (`http` jobs): where a job calls and with what, stored once and
//! referenced by id from job payloads — like webhook endpoints — so that a bearer token, an
//! `Authorization` header or a signing secret never sits in a job payload (which the API lists
//! and logs may show).

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// How an HTTP call authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpAuth {
    /// No authentication beyond the headers given.
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// Standard Webhooks headers signed with the `whsec_…` secret.
    Signature,
}

impl HttpAuth {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpAuth::None => "none",
            HttpAuth::Bearer => "bearer",
            HttpAuth::Signature => "signature",
        }
    }
    /// Parse a stored string; unknown values read as `None` (a reader never crashes, and
    /// the call then goes out unauthenticated and fails at the other side, visibly).
    pub fn parse(s: &str) -> HttpAuth {
        match s {
            "bearer" => HttpAuth::Bearer,
            "signature" => HttpAuth::Signature,
            _ => HttpAuth::None,
        }
    }
}

/// A stored HTTP call target. Its `Debug` shows the URL masked, the header names and no secret.
#[derive(Clone, PartialEq)]
pub struct HttpTarget {
    /// `ht_…`.
    pub id: String,
    /// A hash of the whole definition: the same definition is stored once.
    pub fingerprint: String,
    /// The URL called.
    pub url: String,
    /// The method (`GET`, `POST`, …).
    pub method: String,
    /// Request headers (may include secret ones such as `Authorization`: never shown).
    pub headers: BTreeMap<String, String>,
    /// The request body, if any.
    pub body: Option<String>,
    /// Timeout of one call, in milliseconds.
    pub timeout_ms: i64,
    /// How the call authenticates.
    pub auth: HttpAuth,
    /// The bearer token or `whsec_…` secret, for `auth` other than `None`. Never shown.
    pub secret: Option<String>,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// `http_target_upsert`: store a target, or return the existing one with the same
/// fingerprint. Its `Debug` shows what [`HttpTarget`]'s does.
#[derive(Clone)]
pub struct HttpTargetUpsert {
    /// Id to use if a new target is created.
    pub id: String,
    /// A hash of the whole definition (secrets included), unique.
    pub fingerprint: String,
    /// URL.
    pub url: String,
    /// Method.
    pub method: String,
    /// Headers.
    pub headers: BTreeMap<String, String>,
    /// Body.
    pub body: Option<String>,
    /// Timeout of one call, in milliseconds.
    pub timeout_ms: i64,
    /// Authentication.
    pub auth: HttpAuth,
    /// Token or secret.
    pub secret: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// The `Debug` of a target: id, URL masked ([`kairos_core::text::mask_url`]), method, header
/// names, the body's length, timeout and auth; never a header value or the secret.
#[allow(clippy::too_many_arguments)]
fn debug_target(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    id: &str,
    url: &str,
    method: &str,
    headers: &BTreeMap<String, String>,
    body: Option<&String>,
    timeout_ms: i64,
    auth: HttpAuth,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("id", &id)
        .field("url", &kairos_core::text::mask_url(url))
        .field("method", &method)
        .field("headers", &headers.keys().collect::<Vec<_>>())
        .field("body_bytes", &body.map(String::len))
        .field("timeout_ms", &timeout_ms)
        .field("auth", &auth)
        .finish_non_exhaustive()
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_target(
            f,
            "HttpTarget",
            &self.id,
            &self.url,
            &self.method,
            &self.headers,
            self.body.as_ref(),
            self.timeout_ms,
            self.auth,
        )
    }
}

impl std::fmt::Debug for HttpTargetUpsert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_target(
            f,
            "HttpTargetUpsert",
            &self.id,
            &self.url,
            &self.method,
            &self.headers,
            self.body.as_ref(),
            self.timeout_ms,
            self.auth,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_an_http_target_masks_the_url_and_hides_values_and_the_secret() {
        let t = HttpTarget {
            id: "ht_1".into(),
            fingerprint: "fp".into(),
            url: "https://u:pw-x@api.example/x?key=qkey".into(),
            method: "POST".into(),
            headers: [("x-api-key".to_string(), "hval".to_string())].into(),
            body: Some("body".into()),
            timeout_ms: 1000,
            auth: HttpAuth::Bearer,
            secret: Some("tok-secret".into()),
            created_at: DateTime::<Utc>::UNIX_EPOCH,
        };
        let shown = format!("{t:?}");
        for hidden in ["pw-x", "qkey", "hval", "tok-secret"] {
            assert!(!shown.contains(hidden), "{hidden} in {shown}");
        }
        assert!(
            shown.contains("https://u:***@api.example/x?key=***"),
            "{shown}"
        );
        assert!(shown.contains("x-api-key"), "{shown}");
    }
}
