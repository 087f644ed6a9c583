//! The `http` kind: one HTTP call described by a stored target (`http_targets`), retried like
//! an API call, with a per-call timeout and an optional deadline from the request.

pub mod handler;
pub mod request;

use super::Kind;
use kairos_core::RetryPolicy;
use kairos_core::budget::DEFAULT_CALL_TIMEOUT;
use serde::Deserialize;
use std::time::Duration;

pub use request::{
    DEADLINE_KEY, HTTP_ORIGIN_KEY, HTTP_TARGET_KEY, HttpSpec, declared_limits, origin_of_payload,
    origin_of_url,
};

/// The kind's name.
pub const NAME: &str = "http";

/// The `http` kind.
#[derive(Debug, Clone, Default)]
pub struct Http {
    handler: super::HandlerSlot,
}

impl Http {
    /// The kind with `handler` running its jobs on this node.
    pub fn running(handler: std::sync::Arc<dyn crate::handler::Handler>) -> Self {
        Self {
            handler: super::HandlerSlot::new(handler),
        }
    }
}

#[async_trait::async_trait]
impl Kind for Http {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handler(&self) -> Option<std::sync::Arc<dyn crate::handler::Handler>> {
        self.handler.get()
    }

    fn request_part(&self) -> Option<&'static str> {
        Some(NAME)
    }

    // The request is its `http` object: validated, its budget checked, stored as a target;
    // the payload names the target (`payload` is the body's template input, kept as given).
    async fn request_payload(
        &self,
        env: &super::RequestEnv<'_>,
        req: super::KindRequest<'_>,
    ) -> Result<serde_json::Value, crate::error::OpsError> {
        req.refuse_foreign(NAME, self.request_part())?;
        let spec: Option<HttpSpec> = req.part(NAME)?;
        let base = super::check_payload(req.payload.cloned())?;
        request::payload(env, self, spec.as_ref(), base, req.retry).await
    }

    #[cfg(feature = "openapi")]
    fn request_part_schema(&self) -> Option<super::PartSchema> {
        Some(super::PartSchema::of::<HttpSpec>(
            "What an `http` job (each firing, a channel's jobs) calls: `{\"url\", \"method\", \"headers\",\n\"body\", \"timeout\", \"deadline\", \"bearer_token\" | \"signing_secret\"}`.",
        ))
    }

    // Every check passed and the job or schedule is accepted: the limits the `http` object
    // names are its origin's now.
    async fn request_accepted(
        &self,
        env: &super::RequestEnv<'_>,
        part: &serde_json::Value,
    ) -> Result<(), crate::error::OpsError> {
        let spec = HttpSpec::deserialize(part)
            .map_err(|e| crate::error::OpsError::malformed(NAME, format!("`{NAME}`: {e}")))?;
        request::limits_apply(env, &spec).await
    }

    fn default_retry(&self) -> RetryPolicy {
        RetryPolicy::http_call()
    }

    fn call_timeout(&self) -> Option<Duration> {
        Some(DEFAULT_CALL_TIMEOUT)
    }

    fn job_deadline(&self, job: &kairos_core::Job) -> Option<Duration> {
        deadline_of(job).or_else(|| self.deadline())
    }
}

/// The `http.deadline` an `http` job carries in its payload (milliseconds); a value that is
/// not a positive integer is no deadline.
pub fn deadline_of(job: &kairos_core::Job) -> Option<Duration> {
    job.payload
        .get(DEADLINE_KEY)
        .and_then(|v| v.as_u64())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}

/// The kind's entry in the built-in list: private targets as the webhook setting says
/// (`KAIROS_ALLOW_PRIVATE_TARGETS`).
pub(crate) const BUILTIN: super::Builtin = super::Builtin {
    describe: || Box::new(Http::default()),
    running: |s| {
        let caller = kairos_channels::HttpCaller::new(kairos_channels::HttpCallConfig {
            allow_private_targets: s.webhook.allow_private_targets,
            ..Default::default()
        })?;
        let handler = handler::HttpHandler::new(s.store.clone(), caller);
        Ok(Some(Box::new(Http::running(std::sync::Arc::new(handler)))))
    },
};
