//! The per-topic entitlement question asked at send time (S3-7): `POST <url>` with
//! `{"recipient_id", "topic", "target", "period_key", "job_id"}` (ids only, never the
//! address), under the topic's own timeout.
//!
//! The answer: 2xx with `{"entitled": false}` (or 403, 404, 410) is **no** — the job is
//! skipped; any other 2xx is **yes**; anything else (5xx, 429, a timeout, a refused
//! connection) is a failure classified like a webhook's, so the job retries and is never
//! sent without an answer.

use kairos_core::{ErrorClass, Failure};
use std::time::Duration;

/// The answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Entitlement {
    /// Send.
    Yes,
    /// Do not send: skip the job.
    No,
    /// No answer: the attempt fails.
    Unknown(Failure),
}

/// Asks entitlement URLs. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EntitlementChecker {
    client: reqwest::Client,
}

impl EntitlementChecker {
    /// A checker; private and loopback URLs are refused at connection time unless allowed.
    pub fn new(allow_private_targets: bool) -> Result<Self, crate::Error> {
        let client = crate::transport::build_client(
            "kairos-entitlement/1",
            None,
            allow_private_targets,
            "entitlement",
        )?;
        Ok(EntitlementChecker { client })
    }

    /// Ask `url` about `body`, waiting at most `timeout`.
    pub async fn ask(&self, url: &str, timeout: Duration, body: &serde_json::Value) -> Entitlement {
        let resp = self
            .client
            .post(url)
            .timeout(timeout)
            .json(body)
            .send()
            .await;
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                let what = if e.is_timeout() {
                    "entitlement check timed out"
                } else {
                    "entitlement check could not connect"
                };
                return Entitlement::Unknown(Failure::transient(what));
            }
        };
        let status = resp.status().as_u16();
        if matches!(status, 403 | 404 | 410) {
            return Entitlement::No;
        }
        if !(200..300).contains(&status) {
            // Even a 400 (a bug in the entitlement service) is transient: the question is
            // asked again, the mail is never failed for good on the service's error.
            let mut f = Failure::new(
                ErrorClass::Transient,
                format!("entitlement check answered HTTP {status}"),
            );
            f.status_code = Some(status);
            return Entitlement::Unknown(f);
        }
        let v: serde_json::Value = resp.json().await.unwrap_or(serde_json::Value::Null);
        if v.get("entitled").and_then(|e| e.as_bool()) == Some(false) {
            Entitlement::No
        } else {
            Entitlement::Yes
        }
    }
}
