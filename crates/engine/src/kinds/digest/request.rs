//! The `digest` kind's request: the `digest` definition of a schedule, or the payload of a
//! digest job enqueued directly, validated, and its retry policy checked against the kind's
//! deadline.

use super::handler::DigestSpec;
use super::{DEADLINE, NAME};
use crate::error::OpsError;

use kairos_core::RetryPolicy;

/// A digest's retry policy must fit the kind's deadline (15 min) with what one attempt
/// can really take on this node (feed timeout + model timeout + 5 s, 155 s by default); the
/// error shows the arithmetic.
fn check_budget(retry: &RetryPolicy, attempt: std::time::Duration) -> Result<(), OpsError> {
    kairos_core::budget::check_budget_without_retry_after(retry, attempt, Some(DEADLINE))?;
    Ok(())
}

/// Refuse feed URLs of a digest `payload` that plainly target a private or loopback
/// address, unless private targets are allowed — the save-time check webhook URLs get
/// (the send-time guard resolves names and is authoritative). `prefix` is the field the
/// definition came in (`digest`, `payload`).
pub fn check_feeds(
    allow_private_targets: bool,
    payload: &serde_json::Value,
    prefix: &str,
) -> Result<(), OpsError> {
    if allow_private_targets {
        return Ok(());
    }
    let feeds = payload.get("feeds").and_then(|f| f.as_array());
    for (i, f) in feeds.into_iter().flatten().enumerate() {
        let Some(url) = f.as_str().and_then(|u| url::Url::parse(u).ok()) else {
            continue;
        };
        if kairos_channels::ssrf::is_obviously_private(&url) {
            return Err(OpsError::invalid(
                format!("{prefix}.feeds[{i}]"),
                "targets a private or loopback address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow",
            ));
        }
    }
    Ok(())
}

/// A digest schedule's payload: the validated `digest` definition (required; a separate
/// `payload` is refused).
pub fn schedule_payload(
    digest: Option<&DigestSpec>,
    payload: Option<serde_json::Value>,
    retry: &RetryPolicy,
    attempt_timeout: std::time::Duration,
) -> Result<serde_json::Value, OpsError> {
    match digest {
        Some(d) => {
            if payload.is_some() {
                return Err(OpsError::invalid(
                    "payload",
                    "not for kind \"digest\": the \"digest\" definition is its payload",
                ));
            }
            let spec = d.validate()?;
            if spec.period.is_some() {
                return Err(OpsError::invalid(
                    "digest.period",
                    "only for a digest job outside a schedule: a schedule's jobs carry \
                     their period",
                ));
            }
            check_budget(retry, attempt_timeout)?;
            Ok(spec.to_payload())
        }
        None => Err(OpsError::invalid(
            "digest",
            format!("required for kind {NAME:?}: {{\"name\", \"feeds\": [url…], \"summarizer\"}}"),
        )),
    }
}

/// The payload of a directly enqueued job: for `digest`, the payload must be a digest
/// definition with its `period` (a job outside a schedule has no period of its own).
pub fn job_payload(
    payload: Option<serde_json::Value>,
    retry: &RetryPolicy,
    attempt_timeout: std::time::Duration,
) -> Result<serde_json::Value, OpsError> {
    check_budget(retry, attempt_timeout)?;
    let p = payload.unwrap_or_default();
    let spec: DigestSpec = serde_json::from_value(p).map_err(|e| {
        OpsError::invalid(
            "payload",
            format!(
                "a digest job's payload is {{\"name\", \"feeds\", \"summarizer\", \"period\"}}: {e}"
            ),
        )
    })?;
    let spec = spec
        .validate()
        .map_err(|e| OpsError::invalid(e.field().replace("digest.", "payload."), e.reason()))?;
    if spec.period.is_none() {
        return Err(OpsError::invalid(
            "payload.period",
            "required for a digest job outside a schedule (e.g. \"2026-10-20\")",
        ));
    }
    Ok(spec.to_payload())
}
