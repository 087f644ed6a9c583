//! The `endpoint_disabled` check: one warning per disabled webhook endpoint — after a
//! sustained failure streak (reason `failure_streak`) or by its receiver's 410 Gone — until it
//! is enabled again, when the alert recovers. A 410 is the receiver's own request, but its
//! jobs are skipped from then on: an operator must know (issue 36).

use super::{CheckResult, CheckStatus, names};
use chrono::{DateTime, Utc};
use kairos_store::{EndpointList, FAILURE_STREAK, Store};

/// Most disabled endpoints examined per run (by id).
pub const MAX_DISABLED_ENDPOINTS: usize = 1000;

/// Disabled endpoints: after a failure streak, or by a 410.
pub(super) async fn endpoint_disabled(
    store: &dyn Store,
    _now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let mut out = Vec::new();
    let mut after = None;
    let mut seen = 0;
    while seen < MAX_DISABLED_ENDPOINTS {
        let page = store
            .endpoint_list(EndpointList {
                after: after.clone(),
                disabled: Some(true),
                limit: Some(200),
            })
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        seen += page.len();
        let full = page.len() == 200;
        for e in page {
            // Never the URL: it may carry credentials.
            let text = if e.disabled_reason.as_deref() == Some(FAILURE_STREAK) {
                let since = e
                    .health
                    .failing_since
                    .map(|t| format!(" failing since {}", t.to_rfc3339()))
                    .unwrap_or_default();
                format!(
                    "endpoint {} disabled after {} consecutive failed sends{since}; its jobs are skipped until it is enabled again",
                    e.id, e.health.consecutive_failures
                )
            } else {
                let at = e
                    .disabled_at
                    .map(|t| format!(" at {}", t.to_rfc3339()))
                    .unwrap_or_default();
                format!(
                    "endpoint {} disabled by its receiver ({}){at}; its jobs are skipped until it is enabled again",
                    e.id,
                    e.disabled_reason.as_deref().unwrap_or("no reason recorded")
                )
            };
            let mut r = CheckResult::new(
                names::ENDPOINT_DISABLED,
                Some(e.id),
                CheckStatus::Warning,
                text,
            );
            r.value = Some(e.health.consecutive_failures as f64);
            out.push(r);
        }
        if !full {
            break;
        }
    }
    Ok(out)
}
