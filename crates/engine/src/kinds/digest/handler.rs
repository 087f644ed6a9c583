//! The `digest` kind: build one period's digest artifact.
//!
//! A run first looks for the artifact `(name, period)`: if it exists, the run does nothing —
//! no feed is fetched, no model is called, nothing is written — and succeeds with the
//! response `{"skipped": true}`. This is what makes every re-run safe (a catch-up firing, a
//! manual fire, a replay from the dead-letter queue, two nodes). Otherwise it fetches the
//! feeds (one failing feed is recorded in the artifact and does not lose the others; when
//! every feed fails the attempt fails, transient if waiting may help), summarizes, and stores
//! the artifact insert-if-absent — together, in the same transaction, with its follow-up jobs:
//! the `digest.created` webhook when the schedule has a webhook target, and whatever an
//! [`ArtifactFollowUps`] hook adds (fan-out to a topic's subscribers).
//!
//! The attempt's response is the run's result as JSON: `{"created": true, …}` or
//! `{"skipped": true, …}`. Secrets (model API keys) come from the configuration, never from
//! the payload, and are never in a response or a log line.

use crate::handler::{Handler, JobContext};
use crate::kinds::Kind;
use async_trait::async_trait;
use kairos_channels::digest::{Digester, Summarizer};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, Failure, Job, JobKind, Outcome};
use kairos_store::{Artifact, ArtifactKey, ArtifactPut, JobInsert, Store};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Most feeds one digest may list.
pub const MAX_FEEDS: usize = 50;
/// Longest artifact name.
pub const MAX_NAME: usize = 100;

/// A digest's definition: the `digest` object of `POST /v1/schedules` (and of a `digest`
/// job's payload, which is this object). Feed URLs and the summarizer's name only: no secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DigestBody))]
#[serde(deny_unknown_fields)]
pub struct DigestSpec {
    /// The artifact name (`[A-Za-z0-9_.-]`, 1–100): artifacts are stored and served under
    /// `(name, period key)`.
    pub name: String,
    /// RSS, Atom or JSON Feed URLs (1–50, `http://` or `https://`, distinct).
    pub feeds: Vec<String>,
    /// `extractive` (default: no model), `gemini` or `openai`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::SummarizerSchema>))]
    pub summarizer: Option<String>,
    /// The period to build, for a job enqueued directly (a schedule's jobs carry their
    /// period key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> kairos_core::Error {
    kairos_core::Error::invalid(field, reason)
}

/// Whether `s` is a valid artifact name or period key: 1–`max` of `[A-Za-z0-9_.:-]` (safe in
/// a URL path segment as is).
pub fn valid_key(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-:".contains(&b))
}

impl DigestSpec {
    /// Check every field (the error names it: `digest.name`, `digest.feeds[2]`, …) and return
    /// the normalized definition (summarizer filled in).
    pub fn validate(&self) -> Result<DigestSpec, kairos_core::Error> {
        let name = self.name.trim();
        if !valid_key(name, MAX_NAME) || name.contains(':') {
            return Err(invalid(
                "digest.name",
                format!("must be 1 to {MAX_NAME} characters of A-Z a-z 0-9 _ . -"),
            ));
        }
        if self.feeds.is_empty() {
            return Err(invalid("digest.feeds", "must list at least one feed URL"));
        }
        if self.feeds.len() > MAX_FEEDS {
            return Err(invalid(
                "digest.feeds",
                format!("must list at most {MAX_FEEDS} feeds"),
            ));
        }
        let mut feeds = Vec::with_capacity(self.feeds.len());
        for (i, f) in self.feeds.iter().enumerate() {
            let field = format!("digest.feeds[{i}]");
            let u = url::Url::parse(f.trim())
                .map_err(|e| invalid(&field, format!("{f:?} is not a valid URL: {e}")))?;
            if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
                return Err(invalid(&field, "must be an http:// or https:// URL"));
            }
            let norm = u.to_string();
            if feeds.contains(&norm) {
                return Err(invalid(&field, "is listed twice"));
            }
            feeds.push(norm);
        }
        let summarizer = Summarizer::parse(self.summarizer.as_deref().unwrap_or("extractive"))?;
        if let Some(p) = &self.period
            && !valid_key(p, 64)
        {
            return Err(invalid(
                "digest.period",
                "must be a period key like 2026-10-20",
            ));
        }
        Ok(DigestSpec {
            name: name.to_string(),
            feeds,
            summarizer: Some(summarizer.as_str().to_string()),
            period: self.period.clone(),
        })
    }

    /// The definition as a job payload.
    pub fn to_payload(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A hook that adds jobs to send once an artifact is created, in the artifact's own
/// transaction (so a crash can never leave an artifact without its fan-out). The audience
/// side (a topic's subscribers and their channels) implements this; their dedupe keys make a
/// repeat harmless.
#[async_trait]
pub trait ArtifactFollowUps: Send + Sync + 'static {
    /// The jobs to create for `artifact`, built by `job`, at `now`.
    async fn jobs(
        &self,
        artifact: &Artifact,
        job: &Job,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<JobInsert>;
}

/// The `digest.created` webhook job of an artifact: one per (name, period), to the digest
/// schedule's webhook endpoint.
pub fn digest_created_job(
    a: &Artifact,
    endpoint_id: &str,
    items: usize,
    now: chrono::DateTime<chrono::Utc>,
) -> JobInsert {
    JobInsert {
        id: new_id(IdPrefix::Job, now),
        kind: JobKind::new(crate::kinds::webhook::NAME),
        payload: json!({
            "type": "digest.created",
            "name": a.name,
            "period": a.period_key,
            "items": items,
            "url": format!("/v1/artifacts/{}/{}", a.name, a.period_key),
        }),
        endpoint_id: Some(endpoint_id.to_string()),
        schedule_id: None,
        fire_at: None,
        period_key: Some(a.period_key.clone()),
        channel: None,
        dedupe_key: Some(format!("digest.created:{}:{}", a.name, a.period_key)),
        retry: crate::kinds::webhook::Webhook::default().default_retry(),
        audience: Default::default(),
        retry_is_kind_default: true,
        run_at: now,
        now,
        concurrency: None,
        http_origin: None,
    }
}

/// Builds digests.
pub struct DigestHandler {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    digester: Digester,
    follow_ups: Option<Arc<dyn ArtifactFollowUps>>,
}

impl DigestHandler {
    /// A handler storing artifacts in `store`, fetching and summarizing with `digester`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, digester: Digester) -> Self {
        DigestHandler {
            store,
            clock,
            digester,
            follow_ups: None,
        }
    }

    /// when the digest's schedule names a `topic`, the period's artifact fans out to
    /// that topic's subscribers through the audience expansion — paged, resumable, one mail
    /// per subscriber × period by the audience dedupe key, each mail rendered with the
    /// artifact. Recorded on every run that finds or makes the artifact (idempotent), so a
    /// crash between storing the artifact and recording the expansion is healed by the
    /// retry, which takes the skip path.
    async fn fan_out(&self, job: &Job, period: &str) -> Result<(), Failure> {
        let Some(sid) = &job.schedule_id else {
            return Ok(());
        };
        let s = match self.store.schedule_get(sid).await {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(()), // deleted since: nobody to tell
            Err(e) => {
                return Err(Failure::transient(format!(
                    "reading the schedule failed: {e}"
                )));
            }
        };
        if s.kind.as_str() != super::NAME
            || crate::kinds::email::audience::payload_topic(&s).is_none()
        {
            return Ok(());
        }
        let tz = crate::zone::tz_of(&s).map_err(|e| Failure::permanent(e.to_string()))?;
        let fire_at = job.fire_at.unwrap_or(job.run_at);
        let key = crate::kinds::email::audience::begin(
            self.store.as_ref(),
            &s,
            tz,
            fire_at,
            self.clock.now(),
        )
        .await
        .map_err(|e| Failure::transient(format!("recording the fan-out failed: {e}")))?;
        if key != period {
            tracing::warn!(job_id = %job.id, "digest fan-out period differs from the artifact's");
        }
        Ok(())
    }

    /// Add a hook that creates jobs with each new artifact, in its transaction (an embedding
    /// application's own follow-ups; the fan-out to a topic is built in).
    pub fn with_follow_ups(mut self, hook: Arc<dyn ArtifactFollowUps>) -> Self {
        self.follow_ups = Some(hook);
        self
    }

    async fn run(&self, job: &Job, ctx: &JobContext) -> Result<serde_json::Value, Failure> {
        // The schedule's fan-out `topic` sits beside the digest definition in the payload
        // (the audience side reads it from the schedule); the definition is the rest.
        let mut payload = job.payload.clone();
        if let Some(o) = payload.as_object_mut() {
            o.remove("topic");
        }
        let spec: DigestSpec = serde_json::from_value(payload)
            .map_err(|e| Failure::permanent(format!("invalid digest payload: {e}")))?;
        let spec = spec
            .validate()
            .map_err(|e| Failure::permanent(format!("invalid digest payload: {e}")))?;
        let period = job
            .period_key
            .clone()
            .or(spec.period.clone())
            .ok_or_else(|| {
                Failure::permanent("a digest job needs a period: its schedule's, or digest.period")
            })?;
        let summarizer = Summarizer::parse(spec.summarizer.as_deref().unwrap_or("extractive"))
            .map_err(|e| Failure::permanent(e.to_string()))?;
        let key = ArtifactKey {
            name: spec.name.clone(),
            period_key: period.clone(),
        };
        // the period's digest exists — nothing is fetched, called or written.
        let existing = self
            .store
            .artifact_get(key)
            .await
            .map_err(|e| Failure::transient(format!("reading the artifact failed: {e}")))?;
        if existing.is_some() {
            self.fan_out(job, &period).await?;
            return Ok(json!({"skipped": true, "name": spec.name, "period": period}));
        }
        let fetched = self.digester.fetch(&spec.feeds, ctx.now).await;
        if let Some(f) = fetched.all_failed() {
            return Err(f);
        }
        let title = format!("{} {period}", spec.name);
        let summary = self
            .digester
            .summarize(summarizer, &title, &fetched.items, ctx.now)
            .await?;
        let now = self.clock.now();
        let artifact = Artifact {
            name: spec.name.clone(),
            period_key: period.clone(),
            content: summary.text,
            data: json!({
                "summarizer": summarizer.as_str(),
                "model": summary.model,
                "items": fetched.items,
                "feeds": fetched.feeds,
                "failed_feeds": fetched.failures,
            }),
            job_id: Some(job.id.clone()),
            schedule_id: job.schedule_id.clone(),
            created_at: now,
        };
        let mut then = Vec::new();
        if let Some(ep) = &job.endpoint_id {
            then.push(digest_created_job(&artifact, ep, fetched.items.len(), now));
        }
        if let Some(hook) = &self.follow_ups {
            then.extend(hook.jobs(&artifact, job, now).await);
        }
        let put = self
            .store
            .artifact_put(ArtifactPut { artifact, then })
            .await
            .map_err(|e| Failure::transient(format!("storing the artifact failed: {e}")))?;
        self.fan_out(job, &period).await?;
        if !put.created {
            // Another run stored this period first; its artifact stays.
            return Ok(
                json!({"skipped": true, "name": spec.name, "period": period, "raced": true}),
            );
        }
        Ok(json!({
            "created": true,
            "name": spec.name,
            "period": period,
            "summarizer": summarizer.as_str(),
            "items": fetched.items.len(),
            "feeds_ok": fetched.feeds.len(),
            "failed_feeds": fetched.failures.iter().map(|f| json!({
                "feed": f.feed, "status_code": f.status_code, "error": f.error,
            })).collect::<Vec<_>>(),
            "follow_up_jobs": put.jobs,
        }))
    }
}

#[async_trait]
impl Handler for DigestHandler {
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        match self.run(job, ctx).await {
            Ok(result) => {
                // every run's result as one JSON log line (ids and counts, no secrets).
                tracing::info!(job_id = %job.id, kind = "digest", result = %result, "digest run");
                Outcome::Delivered {
                    provider_id: None,
                    status_code: None,
                    response: Some(result.to_string()),
                }
            }
            Err(f) => Outcome::Failed(f),
        }
    }

    fn timeout(&self) -> Duration {
        // Feeds are fetched concurrently, each under its own timeout; then one model call
        // under its own. This outer limit only catches a hang outside those calls (a slow
        // database), so it adds little: the budget arithmetic stays close to the truth.
        let c = self.digester.config();
        c.feed_timeout + c.model_timeout + Duration::from_secs(5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(feeds: &[&str], summarizer: Option<&str>) -> DigestSpec {
        DigestSpec {
            name: "ai-news".into(),
            feeds: feeds.iter().map(|s| s.to_string()).collect(),
            summarizer: summarizer.map(str::to_string),
            period: None,
        }
    }

    #[test]
    fn digest_definitions_are_validated_field_by_field() {
        let ok = spec(&["https://example.com/feed.xml"], None)
            .validate()
            .unwrap();
        assert_eq!(ok.summarizer.as_deref(), Some("extractive"));
        let field = |s: DigestSpec| s.validate().unwrap_err().field().to_string();
        assert_eq!(field(spec(&[], None)), "digest.feeds");
        assert_eq!(
            field(spec(&["https://a/x", "not a url"], None)),
            "digest.feeds[1]"
        );
        assert_eq!(field(spec(&["ftp://a/x"], None)), "digest.feeds[0]");
        assert_eq!(
            field(spec(&["https://a/x", "https://a/x"], None)),
            "digest.feeds[1]"
        );
        assert_eq!(
            field(spec(&["https://a/x"], Some("gpt"))),
            "digest.summarizer"
        );
        let mut bad = spec(&["https://a/x"], None);
        bad.name = "a/b".into();
        assert_eq!(field(bad), "digest.name");
    }
}
