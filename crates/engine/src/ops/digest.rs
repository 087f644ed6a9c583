//! The facade's digest, catch-up and artifact operations (S4-1, S4-4, S4-5): validation shared
//! by the API and the CLI.

use super::{Kairos, tz_of};
use crate::catch_up;
use crate::error::OpsError;
use crate::handlers::digest::{DigestSpec, valid_key};
use kairos_core::budget;
use kairos_core::{JobKind, RetryPolicy};
use kairos_store::{Artifact, ArtifactKey, ArtifactList, CatchUp, CatchUpSet, Schedule};

/// A digest's retry policy must fit the kind's deadline (15 min) with what one attempt
/// can really take on this node (feed timeout + model timeout + 5 s, 155 s by default); the
/// error shows the arithmetic.
fn check_digest_budget(retry: &RetryPolicy, attempt: std::time::Duration) -> Result<(), OpsError> {
    budget::check_budget(retry, attempt, budget::kind_deadline("digest"))?;
    Ok(())
}

impl Kairos {
    /// Refuse feed URLs of a digest `payload` that plainly target a private or loopback
    /// address, unless private targets are allowed — the save-time check webhook URLs get
    /// (the send-time guard resolves names and is authoritative). `prefix` is the field the
    /// definition came in (`digest`, `payload`).
    pub(super) fn check_digest_feeds(
        &self,
        kind: &JobKind,
        payload: &serde_json::Value,
        prefix: &str,
    ) -> Result<(), OpsError> {
        if kind.as_str() != "digest" || self.allow_private_targets {
            return Ok(());
        }
        let feeds = payload.get("feeds").and_then(|f| f.as_array());
        for (i, f) in feeds.into_iter().flatten().enumerate() {
            let Some(url) = f.as_str().and_then(|u| url::Url::parse(u).ok()) else {
                continue;
            };
            if super::is_obviously_private(&url) {
                return Err(OpsError::invalid(
                    format!("{prefix}.feeds[{i}]"),
                    "targets a private or loopback address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow",
                ));
            }
        }
        Ok(())
    }

    /// A schedule's or job's payload by kind: for `digest`, the validated `digest` definition
    /// (a separate `payload` is refused); for other kinds, `payload` (and `digest` is refused).
    pub(super) fn kind_payload(
        &self,
        kind: &JobKind,
        digest: Option<&DigestSpec>,
        payload: Option<serde_json::Value>,
        retry: Option<&RetryPolicy>,
    ) -> Result<serde_json::Value, OpsError> {
        match (kind.as_str(), digest) {
            ("digest", Some(d)) => {
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
                let default = RetryPolicy::default_for_kind("digest");
                check_digest_budget(retry.unwrap_or(&default), self.digest_attempt_timeout)?;
                Ok(spec.to_payload())
            }
            ("digest", None) => Err(OpsError::invalid(
                "digest",
                "required for kind \"digest\": {\"name\", \"feeds\": [url…], \"summarizer\"}",
            )),
            (other, Some(_)) => Err(OpsError::invalid(
                "digest",
                format!("only for kind \"digest\", not {other:?}"),
            )),
            _ => Self::check_payload(payload),
        }
    }

    /// The payload of a directly enqueued job: for `digest`, the payload must be a digest
    /// definition with its `period` (a job outside a schedule has no period of its own).
    pub(super) fn job_payload(
        &self,
        kind: &JobKind,
        payload: Option<serde_json::Value>,
        retry: &RetryPolicy,
    ) -> Result<serde_json::Value, OpsError> {
        if kind.as_str() != "digest" {
            return Self::check_payload(payload);
        }
        check_digest_budget(retry, self.digest_attempt_timeout)?;
        let p = payload.unwrap_or_default();
        let spec: DigestSpec = serde_json::from_value(p).map_err(|e| {
            OpsError::invalid(
                "payload",
                format!("a digest job's payload is {{\"name\", \"feeds\", \"summarizer\", \"period\"}}: {e}"),
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

    /// Replace the catch-up times of `s` (already validated), each next due at its first
    /// instant after now.
    pub(super) async fn catch_up_set(
        &self,
        s: &Schedule,
        times: &[String],
    ) -> Result<(), OpsError> {
        let tz = tz_of(s)?;
        let now = self.clock.now();
        let entries = times
            .iter()
            .map(|t| CatchUp {
                schedule_id: s.id.clone(),
                at: t.clone(),
                next_at: catch_up::next_after(tz, t, now),
            })
            .collect();
        self.store
            .catch_up_set(CatchUpSet {
                schedule_id: s.id.clone(),
                entries,
            })
            .await?;
        Ok(())
    }

    /// The catch-up times of a schedule with their next instants.
    pub async fn schedule_catch_ups(&self, id: &str) -> Result<Vec<CatchUp>, OpsError> {
        Ok(self.store.catch_up_list(id).await?)
    }

    /// Artifacts, newest period first: all, or those of `name`.
    pub async fn artifact_list(
        &self,
        name: Option<&str>,
        before_period: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Vec<Artifact>, OpsError> {
        if let Some(n) = name
            && !valid_key(n, 200)
        {
            return Err(OpsError::invalid("name", "is not a valid artifact name"));
        }
        if let Some(p) = before_period
            && !valid_key(p, 64)
        {
            return Err(OpsError::invalid("before", "is not a valid period key"));
        }
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be between 1 and 1000"));
        }
        Ok(self
            .store
            .artifact_list(ArtifactList {
                name: name.map(str::to_string),
                before_period: before_period.map(str::to_string),
                limit,
            })
            .await?)
    }

    /// One artifact.
    pub async fn artifact_get(&self, name: &str, period: &str) -> Result<Artifact, OpsError> {
        let what = format!("{name}/{period}");
        if !valid_key(name, 200) || !valid_key(period, 64) {
            return Err(OpsError::not_found("artifact", &what));
        }
        self.store
            .artifact_get(ArtifactKey {
                name: name.to_string(),
                period_key: period.to_string(),
            })
            .await?
            .ok_or_else(|| OpsError::not_found("artifact", &what))
    }
}
