//! Alert state and the alert webhook: a warning is sent once when it begins and a recovery
//! once when it clears, not at every run. The state lives in the store
//! (`slo_alerts`), so a restart or a new leader does not alert again.
//!
//! Sending is independent of the job queue on purpose: the queue may be what is broken (stuck
//! work), and an alert must not wait behind it. A transition not yet delivered (`seq >
//! notified_seq`) is sent again at the next run until the receiver answers 2xx; the
//! `webhook-id` (`slo:<key>:<seq>`) is the same on every try, so a receiver that deduplicates
//! sees it once.
//!
//! An operator can acknowledge the warning of a check in [`names::ACKABLE`] ([`ack`]): it
//! becomes a recovery like any other (sent once, `"acknowledged": true`), and the check does
//! not raise it again for what was there at that instant. A check that could not be evaluated
//! keeps its stored alerts as they are.

use super::{CheckResult, CheckStatus, names};
use chrono::{DateTime, SecondsFormat, Utc};
use kairos_channels::{WebhookSecret, WebhookSender};
use kairos_core::Outcome;
use kairos_store::{SloAlert, SloAlertAck, SloAlertPut, Store};
use std::collections::{HashMap, HashSet};

/// Where alerts go: a URL and a `whsec_` secret, signed like every kairos webhook (Standard
/// Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`).
#[derive(Clone)]
pub struct AlertSink {
    url: String,
    secret: WebhookSecret,
    sender: WebhookSender,
}

impl std::fmt::Debug for AlertSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a token in its query: only say that there is one.
        f.debug_struct("AlertSink").finish_non_exhaustive()
    }
}

impl AlertSink {
    /// A sink posting to `url`, signed with `secret` (`whsec_…`), through `sender` (whose
    /// config decides whether private addresses are allowed). Errors name the field
    /// `alert_webhook_url` or `alert_webhook_secret`.
    pub fn new(url: &str, secret: &str, sender: WebhookSender) -> Result<Self, kairos_core::Error> {
        let parsed = url::Url::parse(url).map_err(|e| {
            kairos_core::Error::invalid("alert_webhook_url", format!("not a valid URL: {e}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(kairos_core::Error::invalid(
                "alert_webhook_url",
                "must be an http or https URL",
            ));
        }
        let secret = WebhookSecret::parse(secret).map_err(|e| {
            kairos_core::Error::invalid("alert_webhook_secret", e.reason().to_string())
        })?;
        Ok(AlertSink {
            url: url.to_string(),
            secret,
            sender,
        })
    }

    /// Send one transition; true when the receiver answered 2xx.
    async fn send(&self, a: &SloAlert, subject: Option<&str>, now: DateTime<Utc>) -> bool {
        let msg_id = format!("slo:{}:{}", a.key, a.seq);
        let body = serde_json::json!({
            "type": if a.active { "slo.warning" } else { "slo.recovered" },
            "id": msg_id,
            "data": {
                "key": a.key,
                "check": a.check,
                "subject": subject,
                "status": if a.active { "warning" } else { "ok" },
                "since": a.since.to_rfc3339_opts(SecondsFormat::Millis, true),
                "message": a.message,
                "acknowledged": a.acked(),
            }
        })
        .to_string();
        match self
            .sender
            .send(&self.url, &self.secret, &msg_id, now, body.as_bytes())
            .await
        {
            Outcome::Delivered { .. } => true,
            Outcome::Failed(f) => {
                tracing::warn!(key = %a.key, class = f.class.as_str(), status = f.status_code,
                    "alert webhook not delivered; trying again at the next run");
                false
            }
            Outcome::Skipped(_) => false,
        }
    }
}

/// What one reconciliation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertChanges {
    /// Keys whose warning began.
    pub raised: Vec<String>,
    /// Keys whose warning cleared.
    pub cleared: Vec<String>,
    /// Transitions delivered to the alert webhook.
    pub notified: usize,
}

/// Compare the results with the stored alert states; record the transitions, log them, count
/// them, and deliver those not yet delivered.
pub(super) async fn reconcile(
    store: &dyn Store,
    sink: Option<&AlertSink>,
    results: &[CheckResult],
    now: DateTime<Utc>,
) -> Result<AlertChanges, kairos_store::Error> {
    let mut stored: HashMap<String, SloAlert> = store
        .slo_alert_list()
        .await?
        .into_iter()
        .map(|a| (a.key.clone(), a))
        .collect();
    let by_key: HashMap<String, &CheckResult> = results.iter().map(|r| (r.key(), r)).collect();
    // Checks that could not be evaluated as a whole: their subjects are unknown this run.
    let failed: HashSet<&str> = results
        .iter()
        .filter(|r| r.status == CheckStatus::Error && r.subject.is_none())
        .map(|r| r.check.as_str())
        .collect();
    let mut changes = AlertChanges::default();
    let mut changed: Vec<String> = Vec::new();
    for (key, r) in &by_key {
        if r.status != CheckStatus::Warning || stored.get(key).is_some_and(|a| a.active) {
            continue;
        }
        let prev = stored.get(key);
        let a = SloAlert {
            key: key.clone(),
            check: r.check.clone(),
            active: true,
            since: now,
            message: r.message.clone(),
            seq: prev.map_or(0, |p| p.seq) + 1,
            notified_seq: prev.map_or(0, |p| p.notified_seq),
            updated_at: now,
            // Kept: what was acknowledged before this warning stays acknowledged.
            acked_at: prev.and_then(|p| p.acked_at),
        };
        tracing::warn!(target: "kairos::slo", check = %r.check, key = %key, message = %r.message, "SLO warning");
        metrics::counter!(crate::telemetry::names::SLO_TRANSITIONS, "check" => r.check.clone(), "state" => "warning").increment(1);
        changes.raised.push(key.clone());
        changed.push(key.clone());
        stored.insert(key.clone(), a);
    }
    for (key, a) in stored.iter_mut() {
        let now_warning = by_key
            .get(key)
            .is_some_and(|r| matches!(r.status, CheckStatus::Warning | CheckStatus::Error));
        if !a.active || now_warning || failed.contains(a.check.as_str()) {
            continue;
        }
        // Cleared: the check passes now, has too little data, or no longer applies (its
        // schedule was deleted or paused, the check was disabled).
        a.active = false;
        a.since = now;
        a.message = match by_key.get(key) {
            Some(r) => r.message.clone(),
            None => "cleared: no longer measured (no data in the window, the subject is gone, or the check is off)".to_string(),
        };
        a.seq += 1;
        a.updated_at = now;
        tracing::info!(target: "kairos::slo", check = %a.check, key = %key, "SLO warning cleared");
        metrics::counter!(crate::telemetry::names::SLO_TRANSITIONS, "check" => a.check.clone(), "state" => "ok").increment(1);
        changes.cleared.push(key.clone());
        changed.push(key.clone());
    }
    for key in &changed {
        if let Some(a) = stored.get_mut(key) {
            if sink.is_none() {
                // Nothing to deliver to: a sink configured later starts from here, instead of
                // replaying old transitions.
                a.notified_seq = a.seq;
            }
            store
                .slo_alert_put(SloAlertPut { alert: a.clone() })
                .await?;
        }
    }
    let Some(sink) = sink else {
        return Ok(changes);
    };
    let mut pending: Vec<&mut SloAlert> = stored
        .values_mut()
        .filter(|a| a.seq > a.notified_seq)
        .collect();
    pending.sort_by(|a, b| a.key.cmp(&b.key));
    for a in pending {
        let subject = by_key
            .get(&a.key)
            .and_then(|r| r.subject.clone())
            .or_else(|| a.key.split_once(':').map(|(_, s)| s.to_string()));
        if sink.send(a, subject.as_deref(), now).await {
            a.notified_seq = a.seq;
            a.updated_at = now;
            store
                .slo_alert_put(SloAlertPut { alert: a.clone() })
                .await?;
            changes.notified += 1;
        }
    }
    Ok(changes)
}

/// Why an alert could not be acknowledged.
#[derive(Debug)]
pub enum AckError {
    /// No alert has this id.
    Unknown,
    /// The alert's check recovers on its own when its measure falls (a rate, stuck work):
    /// there is nothing to acknowledge. Holds the check's name.
    NotAckable(String),
    /// The store did not answer.
    Store(kairos_store::Error),
}

impl std::fmt::Display for AckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AckError::Unknown => f.write_str("no SLO alert has this id"),
            AckError::NotAckable(check) => write!(
                f,
                "{check} warnings recover on their own when the measure falls; only {} warnings can be acknowledged",
                names::ACKABLE.join(" and ")
            ),
            AckError::Store(e) => write!(f, "the store did not answer: {e}"),
        }
    }
}

impl std::error::Error for AckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AckError::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// Acknowledge the alert `key` (its id) at `now`: an active warning of an ackable check becomes
/// a recovery, delivered to the alert webhook at the monitor's next run; an alert that is not
/// active is answered as it is. The alert's state afterwards.
pub async fn ack(store: &dyn Store, key: &str, now: DateTime<Utc>) -> Result<SloAlert, AckError> {
    let stored = store.slo_alert_list().await.map_err(AckError::Store)?;
    let Some(a) = stored.into_iter().find(|a| a.key == key) else {
        return Err(AckError::Unknown);
    };
    if !names::ACKABLE.contains(&a.check.as_str()) {
        return Err(AckError::NotAckable(a.check));
    }
    if !a.active {
        return Ok(a);
    }
    let message = format!(
        "acknowledged at {}; was: {}",
        now.to_rfc3339_opts(SecondsFormat::Millis, true),
        a.message
    );
    let acked = store
        .slo_alert_ack(SloAlertAck {
            key: key.to_string(),
            at: now,
            message,
        })
        .await
        .map_err(AckError::Store)?
        .ok_or(AckError::Unknown)?;
    if acked.acked() {
        tracing::info!(target: "kairos::slo", check = %acked.check, key = %key, "SLO warning acknowledged");
        metrics::counter!(crate::telemetry::names::SLO_TRANSITIONS, "check" => acked.check.clone(), "state" => "ok").increment(1);
    }
    Ok(acked)
}

/// The stored alerts of `check`, by subject: what an ackable check reads to keep a warning
/// until it is fixed and to leave out what was acknowledged.
pub(super) async fn stored_of(
    store: &dyn Store,
    check: &str,
) -> Result<HashMap<String, SloAlert>, kairos_store::Error> {
    Ok(store
        .slo_alert_list()
        .await?
        .into_iter()
        .filter(|a| a.check == check)
        .filter_map(|a| Some((a.key.split_once(':')?.1.to_string(), a)))
        .collect())
}

/// Where an ackable check looks back from for one subject: its window before `now`, or —
/// while its warning is active — its window before the warning began, so that what it warned
/// about is still seen until fixed, however long that takes. Anything due at or before
/// `acked_at` was acknowledged and is left out by the caller.
pub(super) fn lookback(
    alert: Option<&SloAlert>,
    now: DateTime<Utc>,
    window: chrono::Duration,
) -> DateTime<Utc> {
    match alert {
        Some(a) if a.active => (now - window).min(a.since - window),
        _ => now - window,
    }
}
