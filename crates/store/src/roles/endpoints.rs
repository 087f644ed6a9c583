//! Where jobs are sent: webhook endpoints and HTTP call targets.

use crate::*;
use async_trait::async_trait;

/// Webhook endpoints (with their disabled state and last failure) and HTTP call targets.
/// Secrets are sealed at rest when the store has a sealer.
#[async_trait]
pub trait EndpointStore: Send + Sync {
    /// Create a webhook endpoint, or return the existing one with the same URL and secret.
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint>;
    /// An endpoint by id.
    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>>;
    /// Endpoints by id after `after`, optionally only disabled (or only enabled) ones.
    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>>;
    /// Disable an endpoint (HTTP 410); later jobs to it are skipped.
    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()>;
    /// Enable an endpoint again (clear `disabled_at` and its reason); `None` if it does not
    /// exist. Jobs skipped while it was disabled stay skipped.
    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>>;
    /// Record the latest failed send to an endpoint; an unknown id changes nothing.
    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()>;
    /// Store an HTTP call target, or return the existing one with the same fingerprint.
    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget>;
    /// An HTTP call target by id.
    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>>;
}
