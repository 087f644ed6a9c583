//! Operations of the inbound issue: receiving provider events, the
//! suppression list, the one-click unsubscribe and maintenance mode.
//! Shared by the API and the CLI. Nothing here logs an address.

use super::Kairos;
use crate::error::OpsError;
use crate::inbound::classify;
use chrono::{DateTime, Utc};
use kairos_store::*;
use serde::{Deserialize, Serialize};

/// Longest accepted source name, event id, reason.
const MAX_ID: usize = 200;
/// Longest accepted address (RFC 5321's path limit, rounded up).
const MAX_ADDRESS: usize = 320;

/// A suppression to add (`POST /v1/suppressions`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = SuppressionBody))]
#[serde(deny_unknown_fields)]
pub struct NewSuppression {
    /// The address never to mail again (stored trimmed and lowercase).
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 320,
            pattern = r#"^[^\s\x00-\x1f\x7f-\x9f@]+@[^\s\x00-\x1f\x7f-\x9f@]+$"#
        )
    )]
    pub email: String,
    /// Why (default `manual`); not blank, at most 200 bytes, no control characters.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
        )
    )]
    pub reason: Option<String>,
}

/// Why a suppression is removed (`DELETE /v1/suppressions/{address}?reason=…`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct RemoveSuppression {
    /// Recorded in the suppression log (default `manual removal`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// What receiving an inbound event did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InboundReceipt {
    /// `false`: a repeat of an event already received; nothing changed.
    pub created: bool,
    /// The event type.
    pub event_type: String,
    /// `suppressed`, `recorded` or `unknown` (of the first delivery).
    pub action: String,
    /// The job whose send the event is about, if it was matched.
    pub job_id: Option<String>,
}

/// Maintenance mode (`kairos maintenance status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MaintenanceStatus {
    /// On for this node.
    pub on: bool,
    /// Forced by configuration (`KAIROS_MAINTENANCE`).
    pub forced: bool,
    /// Set in the database (`kairos maintenance on`).
    pub stored: bool,
    /// Since when the stored setting is on.
    pub since: Option<DateTime<Utc>>,
}

fn check_text(field: &str, v: &str, max: usize) -> Result<String, OpsError> {
    let v = v.trim();
    if v.is_empty() {
        return Err(OpsError::invalid(field, "must not be empty"));
    }
    if v.len() > max || v.chars().any(char::is_control) {
        return Err(OpsError::invalid(
            field,
            format!("must be at most {max} bytes without control characters"),
        ));
    }
    Ok(v.to_string())
}

fn check_address(v: &str) -> Result<String, OpsError> {
    let a = check_text("email", v, MAX_ADDRESS)?;
    match a.split_once('@') {
        Some((local, domain)) if !local.is_empty() && !domain.is_empty() && !a.contains(' ') => {
            Ok(normalize_address(&a))
        }
        // The message does not repeat the value: it is personal data.
        _ => Err(OpsError::invalid("email", "is not an email address")),
    }
}

impl Kairos {
    /// Store a verified provider event once and act on it (suppression and cascade) in one
    /// transaction; a repeat of `event_id` from `source` changes nothing.
    pub async fn inbound_receive(
        &self,
        source: &str,
        event_id: &str,
        body: &[u8],
    ) -> Result<InboundReceipt, OpsError> {
        let source = check_text("source", source, MAX_ID)?;
        let id = check_text("event_id", event_id, MAX_ID)?;
        let c = classify(body);
        let r = self
            .store
            .inbound_event_record(InboundEventRecord {
                source: source.clone(),
                id: id.clone(),
                event_type: c.event_type.clone(),
                provider_message_id: c.provider_message_id,
                action: c.action.clone(),
                payload: c.payload,
                suppress: c.suppress,
                reason: c.reason,
                now: self.clock.now(),
            })
            .await?;
        // Ids and counts only: never an address.
        tracing::info!(source = %source, event_id = %id, event_type = %c.event_type,
            action = %c.action, created = r.created, job_id = ?r.job_id,
            suppressions_created = r.suppressions_created,
            subscriptions_disabled = r.subscriptions_disabled, "inbound event");
        crate::telemetry::inbound_event(
            &source,
            &c.event_type,
            if r.created { &c.action } else { "duplicate" },
        );
        let action = if r.created {
            c.action
        } else {
            self.store
                .inbound_event_get(&source, &id)
                .await?
                .map(|e| e.action)
                .unwrap_or(c.action)
        };
        Ok(InboundReceipt {
            created: r.created,
            event_type: c.event_type,
            action,
            job_id: r.job_id,
        })
    }

    /// The suppression list by address after `after`, at most `limit` (1 to 1000, default
    /// 100).
    pub async fn suppression_list(
        &self,
        after: Option<String>,
        limit: Option<i64>,
    ) -> Result<Vec<Suppression>, OpsError> {
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be 1 to 1000"));
        }
        Ok(self
            .store
            .suppression_list(SuppressionList {
                after: after.map(|a| normalize_address(&a)),
                limit: Some(limit.unwrap_or(100)),
            })
            .await?)
    }

    /// Suppress an address by hand, with the cascade to its subscriptions. Returns
    /// the suppression (the first reason stays if it was suppressed already) and what changed.
    pub async fn suppression_add(
        &self,
        s: NewSuppression,
    ) -> Result<(Suppression, SuppressionApplied), OpsError> {
        let address = check_address(&s.email)?;
        let reason = match &s.reason {
            Some(r) => check_text("reason", r, MAX_ID)?,
            None => "manual".into(),
        };
        let applied = self
            .store
            .suppression_apply(SuppressionApply {
                address: address.clone(),
                reason,
                source_event_id: None,
                now: self.clock.now(),
            })
            .await?;
        let sup = self
            .store
            .suppression_get(&address)
            .await?
            .ok_or_else(|| OpsError::not_found("suppression", "(the address)"))?;
        tracing::info!(
            created = applied.created,
            subscriptions_disabled = applied.subscriptions_disabled,
            "suppression added"
        );
        Ok((sup, applied))
    }

    /// Take an address off the suppression list, recording why. Not found if it was not on
    /// it. Its subscriptions stay disabled.
    pub async fn suppression_remove(
        &self,
        address: &str,
        r: RemoveSuppression,
    ) -> Result<(), OpsError> {
        let address = check_address(address)?;
        let reason = match &r.reason {
            Some(r) => check_text("reason", r, MAX_ID)?,
            None => "manual removal".into(),
        };
        let removed = self
            .store
            .suppression_remove(SuppressionRemove {
                address,
                reason,
                now: self.clock.now(),
            })
            .await?;
        if !removed {
            return Err(OpsError::not_found("suppression", "(the address)"));
        }
        tracing::info!("suppression removed");
        Ok(())
    }

    /// Unsubscribe a recipient from a topic (a verified one-click token). `true` if
    /// this changed something; `false` if it was unsubscribed already (or never subscribed).
    pub async fn unsubscribe(&self, recipient_id: &str, topic: &str) -> Result<bool, OpsError> {
        let changed = self
            .store
            .subscription_disable(SubscriptionDisable {
                recipient_id: recipient_id.to_string(),
                topic: topic.to_string(),
                now: self.clock.now(),
            })
            .await?;
        tracing::info!(recipient_id = %recipient_id, topic = %topic, changed, "one-click unsubscribe");
        Ok(changed)
    }

    /// Maintenance mode as stored and as this node sees it.
    pub async fn maintenance_status(&self) -> Result<MaintenanceStatus, OpsError> {
        let s = self.store.setting_get(SETTING_MAINTENANCE).await?;
        let stored = s.as_ref().is_some_and(|s| s.value == "on");
        self.maintenance.set_stored(stored);
        Ok(MaintenanceStatus {
            on: self.maintenance.is_on(),
            forced: self.maintenance.forced(),
            stored,
            since: s.filter(|_| stored).map(|s| s.updated_at),
        })
    }

    /// Turn the stored maintenance setting on or off; every node follows within its poll
    /// interval, this one at once.
    pub async fn maintenance_set(&self, on: bool) -> Result<MaintenanceStatus, OpsError> {
        self.store
            .setting_put(SettingPut {
                name: SETTING_MAINTENANCE.into(),
                value: on.then(|| "on".to_string()),
                now: self.clock.now(),
            })
            .await?;
        self.maintenance_status().await
    }
}
