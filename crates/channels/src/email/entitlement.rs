//! The per-topic entitlement question asked at send time: `POST <url>` with
//! `{"recipient_id", "topic", "target", "period_key", "job_id"}` (ids only, never the
//! address), under the topic's own timeout.
//!
//! The answer: 2xx with `{"entitled": false}` (or 403, 404, 410) is **no** — the job is
//! skipped; any other 2xx is **yes**; anything else (5xx, 429, a timeout, a refused
//! connection) is a failure classified like a webhook's, so the job retries and is never
//! sent without an answer.
//!
//! The URL comes from the API, so it gets a webhook's SSRF guard ([`crate::ssrf`]): checked
//! before each question, asked over the guarded client, and the answer read up to
//! [`MAX_ANSWER_BYTES`].

use crate::ssrf::check_target;
use crate::transport::{build_client, call_span, record_status, request_failure};
use kairos_core::{ErrorClass, Failure};
use std::time::Duration;
use tracing::Instrument;
use url::Url;

/// The largest entitlement answer read (16 KiB): the answer is a tiny JSON object, and a
/// larger one is refused without being downloaded further.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

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
///
/// A topic's URL arrives through the API, so it is treated like a webhook's: checked by
/// [`check_target`] before every question (private, loopback and link-local targets are
/// refused unless private targets are allowed — also for rows stored before the save-time
/// check existed) and asked over the same guarded client (no redirects, no proxies, a
/// resolver that refuses private answers at connection time).
#[derive(Debug, Clone)]
pub struct EntitlementChecker {
    client: reqwest::Client,
    allow_private_targets: bool,
}

impl EntitlementChecker {
    /// A checker; private and loopback URLs are refused unless `allow_private_targets`.
    pub fn new(allow_private_targets: bool) -> Result<Self, crate::Error> {
        let client = build_client(
            "kairos-entitlement/1",
            None,
            allow_private_targets,
            "entitlement",
        )?;
        Ok(EntitlementChecker {
            client,
            allow_private_targets,
        })
    }

    /// Ask `url` about `body`, waiting at most `timeout`. An invalid or refused URL (a
    /// private target) is a permanent failure naming `entitlement_url`; the question is
    /// never sent to it.
    pub async fn ask(&self, url: &str, timeout: Duration, body: &serde_json::Value) -> Entitlement {
        let url = match Url::parse(url) {
            Ok(u) => u,
            Err(e) => {
                return Entitlement::Unknown(Failure::permanent(format!(
                    "entitlement_url is not a valid URL: {e}"
                )));
            }
        };
        if let Err(e) = check_target(&url, self.allow_private_targets).await {
            return Entitlement::Unknown(Failure::new(
                e.class(),
                format!("entitlement_url refused: {e}"),
            ));
        }
        let span = call_span("entitlement", "POST");
        let (answer, status) = self.post(url, timeout, body).instrument(span.clone()).await;
        record_status(&span, status, matches!(answer, Entitlement::Unknown(_)));
        answer
    }

    /// The question itself, after the target check: the answer and the response's status.
    async fn post(
        &self,
        url: Url,
        timeout: Duration,
        body: &serde_json::Value,
    ) -> (Entitlement, Option<u16>) {
        let resp = self
            .client
            .post(url)
            .timeout(timeout)
            .json(body)
            .send()
            .await;
        let mut resp = match resp {
            Ok(r) => r,
            Err(e) => {
                let mut f = request_failure(&e, timeout);
                f.message = format!("entitlement check failed: {}", f.message);
                return (Entitlement::Unknown(f), None);
            }
        };
        let status = resp.status().as_u16();
        if matches!(status, 403 | 404 | 410) {
            return (Entitlement::No, Some(status));
        }
        if !(200..300).contains(&status) {
            // Even a 400 (a bug in the entitlement service) is transient: the question is
            // asked again, the mail is never failed for good on the service's error.
            let mut f = Failure::new(
                ErrorClass::Transient,
                format!("entitlement check answered HTTP {status}"),
            );
            f.status_code = Some(status);
            return (Entitlement::Unknown(f), Some(status));
        }
        let answer = match read_capped(&mut resp, MAX_ANSWER_BYTES).await {
            Ok(a) => a,
            Err(f) => return (Entitlement::Unknown(f), Some(status)),
        };
        let v: serde_json::Value =
            serde_json::from_slice(&answer).unwrap_or(serde_json::Value::Null);
        if v.get("entitled").and_then(|e| e.as_bool()) == Some(false) {
            (Entitlement::No, Some(status))
        } else {
            (Entitlement::Yes, Some(status))
        }
    }
}

/// The body of `resp`, read up to `max` bytes: a longer body (reading stops there) or a read
/// error is a transient failure, never a guess at the answer.
async fn read_capped(resp: &mut reqwest::Response, max: usize) -> Result<Vec<u8>, Failure> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if buf.len() + chunk.len() > max {
                    return Err(Failure::transient(format!(
                        "entitlement answer is larger than {max} bytes"
                    )));
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(buf),
            Err(e) => {
                return Err(Failure::transient(format!(
                    "entitlement answer could not be read: {}",
                    crate::transport::root_cause(&e)
                )));
            }
        }
    }
}
