//! Handlers run jobs. A handler returns an [`Outcome`]; it never needs to throw: a panic is
//! caught by the executor and recorded as a failure.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::{Job, Outcome};
use std::time::Duration;

/// What a handler is told besides the job.
#[derive(Debug, Clone)]
pub struct JobContext {
    /// The instant the attempt started (from the engine's clock).
    pub now: DateTime<Utc>,
    /// The node running it.
    pub node: String,
}

/// Runs jobs of one kind.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Run one attempt of `job`.
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome;
    /// The hard limit of one attempt; past it the attempt is a transient failure.
    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
}
