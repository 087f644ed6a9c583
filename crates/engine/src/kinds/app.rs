//! Kinds an application brings ([`AppKind`]), and a known kind given another handler
//! ([`Handled`], what [`Kinds::with_handler`](super::Kinds::with_handler) builds).

use super::{EndpointUse, Kind, KindRequest, RequestEnv, TopicUse};
use crate::error::OpsError;
use crate::handler::Handler;
use kairos_core::{Job, RetryPolicy};
use kairos_store::Schedule;
use std::sync::Arc;
use std::time::Duration;

type Validator = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

/// A kind an application brings: its name and handler, and optionally its retry default, its
/// deadline and a check of its payloads. Registered on a node with
/// [`Kinds::with`](super::Kinds::with), it is validated and retried like a built-in kind: a
/// job enqueued through the API or the library with a payload the check refuses is a 422
/// naming `payload`, and nothing is stored.
#[derive(Clone)]
pub struct AppKind {
    name: &'static str,
    handler: Arc<dyn Handler>,
    retry: Option<RetryPolicy>,
    deadline: Option<Duration>,
    validate: Option<Validator>,
}

impl std::fmt::Debug for AppKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppKind")
            .field("name", &self.name)
            .field("retry", &self.retry)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl AppKind {
    /// Kind `name`, its jobs run by `handler`, with a plain notification's defaults.
    pub fn new(name: &'static str, handler: Arc<dyn Handler>) -> Self {
        AppKind {
            name,
            handler,
            retry: None,
            deadline: None,
            validate: None,
        }
    }

    /// The retry policy of its jobs when a request gives none.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The longest a job may take from its creation to its last attempt, waits included.
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// Check every payload enqueued for this kind: `Err(reason)` refuses the request, naming
    /// `payload` and the reason.
    pub fn validate(
        mut self,
        check: impl Fn(&serde_json::Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validate = Some(Arc::new(check));
        self
    }
}

#[async_trait::async_trait]
impl Kind for AppKind {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn request_payload(
        &self,
        _env: &RequestEnv<'_>,
        req: KindRequest<'_>,
    ) -> Result<serde_json::Value, OpsError> {
        req.refuse_foreign(self.name, None)?;
        let payload = super::check_payload(req.payload.cloned())?;
        if let Some(check) = &self.validate {
            check(&payload).map_err(|reason| OpsError::invalid("payload", reason))?;
        }
        Ok(payload)
    }

    fn default_retry(&self) -> RetryPolicy {
        self.retry.clone().unwrap_or_else(RetryPolicy::notification)
    }

    fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    fn handler(&self) -> Option<Arc<dyn Handler>> {
        Some(self.handler.clone())
    }
}

/// A known kind whose jobs another handler runs (a test's recorder, a benchmark's no-op): every
/// behaviour but the handler is the inner kind's.
pub(super) struct Handled {
    pub(super) inner: Arc<dyn Kind>,
    pub(super) handler: Arc<dyn Handler>,
}

#[async_trait::async_trait]
impl Kind for Handled {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn request_part(&self) -> Option<&'static str> {
        self.inner.request_part()
    }
    fn request_part_on_jobs(&self) -> bool {
        self.inner.request_part_on_jobs()
    }
    #[cfg(feature = "openapi")]
    fn request_part_schema(&self) -> Option<super::PartSchema> {
        self.inner.request_part_schema()
    }
    async fn request_accepted(
        &self,
        env: &RequestEnv<'_>,
        part: &serde_json::Value,
    ) -> Result<(), OpsError> {
        self.inner.request_accepted(env, part).await
    }
    async fn request_payload(
        &self,
        env: &RequestEnv<'_>,
        req: KindRequest<'_>,
    ) -> Result<serde_json::Value, OpsError> {
        self.inner.request_payload(env, req).await
    }
    fn default_retry(&self) -> RetryPolicy {
        self.inner.default_retry()
    }
    fn deadline(&self) -> Option<Duration> {
        self.inner.deadline()
    }
    fn job_deadline(&self, job: &Job) -> Option<Duration> {
        self.inner.job_deadline(job)
    }
    fn call_timeout(&self) -> Option<Duration> {
        self.inner.call_timeout()
    }
    fn endpoint(&self) -> EndpointUse {
        self.inner.endpoint()
    }
    fn topic(&self) -> TopicUse {
        self.inner.topic()
    }
    fn records_exposure(&self) -> bool {
        self.inner.records_exposure()
    }
    fn delivers_to_topic(&self) -> bool {
        self.inner.delivers_to_topic()
    }
    fn is_channel(&self) -> bool {
        self.inner.is_channel()
    }
    fn allows_catch_up(&self) -> bool {
        self.inner.allows_catch_up()
    }
    fn artifact_of(&self, s: &Schedule) -> Option<String> {
        self.inner.artifact_of(s)
    }
    fn handler(&self) -> Option<Arc<dyn Handler>> {
        Some(self.handler.clone())
    }
    // The replaced kind's own jobs go to this handler; what it ran instead of other kinds
    // (the email kind's webhook notifications) goes with its handler.
    fn runs_instead(&self, _job: &Job) -> Option<Arc<dyn Handler>> {
        None
    }
}
