//! The `http` kind: call the job's stored HTTP target.
//!
//! The payload is `{"http_target_id": "ht_…"}`; the target row holds the URL, method,
//! headers, body, timeout and any token or signing secret, so none of them is in the payload.
//! Only a 2xx answer succeeds; any other answer fails with its status and a body excerpt in
//! the attempt and is retried by class. Each call has its own hard timeout
//!. Every attempt's result is logged as one JSON line.

use super::HTTP_TARGET_KEY;
use crate::handler::{Handler, JobContext};
use async_trait::async_trait;
use kairos_channels::http::{HttpCall, HttpCallAuth, HttpCaller};
use kairos_channels::signing::WebhookSecret;
use kairos_core::budget::MAX_CALL_TIMEOUT;
use kairos_core::{Failure, Job, Outcome};
use kairos_store::{HttpAuth, Store};
use std::sync::Arc;
use std::time::Duration;

/// Calls the targets of `http` jobs.
pub struct HttpHandler {
    store: Arc<dyn Store>,
    caller: HttpCaller,
}

impl HttpHandler {
    /// A handler calling through `caller`, reading targets from `store`.
    pub fn new(store: Arc<dyn Store>, caller: HttpCaller) -> Self {
        HttpHandler { store, caller }
    }

    async fn run(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let Some(id) = job.payload.get(HTTP_TARGET_KEY).and_then(|v| v.as_str()) else {
            return Outcome::Failed(Failure::permanent(format!(
                "http job has no \"{HTTP_TARGET_KEY}\" in its payload"
            )));
        };
        let target = match self.store.http_target_get(id).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Outcome::Failed(Failure::permanent(format!(
                    "http target {id} does not exist"
                )));
            }
            Err(e) => {
                return Outcome::Failed(Failure::transient(format!(
                    "reading the http target failed: {e}"
                )));
            }
        };
        let secret;
        let auth = match (target.auth, target.secret.as_deref()) {
            (HttpAuth::Bearer, Some(token)) => HttpCallAuth::Bearer(token),
            (HttpAuth::Signature, Some(s)) => match WebhookSecret::parse(s) {
                Ok(parsed) => {
                    secret = parsed;
                    HttpCallAuth::Signature(&secret)
                }
                Err(e) => {
                    return Outcome::Failed(Failure::permanent(format!(
                        "the target's signing secret is not valid: {}",
                        e.reason()
                    )));
                }
            },
            (HttpAuth::None, _) => HttpCallAuth::None,
            (_, None) => {
                return Outcome::Failed(Failure::permanent(
                    "the target's token or secret is missing",
                ));
            }
        };
        let mut timeout = call_timeout(target.timeout_ms);
        // An attempt never runs past the job's deadline: its timeout is cut to the time left.
        if let Some((end, _)) = crate::executor::deadline_end(&super::Http::default(), job) {
            let left = (end - ctx.now).to_std().unwrap_or_default();
            timeout = timeout.min(left).max(Duration::from_millis(1));
        }
        let call = HttpCall {
            url: &target.url,
            method: &target.method,
            headers: &target.headers,
            body: target.body.as_deref().map(str::as_bytes),
            timeout,
            auth,
        };
        self.caller.call(&call, &job.id, ctx.now).await
    }
}

/// A stored timeout as a duration, kept within (0, 10 min] whatever is stored.
fn call_timeout(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1)).min(MAX_CALL_TIMEOUT)
}

/// The JSON line logged for one attempt: ids, the outcome, the status, the error and
/// its class, and the response — parsed when it is JSON, else as text. Never the URL, the
/// headers or the body sent (they may carry credentials).
pub fn result_line(job: &Job, outcome: &Outcome) -> serde_json::Value {
    let response = |r: &Option<String>| {
        r.as_deref().map(|t| {
            serde_json::from_str::<serde_json::Value>(t)
                .unwrap_or_else(|_| serde_json::Value::String(t.to_string()))
        })
    };
    let mut line = serde_json::json!({
        "job_id": job.id,
        "kind": job.kind.as_str(),
        "attempt": job.attempt,
        "schedule_id": job.schedule_id,
        "period_key": job.period_key,
    });
    let fields = match outcome {
        Outcome::Delivered {
            status_code,
            response: r,
            ..
        } => {
            serde_json::json!({"ok": true, "outcome": "succeeded", "status": status_code, "response": response(r)})
        }
        Outcome::Skipped(reason) => {
            serde_json::json!({"ok": true, "outcome": "skipped", "reason": reason})
        }
        Outcome::Failed(f) => serde_json::json!({
            "ok": false,
            "outcome": "failed",
            "status": f.status_code,
            "error_class": f.class.as_str(),
            "error": f.message,
            "response": response(&f.response),
        }),
    };
    if let (Some(l), Some(f)) = (line.as_object_mut(), fields.as_object()) {
        l.extend(f.clone());
    }
    line
}

#[async_trait]
impl Handler for HttpHandler {
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let outcome = self.run(job, ctx).await;
        let line = result_line(job, &outcome);
        if matches!(outcome, Outcome::Failed(_)) {
            tracing::warn!(target: "kairos::http", result = %line, "http call failed");
        } else {
            tracing::info!(target: "kairos::http", result = %line, "http call done");
        }
        outcome
    }

    fn timeout(&self) -> Duration {
        // Each call enforces its own (per-job) timeout and classifies it; this outer limit
        // only catches a hang outside the call (reading the target, DNS).
        MAX_CALL_TIMEOUT + Duration::from_secs(30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::{JobKind, JobState, RetryPolicy};

    fn job() -> Job {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-29T06:00:00Z")
            .map(|t| t.to_utc())
            .unwrap();
        Job {
            id: "job_1".into(),
            kind: JobKind("http".into()),
            state: JobState::Running,
            payload: serde_json::json!({HTTP_TARGET_KEY: "ht_1"}),
            endpoint_id: None,
            schedule_id: Some("sch_1".into()),
            fire_at: Some(t),
            period_key: Some("2026-11-29".into()),
            channel: None,
            dedupe_key: None,
            attempt: 2,
            retry: Some(RetryPolicy::http_call()),
            run_at: t,
            created_at: t,
            finished_at: None,
            locked_by: None,
            lease_token: None,
            lease_expires_at: None,
            last_error: None,
            reason: None,
            concurrency: None,
            wait_reason: None,
        }
    }

    /// one JSON object per attempt, with the response JSON parsed in it; a failure
    /// carries its status, class and excerpt and is never `ok`.
    #[test]
    fn result_line_is_json_with_the_response_s4_6() {
        let ok = Outcome::Delivered {
            provider_id: None,
            status_code: Some(200),
            response: Some(r#"{"built": 12}"#.into()),
        };
        let line = result_line(&job(), &ok);
        assert_eq!(line["ok"], true);
        assert_eq!(line["status"], 200);
        assert_eq!(line["response"]["built"], 12);
        assert_eq!(line["attempt"], 2);
        assert_eq!(line["period_key"], "2026-11-29");
        let mut f = Failure::transient("target answered HTTP 500");
        f.status_code = Some(500);
        f.response = Some("Internal Server Error".into());
        let line = result_line(&job(), &Outcome::Failed(f));
        assert_eq!(line["ok"], false);
        assert_eq!(line["status"], 500);
        assert_eq!(line["error_class"], "transient");
        assert_eq!(line["response"], "Internal Server Error");
        // One line: the text form has no line break.
        assert!(!line.to_string().contains('\n'));
    }

    #[test]
    fn stored_timeouts_are_bounded() {
        assert_eq!(call_timeout(120_000), Duration::from_secs(120));
        assert_eq!(call_timeout(-5), Duration::from_millis(1));
        assert_eq!(call_timeout(i64::MAX), MAX_CALL_TIMEOUT);
    }
}
