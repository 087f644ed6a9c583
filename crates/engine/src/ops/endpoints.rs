//! Webhook endpoints (issue 13): list them with their disabled state and last failure, and
//! enable one again after it was disabled by an HTTP 410. Shared by the API and the CLI.
//!
//! An endpoint is the (URL, secret) pair jobs post to; creating a job or schedule with the
//! same pair reuses the row, **disabled or not**: a disabled endpoint stays disabled until it
//! is enabled here, and the responses that name it show its `disabled_at`.

use super::Kairos;
use crate::error::OpsError;
use kairos_store::{Endpoint, EndpointEnable, EndpointList};

impl Kairos {
    /// Endpoints by id after `after`, at most `limit` (1 to 1000, default 100); with
    /// `disabled`, only the disabled (`true`) or the enabled (`false`) ones.
    pub async fn endpoint_list(
        &self,
        after: Option<String>,
        disabled: Option<bool>,
        limit: Option<i64>,
    ) -> Result<Vec<Endpoint>, OpsError> {
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be 1 to 1000"));
        }
        Ok(self
            .store
            .endpoint_list(EndpointList {
                after,
                disabled,
                limit: Some(limit.unwrap_or(100)),
            })
            .await?)
    }

    /// An endpoint by id.
    pub async fn endpoint_get(&self, id: &str) -> Result<Endpoint, OpsError> {
        self.store
            .endpoint_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("endpoint", id))
    }

    /// Enable an endpoint again: later jobs to it are sent. Jobs skipped (`endpoint_disabled`)
    /// while it was disabled stay skipped; retry them one by one if they are still wanted.
    /// Enabling an enabled endpoint changes nothing.
    pub async fn endpoint_enable(&self, id: &str) -> Result<Endpoint, OpsError> {
        let ep = self
            .store
            .endpoint_enable(EndpointEnable { id: id.to_string() })
            .await?
            .ok_or_else(|| OpsError::not_found("endpoint", id))?;
        tracing::info!(endpoint_id = %ep.id, "endpoint enabled");
        Ok(ep)
    }
}
