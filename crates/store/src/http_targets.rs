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

/// A stored HTTP call target.
#[derive(Debug, Clone, PartialEq)]
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
/// fingerprint.
#[derive(Debug, Clone)]
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
