//! Operations on jobs: enqueue (or only validate, for an application's own transaction),
//! read, list, retry, cancel.

use super::bulk::MAX_REASON;
use super::{Kairos, MAX_KEY, NewJob, parse_instant};
use crate::error::OpsError;
use crate::kinds::{KindRequest, RequestScope};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Job, JobState};
use kairos_store::*;

/// The filters of a job list: one vocabulary for the API (`GET /v1/jobs`, `/v1/dlq`), the
/// CLI (`kairos job list`, `dlq list`) and the admin. Every one optional, all combined.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// `available`, `running`, `succeeded`, `skipped`, `cancelled`, `dead`.
    pub state: Option<String>,
    /// Job kind.
    pub kind: Option<String>,
    /// Jobs of this schedule (`sch_…`).
    pub schedule: Option<String>,
    /// Audience jobs of this topic.
    pub topic: Option<String>,
    /// Audience jobs of this recipient id.
    pub recipient: Option<String>,
    /// Jobs of this period key (`2026-W49`).
    pub period: Option<String>,
    /// Jobs of this channel.
    pub channel: Option<String>,
    /// Created at or after this instant (RFC 3339).
    pub created_after: Option<String>,
    /// Created before this instant (RFC 3339).
    pub created_before: Option<String>,
    /// Older than this job id (the keyset cursor).
    pub before: Option<String>,
    /// Page size, 1 to 1000.
    pub limit: Option<i64>,
}

/// Most jobs one [`Kairos::job_enqueue_many`] call (`POST /v1/jobs/batch`) takes.
pub const MAX_ENQUEUE_BATCH: usize = 1000;

/// Dead jobs read per batch by [`Kairos::dead_replay`].
pub const DEAD_REPLAY_BATCH: i64 = 100;

/// What [`Kairos::dead_replay`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeadReplay {
    /// The jobs replayed (now available), newest first.
    pub job_ids: Vec<String>,
    /// Dead jobs that could not be replayed: (id, why).
    pub failed: Vec<(String, String)>,
    /// Whether dead jobs remain that this call did not look at (it stopped at its maximum).
    pub more: bool,
}

/// The endpoints stored while preparing a batch: (kind, URL, secret) → endpoint id.
type Endpoints = std::collections::HashMap<(String, String, String), String>;

impl Kairos {
    /// Validate `req` into the job to insert, without inserting it: what
    /// [`Kairos::job_enqueue`] inserts, and what an application inserts in its own
    /// transaction (transactional enqueue). A `webhook` job's endpoint and an `http` job's
    /// target are stored here, outside any transaction: they are deduplicated, so a rolled
    /// back enqueue leaves at most an unused target.
    pub async fn job_prepare(&self, req: NewJob) -> Result<JobInsert, OpsError> {
        self.job_prepare_with(req, &mut Endpoints::new()).await
    }

    /// [`Kairos::job_prepare`], with the endpoints already stored for earlier jobs of the same
    /// batch: a batch of a thousand webhook jobs to one receiver stores its endpoint once, not
    /// a thousand times.
    async fn job_prepare_with(
        &self,
        req: NewJob,
        endpoints: &mut Endpoints,
    ) -> Result<JobInsert, OpsError> {
        let now = self.clock.now();
        // An unknown field first, as when serde refused it while reading the request.
        self.kinds
            .check_parts(&req.parts, RequestScope::Job, false)?;
        let kind = self.check_kind(req.kind.as_deref())?;
        let run_at = match &req.run_at {
            Some(s) => parse_instant("run_at", s)?,
            None => now,
        };
        if let Some(k) = &req.idempotency_key
            && (k.is_empty() || k.len() > MAX_KEY || k.chars().any(char::is_control))
        {
            return Err(OpsError::invalid(
                "idempotency_key",
                format!("must be 1 to {MAX_KEY} bytes without control characters"),
            ));
        }
        if let Some(c) = &req.concurrency {
            crate::concurrency::check(c)?;
        }
        let k = self.kinds.get(kind.as_str());
        let retry = match &req.retry {
            Some(r) => r.to_policy(&k.default_retry())?,
            None => k.default_retry(),
        };
        let parts = KindRequest {
            payload: req.payload.as_ref(),
            parts: &req.parts,
            retry: Some(&retry),
            scope: RequestScope::Job,
        };
        let payload = k.request_payload(&self.env(), parts).await?;
        let endpoint_id = match req.webhook.as_ref() {
            // The same kind and target pass the same checks and name the same endpoint.
            Some(t) => {
                let key = (kind.as_str().to_string(), t.url.clone(), t.secret.clone());
                match endpoints.get(&key) {
                    Some(id) => Some(id.clone()),
                    None => {
                        let id = self.endpoint_for(&kind, Some(t)).await?;
                        if let Some(id) = &id {
                            endpoints.insert(key, id.clone());
                        }
                        id
                    }
                }
            }
            None => self.endpoint_for(&kind, None).await?,
        };
        let retry_is_kind_default = retry == k.default_retry();
        let audience = kairos_core::JobAudience::of_payload(&payload);
        let concurrency = req.concurrency.as_ref().map(|c| {
            let empty = serde_json::json!({});
            crate::concurrency::render(c, req.payload.as_ref().unwrap_or(&empty), None)
        });
        let http_origin = crate::kinds::http::origin_of_payload(kind.as_str(), &payload);
        // Every check passed: the kind's part takes effect (an `http` object's host limits).
        if let Some(part) = k.request_part().and_then(|p| parts.raw_part(p)) {
            k.request_accepted(&self.env(), part).await?;
        }
        Ok(JobInsert {
            id: new_id(IdPrefix::Job, now),
            kind,
            payload,
            endpoint_id,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            // Namespaced so a user key can never collide with an expansion key.
            dedupe_key: req.idempotency_key.as_ref().map(|k| format!("idem:{k}")),
            retry,
            audience,
            retry_is_kind_default,
            run_at,
            now,
            concurrency,
            http_origin,
        })
    }

    /// Enqueue a job. With an idempotency key that exists, returns the existing job and
    /// `false`.
    pub async fn job_enqueue(&self, req: NewJob) -> Result<(Job, bool), OpsError> {
        let job = self.job_prepare(req).await?;
        let r = self.store.job_insert(job).await?;
        if r.created {
            self.wake.notify_one();
        }
        Ok((r.job, r.created))
    }

    /// Enqueue up to [`MAX_ENQUEUE_BATCH`] jobs in one call (`POST /v1/jobs/batch`): each
    /// validated as [`Kairos::job_enqueue`] validates it, then all inserted in one store call
    /// (one transaction), and the engine woken once. Answers in the order given, each with
    /// whether it was created: an `idempotency_key` that exists answers with the existing job
    /// and `false`, and an entry repeating the key of an earlier one answers with that one's
    /// job. An invalid entry fails the whole call naming it (`jobs[1].run_at`), and so does a
    /// key whose job was pruned; then nothing is inserted. An empty list, or more than
    /// [`MAX_ENQUEUE_BATCH`] jobs, is an error naming `jobs`.
    pub async fn job_enqueue_many(&self, reqs: Vec<NewJob>) -> Result<Vec<(Job, bool)>, OpsError> {
        if reqs.is_empty() || reqs.len() > MAX_ENQUEUE_BATCH {
            return Err(OpsError::invalid(
                "jobs",
                format!("must hold 1 to {MAX_ENQUEUE_BATCH} jobs"),
            ));
        }
        let mut jobs = Vec::with_capacity(reqs.len());
        let mut endpoints = Endpoints::new();
        for (i, req) in reqs.into_iter().enumerate() {
            jobs.push(
                self.job_prepare_with(req, &mut endpoints)
                    .await
                    .map_err(|e| e.under(&format!("jobs[{i}]")))?,
            );
        }
        let inserted = self.store.job_insert_batch(jobs).await.map_err(|e| {
            // A batch's error about one entry (a pruned job's idempotency key) names it.
            let entry = e.entry();
            let e = OpsError::from(e);
            match entry {
                Some(i) => e.under(&format!("jobs[{i}]")),
                None => e,
            }
        })?;
        if inserted.iter().any(|r| r.created) {
            self.wake.notify_one();
        }
        Ok(inserted.into_iter().map(|r| (r.job, r.created)).collect())
    }

    /// A job and its attempts.
    pub async fn job_get(&self, id: &str) -> Result<(Job, Vec<Attempt>), OpsError> {
        let job = self
            .store
            .job_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("job", id))?;
        let attempts = self.store.attempt_list(id).await?;
        Ok((job, attempts))
    }

    /// Jobs matching filters, newest first. `state` and `kind` are checked. `channel` is the
    /// job's channel (a schedule's channel name, an audience job's `email` or `webhook`).
    pub async fn job_list(
        &self,
        state: Option<&str>,
        kind: Option<&str>,
        schedule_id: Option<&str>,
        channel: Option<&str>,
        before_id: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Vec<Job>, OpsError> {
        let state = state
            .map(|s| {
                JobState::parse_known(s).ok_or_else(|| {
                    OpsError::invalid(
                        "state",
                        "must be one of available, running, succeeded, skipped, cancelled, dead",
                    )
                })
            })
            .transpose()?;
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be between 1 and 1000"));
        }
        Ok(self
            .store
            .job_list(JobList {
                state,
                kind: kind.map(str::to_string),
                schedule_id: schedule_id.map(str::to_string),
                before_id: before_id.map(str::to_string),
                limit,
                channel: channel.map(str::to_string),
            })
            .await?)
    }

    /// Jobs matching `f`, newest first: [`Kairos::job_list`]'s filters and the rest of the
    /// vocabulary (`topic`, `recipient`, `period`, `created_after`, `created_before`); each
    /// bad value is an error naming its filter.
    pub async fn job_find(&self, f: JobFilter) -> Result<Vec<Job>, OpsError> {
        let extended = f.topic.is_some()
            || f.recipient.is_some()
            || f.period.is_some()
            || f.created_after.is_some()
            || f.created_before.is_some();
        if !extended {
            return self
                .job_list(
                    f.state.as_deref(),
                    f.kind.as_deref(),
                    f.schedule.as_deref(),
                    f.channel.as_deref(),
                    f.before.as_deref(),
                    f.limit,
                )
                .await;
        }
        if let Some(s) = &f.state
            && JobState::parse_known(s).is_none()
        {
            return Err(OpsError::invalid(
                "state",
                "must be one of available, running, succeeded, skipped, cancelled, dead",
            ));
        }
        let limit = f.limit.unwrap_or(50);
        if !(1..=1000).contains(&limit) {
            return Err(OpsError::invalid("limit", "must be between 1 and 1000"));
        }
        let instant = |field: &str, v: &Option<String>| {
            v.as_deref().map(|v| parse_instant(field, v)).transpose()
        };
        Ok(self
            .store
            .job_search(JobSearch {
                state: f.state,
                kind: f.kind,
                schedule_id: f.schedule,
                period_key: f.period,
                topic: f.topic,
                recipient_id: f.recipient,
                channel: f.channel,
                created_from: instant("created_after", &f.created_after)?,
                created_to: instant("created_before", &f.created_before)?,
                endpoint_id: None,
                recipient_endpoint_kinds: Vec::new(),
                payload_text: None,
                before_id: f.before,
                limit,
            })
            .await?)
    }

    /// Run a job again now (replay a dead one, hurry a waiting one). A succeeded or running job
    /// is a conflict: running it again would send twice.
    pub async fn job_retry(&self, id: &str) -> Result<Job, OpsError> {
        let job = self
            .store
            .job_retry(JobRetry {
                id: id.to_string(),
                now: self.clock.now(),
            })
            .await?
            .ok_or_else(|| OpsError::not_found("job", id))?;
        if job.state != JobState::Available {
            return Err(OpsError::conflict(format!(
                "job is {}; only dead, cancelled, skipped or waiting jobs can be retried",
                job.state
            )));
        }
        self.wake.notify_one();
        Ok(job)
    }

    /// Ids of every dead job (of `kind`, if given), newest first: what "replay all" replays.
    /// Pages through the list, so it is bounded by the number of dead jobs.
    pub async fn dead_job_ids(&self, kind: Option<&str>) -> Result<Vec<String>, OpsError> {
        const PAGE: i64 = 1000;
        let mut ids = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let page = self
                .job_list(
                    Some("dead"),
                    kind,
                    None,
                    None,
                    before.as_deref(),
                    Some(PAGE),
                )
                .await?;
            let full = page.len() as i64 == PAGE;
            before = page.last().map(|j| j.id.clone());
            ids.extend(page.into_iter().map(|j| j.id));
            if !full {
                return Ok(ids);
            }
        }
    }

    /// Replay dead jobs (of `kind`, if given), newest first, read in batches of
    /// [`DEAD_REPLAY_BATCH`] and at most `max` of them: one call (one request) does bounded
    /// work, and [`DeadReplay::more`] says whether dead jobs remain past the last one looked at
    /// (call again to go on). A job that cannot be replayed is reported in `failed`.
    pub async fn dead_replay(
        &self,
        kind: Option<&str>,
        max: usize,
    ) -> Result<DeadReplay, OpsError> {
        let mut out = DeadReplay::default();
        let mut seen = 0usize;
        let mut before: Option<String> = None;
        while seen < max {
            let want = DEAD_REPLAY_BATCH.min((max - seen) as i64);
            let batch = self
                .job_list(
                    Some("dead"),
                    kind,
                    None,
                    None,
                    before.as_deref(),
                    Some(want),
                )
                .await?;
            for job in &batch {
                match self.job_retry(&job.id).await {
                    Ok(j) => out.job_ids.push(j.id),
                    Err(e) => out.failed.push((job.id.clone(), e.message().to_string())),
                }
            }
            seen += batch.len();
            before = batch.last().map(|j| j.id.clone()).or(before);
            if (batch.len() as i64) < want {
                return Ok(out);
            }
        }
        // Stopped at the maximum: is anything left after the last one looked at?
        out.more = !self
            .job_list(Some("dead"), kind, None, None, before.as_deref(), Some(1))
            .await?
            .is_empty();
        Ok(out)
    }

    /// Cancel a job that has not finished.
    pub async fn job_cancel(&self, id: &str, reason: Option<String>) -> Result<Job, OpsError> {
        if let Some(r) = &reason {
            if r.len() > MAX_REASON {
                return Err(OpsError::invalid(
                    "reason",
                    format!("must be at most {MAX_REASON} bytes"),
                ));
            }
            kairos_core::text::check_text("reason", r)?;
        }
        let job = self
            .store
            .job_cancel(JobCancel {
                id: id.to_string(),
                reason: reason.unwrap_or_else(|| "cancelled by operator".into()),
                now: self.clock.now(),
            })
            .await?
            .ok_or_else(|| OpsError::not_found("job", id))?;
        if job.state != JobState::Cancelled {
            return Err(OpsError::conflict(format!(
                "job is {} and cannot be cancelled",
                job.state
            )));
        }
        Ok(job)
    }
}
