//! Schedules and endpoints on PostgreSQL, and the `Store` impl that ties the modules together.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::{ENDPOINT_COLS, SCHEDULE_COLS, endpoint_from_row, schedule_from_row};
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::*;
use sqlx::AssertSqlSafe;

fn sql(template: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(
        template
            .replace("{cols}", SCHEDULE_COLS)
            .replace("{endpoint_cols}", ENDPOINT_COLS),
    )
}

/// Spec, payload and retry as JSON values (`jsonb` columns; SQLite stores text).
fn def_binds(
    d: &ScheduleCreate,
) -> (
    serde_json::Value,
    serde_json::Value,
    Option<serde_json::Value>,
) {
    (
        serde_json::to_value(&d.spec).unwrap_or_default(),
        d.payload.clone(),
        d.retry
            .as_ref()
            .map(|r| serde_json::to_value(r).unwrap_or_default()),
    )
}

impl PostgresStore {
    /// `e` with its secret opened (a plaintext one is kept as it is).
    fn open_endpoint(&self, mut e: Endpoint) -> Result<Endpoint> {
        e.secret = kairos_store::sealing::endpoint_secret_from_store(self.sealer(), e.secret)?;
        Ok(e)
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn migrate(&self) -> Result<()> {
        crate::migrate::run(&self.pool, &self.schema).await
    }

    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint> {
        let (secret, hash) =
            kairos_store::sealing::endpoint_secret_to_store(self.sealer(), &p.url, &p.secret);
        // The no-op `DO UPDATE` (rather than DO NOTHING) makes RETURNING yield the existing
        // row. Sealed: found by the lookup hash (the sealed value differs every time).
        let q = if hash.is_some() {
            sqlx::query(sql(
                "INSERT INTO endpoints (id, url, secret, secret_hash, created_at)
                 VALUES ($1, $2, $3, $5, $4)
                 ON CONFLICT (secret_hash) WHERE secret_hash IS NOT NULL
                 DO UPDATE SET url = excluded.url
                 RETURNING {endpoint_cols}",
            ))
        } else {
            sqlx::query(sql(
                "INSERT INTO endpoints (id, url, secret, created_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (url, secret) DO UPDATE SET url = excluded.url
                 RETURNING {endpoint_cols}",
            ))
        };
        let mut q = q.bind(&p.id).bind(&p.url).bind(&secret).bind(p.now);
        if let Some(h) = &hash {
            q = q.bind(h);
        }
        let row = q
            .fetch_one(&self.pool)
            .await
            .map_err(|e| map_err("endpoint upsert", e))?;
        self.open_endpoint(endpoint_from_row(&row)?)
    }

    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>> {
        let row = sqlx::query(sql("SELECT {endpoint_cols} FROM endpoints WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("endpoint get", e))?;
        row.as_ref()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .transpose()
    }

    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()> {
        sqlx::query(
            "UPDATE endpoints SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL",
        )
        .bind(&p.id)
        .bind(p.now)
        .bind(&p.reason)
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("endpoint disable", e))?;
        Ok(())
    }

    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>> {
        let rows = sqlx::query(sql("SELECT {endpoint_cols} FROM endpoints
             WHERE ($1::text IS NULL OR id > $1)
               AND ($2::boolean IS NULL OR (disabled_at IS NOT NULL) = $2)
             ORDER BY id LIMIT $3"))
        .bind(&p.after)
        .bind(p.disabled)
        .bind(p.limit.unwrap_or(100).max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("endpoint list", e))?;
        rows.iter()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .collect()
    }

    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>> {
        let row = sqlx::query(sql(
            "UPDATE endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE id = $1
             RETURNING {endpoint_cols}",
        ))
        .bind(&p.id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("endpoint enable", e))?;
        row.as_ref()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .transpose()
    }

    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()> {
        sqlx::query("UPDATE endpoints SET last_failure_at = $2, last_failure = $3 WHERE id = $1")
            .bind(&p.id)
            .bind(p.now)
            .bind(&p.error)
            .execute(&self.pool)
            .await
            .map_err(|e| map_err("endpoint failure record", e))?;
        Ok(())
    }

    async fn schedule_create(&self, p: ScheduleCreate) -> Result<Schedule> {
        let (spec, payload, retry) = def_binds(&p);
        let state = if p.paused { "paused" } else { "active" };
        let row = sqlx::query(sql(
            "INSERT INTO schedules (id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, created_at, updated_at, channels)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14)
             RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(&p.name)
        .bind(p.kind.as_str())
        .bind(spec)
        .bind(&p.timezone)
        .bind(p.period.as_str())
        .bind(p.misfire.to_string_repr())
        .bind(payload)
        .bind(&p.endpoint_id)
        .bind(retry)
        .bind(state)
        .bind(p.next_fire_at)
        .bind(p.now)
        .bind(ScheduleChannel::encode_all(&p.channels))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("schedule create", e))?;
        schedule_from_row(&row)
    }

    async fn schedule_get(&self, id: &str) -> Result<Option<Schedule>> {
        let row = sqlx::query(sql("SELECT {cols} FROM schedules WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("schedule get", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self, p: ScheduleList) -> Result<Vec<Schedule>> {
        // Differs from SQLite: `$1::text IS NULL` gives the optional filter a type.
        let rows = sqlx::query(sql(
            "SELECT {cols} FROM schedules WHERE ($1::text IS NULL OR state = $1) ORDER BY id DESC LIMIT $2",
        ))
        .bind(p.state)
        .bind(p.limit.unwrap_or(100).clamp(1, 10_000))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("schedule list", e))?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_update(&self, p: ScheduleUpdate) -> Result<Option<Schedule>> {
        let d = &p.def;
        let (spec, payload, retry) = def_binds(d);
        let row = sqlx::query(sql(
            "UPDATE schedules SET name = $2, kind = $3, spec = $4, timezone = $5, period = $6, misfire = $7,
                    payload = $8, endpoint_id = $9, retry = $10, channels = $14,
                    state = CASE WHEN $11 THEN 'paused' ELSE 'active' END,
                    next_fire_at = $12, locked_until = NULL, updated_at = $13
             WHERE id = $1 RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(&d.name)
        .bind(d.kind.as_str())
        .bind(spec)
        .bind(&d.timezone)
        .bind(d.period.as_str())
        .bind(d.misfire.to_string_repr())
        .bind(payload)
        .bind(&d.endpoint_id)
        .bind(retry)
        .bind(d.paused)
        .bind(d.next_fire_at)
        .bind(d.now)
        .bind(ScheduleChannel::encode_all(&d.channels))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("schedule update", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_pause(&self, p: SchedulePause) -> Result<Option<Schedule>> {
        let row = sqlx::query(sql(
            "UPDATE schedules SET
                    state = CASE WHEN state = 'finished' THEN state WHEN $2 THEN 'paused' ELSE 'active' END,
                    next_fire_at = CASE WHEN $2 OR state = 'finished' THEN next_fire_at ELSE $3 END,
                    locked_until = NULL, updated_at = $4
             WHERE id = $1 RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(p.paused)
        .bind(p.next_fire_at)
        .bind(p.now)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("schedule pause", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_delete(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM schedules WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| map_err("schedule delete", e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn schedule_due(&self, p: ScheduleDue) -> Result<Vec<Schedule>> {
        // Differs from SQLite: the due schedules are locked with `FOR UPDATE SKIP LOCKED` in a
        // CTE (run exactly once), so schedulers on several nodes claim disjoint schedules
        // without waiting; the time lock (`locked_until`) then keeps each with its node while
        // it expands the firing.
        let rows = sqlx::query(sql("WITH due (due_id) AS (
                 SELECT id FROM schedules
                 WHERE state = 'active' AND next_fire_at <= $1
                   AND (locked_until IS NULL OR locked_until <= $1)
                 ORDER BY next_fire_at, id LIMIT $4
                 FOR UPDATE SKIP LOCKED)
             UPDATE schedules SET locked_until = $2, locked_by = $3
             FROM due WHERE schedules.id = due.due_id
             RETURNING {cols}"))
        .bind(p.now)
        .bind(p.lock_until)
        .bind(&p.node)
        .bind(p.limit.max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("schedule due", e))?;
        let mut out = rows
            .iter()
            .map(schedule_from_row)
            .collect::<Result<Vec<_>>>()?;
        out.sort_by(|a, b| (a.next_fire_at, &a.id).cmp(&(b.next_fire_at, &b.id)));
        Ok(out)
    }

    async fn schedule_fire(&self, p: ScheduleFire) -> Result<ScheduleFired> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("schedule fire", e))?;
        // Differs from SQLite: null-safe equality is `IS NOT DISTINCT FROM` (SQLite: `IS`), and
        // `$3::timestamptz IS NULL` gives the parameter a type. The UPDATE locks the row, so a
        // second firing of the same occurrence waits, then sees the advanced value and
        // matches nothing.
        let advanced = sqlx::query(
            "UPDATE schedules SET next_fire_at = $3,
                    last_fire_at = COALESCE($4, last_fire_at),
                    state = CASE WHEN $3::timestamptz IS NULL AND state = 'active' THEN 'finished' ELSE state END,
                    locked_until = NULL, locked_by = NULL, updated_at = $5
             WHERE id = $1 AND next_fire_at IS NOT DISTINCT FROM $2",
        )
        .bind(&p.schedule_id)
        .bind(p.expected_next_fire_at)
        .bind(p.next_fire_at)
        .bind(p.last_fire_at)
        .bind(p.now)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("schedule fire", e))?
        .rows_affected()
            > 0;
        if !advanced {
            // Another node (or an earlier tick) already materialized these firings.
            return Ok(ScheduleFired {
                advanced: false,
                created: vec![],
            });
        }
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            // The same insert as job_insert_many (with its notification), in this transaction.
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs))
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("schedule fire (jobs)", e))?
        };
        tx.commit().await.map_err(|e| map_err("schedule fire", e))?;
        Ok(ScheduleFired {
            advanced: true,
            created,
        })
    }

    async fn schedule_next_fire_at(&self) -> Result<Option<DateTime<Utc>>> {
        sqlx::query_scalar("SELECT MIN(next_fire_at) FROM schedules WHERE state = 'active'")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| map_err("schedule next fire", e))
    }

    async fn job_insert(&self, p: JobInsert) -> Result<JobInserted> {
        self.job_insert_impl(p).await
    }
    async fn job_insert_many(&self, p: Vec<JobInsert>) -> Result<Vec<String>> {
        self.job_insert_many_impl(p).await
    }
    async fn job_get(&self, id: &str) -> Result<Option<Job>> {
        self.job_get_impl(id).await
    }
    async fn job_list(&self, p: JobList) -> Result<Vec<Job>> {
        self.job_list_impl(p).await
    }
    async fn job_claim(&self, p: JobClaim) -> Result<Vec<Job>> {
        self.job_claim_impl(p).await
    }
    async fn job_lease_renew(&self, p: JobLeaseRenew) -> Result<u64> {
        self.job_lease_renew_impl(p).await
    }
    async fn job_complete_many(&self, p: Vec<JobComplete>) -> Result<CompleteReport> {
        self.job_complete_many_impl(p).await
    }
    async fn job_cancel(&self, p: JobCancel) -> Result<Option<Job>> {
        self.job_cancel_impl(p).await
    }
    async fn job_retry(&self, p: JobRetry) -> Result<Option<Job>> {
        self.job_retry_impl(p).await
    }
    async fn job_bulk_cancel(&self, p: JobBulkCancel) -> Result<JobBulkDone> {
        self.job_bulk_cancel_impl(p).await
    }
    async fn job_bulk_retry(&self, p: JobBulkRetry) -> Result<JobBulkDone> {
        self.job_bulk_retry_impl(p).await
    }
    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>> {
        self.job_rescue_impl(p).await
    }
    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>> {
        self.attempt_list_impl(job_id).await
    }
    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>> {
        self.job_next_run_at_impl().await
    }
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>> {
        self.job_count_by_state_impl().await
    }
    async fn job_search(&self, p: JobSearch) -> Result<Vec<Job>> {
        self.job_search_impl(p).await
    }
    async fn job_count_by_state_kind(&self) -> Result<Vec<JobCount>> {
        self.job_count_by_state_kind_impl().await
    }
    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog> {
        self.job_backlog_impl(p).await
    }
    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>> {
        self.job_count_finished_impl(p).await
    }
    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>> {
        self.job_dead_scheduled_impl(p).await
    }
    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<DecidedCount>> {
        self.job_count_decided_impl(p).await
    }
    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>> {
        self.schedule_fire_times_impl(p).await
    }
    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>> {
        self.slo_alert_list_impl().await
    }
    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()> {
        self.slo_alert_put_impl(p).await
    }
    async fn migration_pending(&self) -> Result<Vec<i64>> {
        self.migration_pending_impl().await
    }
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
        self.artifact_put_impl(p).await
    }
    async fn artifact_get(&self, p: ArtifactKey) -> Result<Option<Artifact>> {
        self.artifact_get_impl(p).await
    }
    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        self.artifact_list_impl(p).await
    }
    async fn artifact_prune(&self, p: ArtifactPrune) -> Result<u64> {
        self.artifact_prune_impl(p).await
    }
    async fn catch_up_set(&self, p: CatchUpSet) -> Result<()> {
        self.catch_up_set_impl(p).await
    }
    async fn catch_up_list(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        self.catch_up_list_impl(schedule_id).await
    }
    async fn catch_up_due(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
        self.catch_up_due_impl(p).await
    }
    async fn catch_up_next_at(&self) -> Result<Option<DateTime<Utc>>> {
        self.catch_up_next_at_impl().await
    }
    async fn catch_up_fire(&self, p: CatchUpFire) -> Result<ScheduleFired> {
        self.catch_up_fire_impl(p).await
    }

    async fn recipient_upsert(&self, p: RecipientUpsert) -> Result<Recipient> {
        self.recipient_upsert_impl(p).await
    }
    async fn recipient_upsert_many(&self, p: Vec<RecipientUpsert>) -> Result<u64> {
        self.recipient_upsert_many_impl(p).await
    }
    async fn recipient_get(&self, id: &str) -> Result<Option<Recipient>> {
        self.recipient_get_impl(id).await
    }
    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        self.recipient_list_impl(p).await
    }
    async fn topic_put(&self, p: TopicPut) -> Result<Topic> {
        self.topic_put_impl(p).await
    }
    async fn topic_get(&self, name: &str) -> Result<Option<Topic>> {
        self.topic_get_impl(name).await
    }
    async fn topic_list(&self) -> Result<Vec<Topic>> {
        self.topic_list_impl().await
    }
    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription> {
        self.subscription_put_impl(p).await
    }
    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        self.subscription_get_impl(recipient_id, topic).await
    }
    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>> {
        self.subscription_list_impl(p).await
    }
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        self.suppression_add_impl(p).await
    }
    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>> {
        self.suppression_get_impl(address).await
    }
    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool> {
        self.expansion_begin_impl(p).await
    }
    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        self.expansion_pending_impl(limit).await
    }
    async fn expansion_get(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        self.expansion_get_impl(schedule_id, period_key).await
    }
    async fn expansion_advance(&self, p: ExpansionAdvance) -> Result<Option<Vec<String>>> {
        self.expansion_advance_impl(p).await
    }
    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>> {
        self.exposure_counts_impl(topic).await
    }
    async fn occurrence_list(&self, p: OccurrenceList) -> Result<Vec<OccurrenceCount>> {
        self.occurrence_list_impl(p).await
    }

    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        self.http_target_upsert_impl(p).await
    }
    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>> {
        self.http_target_get_impl(id).await
    }
    async fn job_prune(&self, p: JobPrune) -> Result<JobPruned> {
        self.job_prune_impl(p).await
    }
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded> {
        self.inbound_event_record_impl(p).await
    }
    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>> {
        self.inbound_event_get_impl(source, id).await
    }
    async fn inbound_event_prune(&self, p: InboundEventPrune) -> Result<u64> {
        self.inbound_event_prune_impl(p).await
    }
    async fn suppression_apply(&self, p: SuppressionApply) -> Result<SuppressionApplied> {
        self.suppression_apply_impl(p).await
    }
    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
        self.suppression_list_impl(p).await
    }
    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
        self.suppression_remove_impl(p).await
    }
    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool> {
        self.subscription_disable_impl(p).await
    }
    async fn recipient_erase(&self, p: RecipientErase) -> Result<Option<RecipientErased>> {
        self.recipient_erase_impl(p).await
    }
    async fn topic_delete(&self, name: &str) -> Result<bool> {
        self.topic_delete_impl(name).await
    }
    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool> {
        self.subscription_delete_impl(p).await
    }
    async fn setting_get(&self, name: &str) -> Result<Option<Setting>> {
        self.setting_get_impl(name).await
    }
    async fn setting_put(&self, p: SettingPut) -> Result<()> {
        self.setting_put_impl(p).await
    }
    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()> {
        self.admin_session_create_impl(p).await
    }
    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>> {
        self.admin_session_get_impl(id_hash).await
    }
    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool> {
        self.admin_session_delete_impl(id_hash).await
    }
}
