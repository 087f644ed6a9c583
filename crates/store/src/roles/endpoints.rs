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
    /// Enable an endpoint again (clear `disabled_at` and its reason, and reset its failure
    /// streak); `None` if it does not exist. Jobs skipped while it was disabled stay skipped.
    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>>;
    /// Record the latest failed send to an endpoint; an unknown id changes nothing.
    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()>;
    /// Fold the attempts of webhook jobs recorded since the last flush (up to
    /// `settled_before`, at most `limit`) into their endpoints' streaks and hourly counters,
    /// and move the cursor past them, in one transaction. Only `succeeded` and `failed`
    /// attempts are sends; others move the cursor and count for nothing.
    async fn endpoint_health_flush(&self, p: EndpointHealthFlush) -> Result<EndpointHealthFlushed>;
    /// Attempts and failures per endpoint from the hourly counters since `p.since`; an
    /// endpoint without any has no entry.
    async fn endpoint_health_counts(
        &self,
        p: EndpointHealthCounts,
    ) -> Result<Vec<EndpointHealthCount>>;
    /// Disable the enabled endpoints whose streak reached `min_failures` and began at or
    /// before `failing_before`, with reason `failure_streak`. Returns their ids.
    async fn endpoint_streak_disable(&self, p: EndpointStreakDisable) -> Result<Vec<String>>;
    /// Rotate an endpoint's secret: the new one becomes `secret` (sealed and hashed as on
    /// creation), the current one becomes the previous secret until `previous_expires_at`
    /// (stored as it was, sealed). `None` if the endpoint does not exist; a `Conflict` error
    /// if another endpoint already has the same URL and new secret (nothing changes).
    async fn endpoint_secret_rotate(&self, p: EndpointSecretRotate) -> Result<Option<Endpoint>>;
    /// Set an endpoint's limits (rate and in-flight; none: remove them). Its limits after,
    /// `None` if the endpoint does not exist.
    async fn endpoint_limits_set(
        &self,
        p: crate::flow::EndpointLimitsSet,
    ) -> Result<Option<crate::flow::EndpointLimits>>;
    /// The limits of endpoints, one entry per id in order, with how many due deliveries wait
    /// on them.
    async fn endpoint_limits_list(
        &self,
        ids: Vec<String>,
    ) -> Result<Vec<crate::flow::EndpointLimits>>;
    /// Set the limits of an origin that `http` jobs call (rate and in-flight; none: remove
    /// them): the limits saved last hold. Its limits after.
    async fn host_limits_set(
        &self,
        p: crate::flow::HostLimitsSet,
    ) -> Result<crate::flow::HostLimits>;
    /// The limits of origins, one entry per origin in order (limits or not), with how many due
    /// calls wait on them.
    async fn host_limits_list(&self, origins: Vec<String>) -> Result<Vec<crate::flow::HostLimits>>;
    /// Store an HTTP call target, or return the existing one with the same fingerprint.
    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget>;
    /// An HTTP call target by id.
    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>>;
}
