//! Handlers run jobs. A handler returns an [`Outcome`]; it never needs to throw: a panic is
//! caught by the executor and recorded as a failure.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::{Job, Outcome};
use std::collections::HashMap;
use std::sync::Arc;
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

/// Handlers by kind name.
#[derive(Clone, Default)]
pub struct HandlerRegistry {
    handlers: HashMap<String, Arc<dyn Handler>>,
}

impl HandlerRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
    /// Register `handler` for `kind` (replacing any earlier one).
    pub fn register(&mut self, kind: &str, handler: Arc<dyn Handler>) -> &mut Self {
        self.handlers.insert(kind.to_string(), handler);
        self
    }
    /// The handler of `kind`.
    pub fn get(&self, kind: &str) -> Option<&Arc<dyn Handler>> {
        self.handlers.get(kind)
    }
    /// The registered kinds, sorted.
    pub fn kinds(&self) -> Vec<String> {
        let mut k: Vec<_> = self.handlers.keys().cloned().collect();
        k.sort();
        k
    }
}

impl std::fmt::Debug for HandlerRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistry")
            .field("kinds", &self.kinds())
            .finish()
    }
}
