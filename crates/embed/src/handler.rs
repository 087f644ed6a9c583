//! Typed jobs: [`JobArgs`] names a job's kind and its arguments' type; a handler is an async
//! function of those arguments that returns `Result<(), JobError>`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::{Failure, Job, Outcome};
use kairos_engine::{Handler, JobContext};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

/// The arguments of one kind of job: stored as the job's JSON payload when it is enqueued, and
/// handed back, deserialized, to the kind's handler.
///
/// ```
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct SendInvoice { order_id: u64 }
///
/// impl kairos_embed::JobArgs for SendInvoice {
///     const KIND: &'static str = "send_invoice";
/// }
/// ```
///
/// Keep ids and parameters in the arguments, not secrets or personal data: the payload is
/// stored as it is and shown by the admin pages and the API.
pub trait JobArgs: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The kind's name, stored in `jobs.kind`: 1 to 64 of `[a-z0-9_.-]`, not one of the
    /// built-in kinds (`webhook`, `http`, `email`, `digest`).
    const KIND: &'static str;

    /// The longest one attempt may run; past it the attempt is a transient failure (retried).
    const TIMEOUT: Duration = Duration::from_secs(60);

    /// The kind's retry policy, for jobs enqueued without one; `None`: a notification's
    /// (4 attempts over about an hour).
    fn retry() -> Option<kairos_core::RetryPolicy> {
        None
    }

    /// Check arguments before they are stored: `Err(reason)` refuses the enqueue (from this
    /// crate, the API or the CLI), naming `payload` and the reason, and nothing is stored.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// What a handler is told besides its arguments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Context {
    /// The job's id (`job_…`): stable across retries, a good idempotency key for the side
    /// effects of the job.
    pub job_id: String,
    /// This attempt's number, from 1.
    pub attempt: i32,
    /// When the attempt started (the node's clock).
    pub now: DateTime<Utc>,
    /// The node running it.
    pub node: String,
}

/// Why an attempt failed: retried with back-off ([`JobError::retry`]) or not
/// ([`JobError::permanent`]), each within the job's retry policy (its `max_attempts`).
///
/// The message is stored as the job's `last_error` and logged: no secrets or personal data.
#[derive(Debug, Clone, PartialEq)]
pub struct JobError {
    failure: Failure,
}

impl JobError {
    /// A failure that waiting may fix (a timeout, a service that is down): retried with the
    /// transient class's delays.
    pub fn retry(e: impl Display) -> Self {
        JobError {
            failure: Failure::transient(e.to_string()),
        }
    }

    /// A failure that waiting will not fix (bad input): the permanent class's delays (by
    /// default short), then the job is dead.
    pub fn permanent(e: impl Display) -> Self {
        JobError {
            failure: Failure::permanent(e.to_string()),
        }
    }

    /// Retry no sooner than `after` (the other side asked for it), capped by the policy.
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.failure.retry_after = Some(after);
        self
    }

    /// The engine's failure this error becomes.
    pub fn into_failure(self) -> Failure {
        self.failure
    }
}

impl Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failure: {}",
            self.failure.class, self.failure.message
        )
    }
}

impl std::error::Error for JobError {}

/// The engine's [`Handler`] over a typed function: deserializes the payload into `A` and maps
/// the result to an [`Outcome`].
pub(crate) struct Typed<A, F> {
    f: F,
    _args: PhantomData<fn() -> A>,
}

impl<A, F> Typed<A, F> {
    pub(crate) fn new(f: F) -> Self {
        Typed {
            f,
            _args: PhantomData,
        }
    }
}

#[async_trait]
impl<A, F, Fut> Handler for Typed<A, F>
where
    A: JobArgs,
    F: Fn(A, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let args = match A::deserialize(&job.payload) {
            Ok(a) => a,
            Err(e) => return Outcome::Failed(Failure::permanent(payload_mismatch::<A>(&e))),
        };
        let cx = Context {
            job_id: job.id.clone(),
            attempt: job.attempt,
            now: ctx.now,
            node: ctx.node.clone(),
        };
        match (self.f)(args, cx).await {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::Failed(e.into_failure()),
        }
    }

    fn timeout(&self) -> Duration {
        A::TIMEOUT
    }
}

/// Why a payload is not an `A`, without the payload's values: serde quotes what it found
/// (`invalid type: string "…"`, ``unknown variant `…` ``), which may be personal data, so
/// quoted text is dropped — escaped quotes inside it included. Backticks are kept only in
/// `missing field` (the name is the type's, not the payload's).
pub(crate) fn payload_mismatch<A>(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let keep_ticks = text.starts_with("missing field");
    let mut reason = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match quote {
            None if c == '"' || (c == '`' && !keep_ticks) => {
                quote = Some(c);
                reason.push(c);
                reason.push('…');
            }
            None => reason.push(c),
            Some(_) if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => {
                quote = None;
                reason.push(q);
            }
            Some(_) => {}
        }
    }
    format!(
        "the payload does not deserialize into {}: {reason}",
        std::any::type_name::<A>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    struct Args {
        #[allow(dead_code)]
        n: u32,
    }

    #[test]
    fn a_payload_mismatch_names_the_type_and_drops_quoted_values() {
        let e = serde_json::from_value::<Args>(serde_json::json!({"n": "alice@example.com"}))
            .unwrap_err();
        let m = payload_mismatch::<Args>(&e);
        assert!(m.contains("Args"), "{m}");
        assert!(m.contains("invalid type"), "{m}");
        assert!(!m.contains("alice"), "{m}");
        let e = serde_json::from_value::<Args>(serde_json::json!({})).unwrap_err();
        assert!(payload_mismatch::<Args>(&e).contains("missing field `n`"));
        // A quote inside the value does not end the dropped text early.
        let e = serde_json::from_value::<Args>(serde_json::json!({"n": "x\" alice@example.com"}))
            .unwrap_err();
        let m = payload_mismatch::<Args>(&e);
        assert!(!m.contains("alice"), "{m}");
        // serde quotes an unknown variant in backticks: dropped too.
        #[derive(Debug, serde::Deserialize)]
        enum Plan {
            Free,
        }
        #[derive(Debug, serde::Deserialize)]
        struct WithPlan {
            #[allow(dead_code)]
            plan: Plan,
        }
        let e = serde_json::from_value::<WithPlan>(serde_json::json!({"plan": "bob@example.com"}))
            .unwrap_err();
        let m = payload_mismatch::<WithPlan>(&e);
        assert!(m.contains("unknown variant"), "{m}");
        assert!(!m.contains("bob"), "{m}");
        let _ = Plan::Free;
    }
}
