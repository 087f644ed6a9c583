//! The `digest` kind: build one period's digest artifact from feeds and a summarizer, then its
//! follow-ups (the `digest.created` webhook, the fan-out to a topic). Its product is the
//! artifact, which catch-ups look for and the monitor expects; it has a 15-minute deadline.

pub mod handler;
pub mod request;

use super::TopicUse;
use super::{EndpointUse, Kind};
use kairos_core::RetryPolicy;
use kairos_core::budget::DEFAULT_CALL_TIMEOUT;
use kairos_store::Schedule;
use std::time::Duration;

/// The kind's name.
pub const NAME: &str = "digest";

/// The deadline of a digest run: 15 minutes from its firing to its last attempt.
pub const DEADLINE: Duration = Duration::from_secs(15 * 60);

/// The `digest` kind.
#[derive(Debug, Clone, Default)]
pub struct Digest {
    handler: super::HandlerSlot,
}

impl Digest {
    /// The kind with `handler` running its jobs on this node.
    pub fn running(handler: std::sync::Arc<dyn crate::handler::Handler>) -> Self {
        Self {
            handler: super::HandlerSlot::new(handler),
        }
    }
}

#[async_trait::async_trait]
impl Kind for Digest {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handler(&self) -> Option<std::sync::Arc<dyn crate::handler::Handler>> {
        self.handler.get()
    }

    fn request_part(&self) -> Option<&'static str> {
        Some(NAME)
    }

    // A schedule's definition is its `digest` object (a separate `payload` is refused); a job
    // enqueued on its own carries the definition, with its period, as its `payload`. Feed URLs
    // that plainly target a private address are refused at save time.
    async fn request_payload(
        &self,
        env: &super::RequestEnv<'_>,
        req: super::KindRequest<'_>,
    ) -> Result<serde_json::Value, crate::error::OpsError> {
        req.refuse_foreign(NAME, self.request_part())?;
        let default = self.default_retry();
        let retry = req.retry.unwrap_or(&default);
        let (payload, field) = match req.scope {
            super::RequestScope::Job => (
                request::job_payload(req.payload.cloned(), retry, env.digest_attempt_timeout)?,
                "payload",
            ),
            super::RequestScope::Schedule => (
                request::schedule_payload(
                    req.part::<handler::DigestSpec>(NAME)?.as_ref(),
                    req.payload.cloned(),
                    retry,
                    env.digest_attempt_timeout,
                )?,
                "digest",
            ),
        };
        request::check_feeds(env.allow_private_targets, &payload, field)?;
        Ok(payload)
    }

    // A digest job enqueued on its own carries its definition as its `payload`.
    fn request_part_on_jobs(&self) -> bool {
        false
    }

    #[cfg(feature = "openapi")]
    fn request_part_schema(&self) -> Option<super::PartSchema> {
        Some(super::PartSchema::of::<handler::DigestSpec>(
            "The digest to build, for kind `digest`: `{\"name\", \"feeds\": [url…],\n\"summarizer\"}`. It is the jobs' payload (feed URLs and a summarizer name: no secrets).",
        ))
    }

    fn topic(&self) -> TopicUse {
        TopicUse::FanOut
    }

    fn default_retry(&self) -> RetryPolicy {
        RetryPolicy::http_call()
    }

    fn deadline(&self) -> Option<Duration> {
        Some(DEADLINE)
    }

    fn call_timeout(&self) -> Option<Duration> {
        Some(DEFAULT_CALL_TIMEOUT)
    }

    // Where its `digest.created` events go; optional.
    fn endpoint(&self) -> EndpointUse {
        EndpointUse::Optional
    }

    // A digest builds an artifact; it does not deliver.
    fn is_channel(&self) -> bool {
        false
    }

    fn artifact_of(&self, s: &Schedule) -> Option<String> {
        s.payload
            .get("name")
            .and_then(|n| n.as_str())
            .map(str::to_string)
    }
}

/// The kind's entry in the built-in list.
pub(crate) const BUILTIN: super::Builtin = super::Builtin {
    describe: || Box::new(Digest::default()),
    running: |s| {
        let digester = kairos_channels::digest::Digester::new(s.digest.clone())?;
        let handler = handler::DigestHandler::new(s.store.clone(), s.clock.clone(), digester);
        Ok(Some(Box::new(Digest::running(std::sync::Arc::new(
            handler,
        )))))
    },
};
