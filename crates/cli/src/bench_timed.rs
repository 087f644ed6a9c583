//! `kairos bench`: the real store, timing every claim the engine makes and counting the
//! outcomes it commits. The steady-rate run reads both for its per-second lines; the burst
//! bench's clock stops when the count reaches its jobs (`bench::wait_done`). Everything else is
//! delegated unchanged.
//! A new role method needs its delegation here too (as in the engine tests' `CountingStore`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::prelude::*;
use kairos_store::{
    Attempt, CompleteReport, Endpoint, EndpointDisable, EndpointUpsert, JobCancel, JobClaim,
    JobComplete, JobInsert, JobInserted, JobLeaseRenew, JobList, JobRescue, JobRetry, Schedule,
    ScheduleCreate, ScheduleDue, ScheduleFire, ScheduleFired, ScheduleList, SchedulePause,
    ScheduleRelease, ScheduleUpdate, Store,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The store under test with its claims timed and its committed outcomes counted.
pub(crate) struct TimedStore {
    pub inner: Arc<dyn Store>,
    /// How long each claim took (ms) since the sampler last took them.
    pub claims_ms: Mutex<Vec<f64>>,
    /// Outcomes committed (applied, not stale) since the start.
    pub completed: AtomicU64,
}

impl TimedStore {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(TimedStore {
            inner,
            claims_ms: Mutex::new(Vec::new()),
            completed: AtomicU64::new(0),
        })
    }

    /// The claim times recorded since the last call.
    pub fn take_claims(&self) -> Vec<f64> {
        std::mem::take(&mut *self.claims_ms.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[async_trait]
impl JobStore for TimedStore {
    async fn job_insert(&self, p: JobInsert) -> kairos_store::Result<JobInserted> {
        self.inner.job_insert(p).await
    }
    async fn job_insert_many(&self, p: Vec<JobInsert>) -> kairos_store::Result<Vec<String>> {
        self.inner.job_insert_many(p).await
    }
    async fn job_insert_batch(&self, p: Vec<JobInsert>) -> kairos_store::Result<Vec<JobInserted>> {
        self.inner.job_insert_batch(p).await
    }
    async fn job_get(&self, id: &str) -> kairos_store::Result<Option<Job>> {
        self.inner.job_get(id).await
    }
    async fn job_claim(&self, p: JobClaim) -> kairos_store::Result<Vec<Job>> {
        let t = Instant::now();
        let claimed = self.inner.job_claim(p).await;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        self.claims_ms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ms);
        claimed
    }
    async fn job_lease_renew(&self, p: JobLeaseRenew) -> kairos_store::Result<u64> {
        self.inner.job_lease_renew(p).await
    }
    async fn job_complete_many(&self, p: Vec<JobComplete>) -> kairos_store::Result<CompleteReport> {
        let done = self.inner.job_complete_many(p).await;
        if let Ok(r) = &done {
            self.completed.fetch_add(r.applied, Ordering::Relaxed);
        }
        done
    }
    async fn job_rescue(&self, p: JobRescue) -> kairos_store::Result<Vec<String>> {
        self.inner.job_rescue(p).await
    }
    async fn job_next_run_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.job_next_run_at().await
    }
    async fn job_prune(
        &self,
        p: kairos_store::JobPrune,
    ) -> kairos_store::Result<kairos_store::JobPruned> {
        self.inner.job_prune(p).await
    }
    async fn retention_prune(&self, p: kairos_store::RetentionPrune) -> kairos_store::Result<u64> {
        self.inner.retention_prune(p).await
    }
}

#[async_trait]
impl JobAdminStore for TimedStore {
    async fn job_list(&self, p: JobList) -> kairos_store::Result<Vec<Job>> {
        self.inner.job_list(p).await
    }
    async fn job_search(&self, p: kairos_store::JobSearch) -> kairos_store::Result<Vec<Job>> {
        self.inner.job_search(p).await
    }
    async fn delivery_list(
        &self,
        p: kairos_store::DeliveryList,
    ) -> kairos_store::Result<Vec<kairos_store::Delivery>> {
        self.inner.delivery_list(p).await
    }
    async fn job_cancel(&self, p: JobCancel) -> kairos_store::Result<Option<Job>> {
        self.inner.job_cancel(p).await
    }
    async fn job_retry(&self, p: JobRetry) -> kairos_store::Result<Option<Job>> {
        self.inner.job_retry(p).await
    }
    async fn job_bulk_cancel(
        &self,
        p: kairos_store::JobBulkCancel,
    ) -> kairos_store::Result<kairos_store::JobBulkDone> {
        self.inner.job_bulk_cancel(p).await
    }
    async fn job_bulk_retry(
        &self,
        p: kairos_store::JobBulkRetry,
    ) -> kairos_store::Result<kairos_store::JobBulkDone> {
        self.inner.job_bulk_retry(p).await
    }
    async fn attempt_list(&self, job_id: &str) -> kairos_store::Result<Vec<Attempt>> {
        self.inner.attempt_list(job_id).await
    }
    async fn occurrence_list(
        &self,
        p: kairos_store::OccurrenceList,
    ) -> kairos_store::Result<Vec<kairos_store::OccurrenceCount>> {
        self.inner.occurrence_list(p).await
    }
}

#[async_trait]
impl ScheduleStore for TimedStore {
    async fn schedule_create(&self, p: ScheduleCreate) -> kairos_store::Result<Schedule> {
        self.inner.schedule_create(p).await
    }
    async fn schedule_get(&self, id: &str) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_get(id).await
    }
    async fn schedule_list(&self, p: ScheduleList) -> kairos_store::Result<Vec<Schedule>> {
        self.inner.schedule_list(p).await
    }
    async fn schedule_update(&self, p: ScheduleUpdate) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_update(p).await
    }
    async fn schedule_pause(&self, p: SchedulePause) -> kairos_store::Result<Option<Schedule>> {
        self.inner.schedule_pause(p).await
    }
    async fn schedule_delete(&self, id: &str) -> kairos_store::Result<bool> {
        self.inner.schedule_delete(id).await
    }
    async fn schedule_release(&self, p: ScheduleRelease) -> kairos_store::Result<u64> {
        self.inner.schedule_release(p).await
    }

    async fn schedule_due(&self, p: ScheduleDue) -> kairos_store::Result<Vec<Schedule>> {
        self.inner.schedule_due(p).await
    }
    async fn schedule_fire(&self, p: ScheduleFire) -> kairos_store::Result<ScheduleFired> {
        self.inner.schedule_fire(p).await
    }
    async fn schedule_next_fire_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.schedule_next_fire_at().await
    }
    async fn catch_up_set(&self, p: kairos_store::CatchUpSet) -> kairos_store::Result<()> {
        self.inner.catch_up_set(p).await
    }
    async fn catch_up_list(
        &self,
        schedule_id: &str,
    ) -> kairos_store::Result<Vec<kairos_store::CatchUp>> {
        self.inner.catch_up_list(schedule_id).await
    }
    async fn catch_up_due(
        &self,
        p: kairos_store::CatchUpDue,
    ) -> kairos_store::Result<Vec<kairos_store::CatchUp>> {
        self.inner.catch_up_due(p).await
    }
    async fn catch_up_next_at(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.catch_up_next_at().await
    }
    async fn catch_up_fire(
        &self,
        p: kairos_store::CatchUpFire,
    ) -> kairos_store::Result<ScheduleFired> {
        self.inner.catch_up_fire(p).await
    }
    async fn schedule_gap_list(
        &self,
        p: kairos_store::ScheduleGapList,
    ) -> kairos_store::Result<Vec<kairos_store::ScheduleGap>> {
        self.inner.schedule_gap_list(p).await
    }
    async fn schedule_buffered(
        &self,
        p: kairos_store::ScheduleBuffered,
    ) -> kairos_store::Result<Vec<kairos_store::Schedule>> {
        self.inner.schedule_buffered(p).await
    }
    async fn schedule_buffer_fire(
        &self,
        p: kairos_store::ScheduleBufferFire,
    ) -> kairos_store::Result<kairos_store::ScheduleFired> {
        self.inner.schedule_buffer_fire(p).await
    }
    async fn occurrence_open(
        &self,
        p: kairos_store::OccurrenceOpen,
    ) -> kairos_store::Result<Vec<String>> {
        self.inner.occurrence_open(p).await
    }
}

#[async_trait]
impl EndpointStore for TimedStore {
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> kairos_store::Result<Endpoint> {
        self.inner.endpoint_upsert(p).await
    }
    async fn endpoint_get(&self, id: &str) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_get(id).await
    }
    async fn endpoint_limits_set(
        &self,
        p: kairos_store::flow::EndpointLimitsSet,
    ) -> kairos_store::Result<Option<kairos_store::flow::EndpointLimits>> {
        self.inner.endpoint_limits_set(p).await
    }
    async fn endpoint_limits_list(
        &self,
        ids: Vec<String>,
    ) -> kairos_store::Result<Vec<kairos_store::flow::EndpointLimits>> {
        self.inner.endpoint_limits_list(ids).await
    }
    async fn host_limits_set(
        &self,
        p: kairos_store::flow::HostLimitsSet,
    ) -> kairos_store::Result<kairos_store::flow::HostLimits> {
        self.inner.host_limits_set(p).await
    }
    async fn host_limits_list(
        &self,
        origins: Vec<String>,
    ) -> kairos_store::Result<Vec<kairos_store::flow::HostLimits>> {
        self.inner.host_limits_list(origins).await
    }
    async fn endpoint_list(
        &self,
        p: kairos_store::EndpointList,
    ) -> kairos_store::Result<Vec<Endpoint>> {
        self.inner.endpoint_list(p).await
    }
    async fn endpoint_disable(&self, p: EndpointDisable) -> kairos_store::Result<()> {
        self.inner.endpoint_disable(p).await
    }
    async fn endpoint_enable(
        &self,
        p: kairos_store::EndpointEnable,
    ) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_enable(p).await
    }
    async fn endpoint_failure_record(
        &self,
        p: kairos_store::EndpointFailureRecord,
    ) -> kairos_store::Result<()> {
        self.inner.endpoint_failure_record(p).await
    }
    async fn endpoint_health_flush(
        &self,
        p: kairos_store::EndpointHealthFlush,
    ) -> kairos_store::Result<kairos_store::EndpointHealthFlushed> {
        self.inner.endpoint_health_flush(p).await
    }
    async fn endpoint_health_counts(
        &self,
        p: kairos_store::EndpointHealthCounts,
    ) -> kairos_store::Result<Vec<kairos_store::EndpointHealthCount>> {
        self.inner.endpoint_health_counts(p).await
    }
    async fn endpoint_streak_disable(
        &self,
        p: kairos_store::EndpointStreakDisable,
    ) -> kairos_store::Result<Vec<String>> {
        self.inner.endpoint_streak_disable(p).await
    }
    async fn endpoint_secret_rotate(
        &self,
        p: kairos_store::EndpointSecretRotate,
    ) -> kairos_store::Result<Option<Endpoint>> {
        self.inner.endpoint_secret_rotate(p).await
    }
    async fn http_target_upsert(
        &self,
        p: kairos_store::HttpTargetUpsert,
    ) -> kairos_store::Result<kairos_store::HttpTarget> {
        self.inner.http_target_upsert(p).await
    }
    async fn http_target_get(
        &self,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::HttpTarget>> {
        self.inner.http_target_get(id).await
    }
}

#[async_trait]
impl AudienceStore for TimedStore {
    async fn recipient_upsert(
        &self,
        p: kairos_store::RecipientUpsert,
    ) -> kairos_store::Result<kairos_store::Recipient> {
        self.inner.recipient_upsert(p).await
    }
    async fn recipient_upsert_many(
        &self,
        p: Vec<kairos_store::RecipientUpsert>,
    ) -> kairos_store::Result<u64> {
        self.inner.recipient_upsert_many(p).await
    }
    async fn recipient_get(
        &self,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::Recipient>> {
        self.inner.recipient_get(id).await
    }
    async fn recipient_list(
        &self,
        p: kairos_store::RecipientList,
    ) -> kairos_store::Result<Vec<kairos_store::Recipient>> {
        self.inner.recipient_list(p).await
    }
    async fn recipient_erase(
        &self,
        p: kairos_store::RecipientErase,
    ) -> kairos_store::Result<Option<kairos_store::RecipientErased>> {
        self.inner.recipient_erase(p).await
    }
    async fn topic_put(
        &self,
        p: kairos_store::TopicPut,
    ) -> kairos_store::Result<kairos_store::Topic> {
        self.inner.topic_put(p).await
    }
    async fn topic_get(&self, name: &str) -> kairos_store::Result<Option<kairos_store::Topic>> {
        self.inner.topic_get(name).await
    }
    async fn topic_list(&self) -> kairos_store::Result<Vec<kairos_store::Topic>> {
        self.inner.topic_list().await
    }
    async fn topic_delete(&self, name: &str) -> kairos_store::Result<bool> {
        self.inner.topic_delete(name).await
    }
    async fn subscription_put(
        &self,
        p: kairos_store::SubscriptionPut,
    ) -> kairos_store::Result<kairos_store::Subscription> {
        self.inner.subscription_put(p).await
    }
    async fn subscription_get(
        &self,
        r: &str,
        t: &str,
    ) -> kairos_store::Result<Option<kairos_store::Subscription>> {
        self.inner.subscription_get(r, t).await
    }
    async fn subscription_list(
        &self,
        p: kairos_store::SubscriptionList,
    ) -> kairos_store::Result<Vec<kairos_store::Subscription>> {
        self.inner.subscription_list(p).await
    }
    async fn subscription_disable(
        &self,
        p: kairos_store::SubscriptionDisable,
    ) -> kairos_store::Result<bool> {
        self.inner.subscription_disable(p).await
    }
    async fn subscription_delete(
        &self,
        p: kairos_store::SubscriptionDelete,
    ) -> kairos_store::Result<bool> {
        self.inner.subscription_delete(p).await
    }
}

#[async_trait]
impl DeliveryStore for TimedStore {
    async fn suppression_add(&self, p: kairos_store::SuppressionAdd) -> kairos_store::Result<bool> {
        self.inner.suppression_add(p).await
    }
    async fn suppression_apply(
        &self,
        p: kairos_store::SuppressionApply,
    ) -> kairos_store::Result<kairos_store::SuppressionApplied> {
        self.inner.suppression_apply(p).await
    }
    async fn suppression_get(
        &self,
        a: &str,
    ) -> kairos_store::Result<Option<kairos_store::Suppression>> {
        self.inner.suppression_get(a).await
    }
    async fn suppression_list(
        &self,
        p: kairos_store::SuppressionList,
    ) -> kairos_store::Result<Vec<kairos_store::Suppression>> {
        self.inner.suppression_list(p).await
    }
    async fn suppression_remove(
        &self,
        p: kairos_store::SuppressionRemove,
    ) -> kairos_store::Result<bool> {
        self.inner.suppression_remove(p).await
    }
    async fn expansion_begin(&self, p: kairos_store::ExpansionBegin) -> kairos_store::Result<bool> {
        self.inner.expansion_begin(p).await
    }
    async fn expansion_pending(
        &self,
        limit: i64,
    ) -> kairos_store::Result<Vec<kairos_store::Expansion>> {
        self.inner.expansion_pending(limit).await
    }
    async fn expansion_get(
        &self,
        s: &str,
        p: &str,
    ) -> kairos_store::Result<Option<kairos_store::Expansion>> {
        self.inner.expansion_get(s, p).await
    }
    async fn expansion_advance(
        &self,
        p: kairos_store::ExpansionAdvance,
    ) -> kairos_store::Result<Option<Vec<String>>> {
        self.inner.expansion_advance(p).await
    }
    async fn exposure_counts(
        &self,
        topic: &str,
    ) -> kairos_store::Result<Vec<kairos_store::ExposureCount>> {
        self.inner.exposure_counts(topic).await
    }
}

#[async_trait]
impl ArtifactStore for TimedStore {
    async fn artifact_put(
        &self,
        p: kairos_store::ArtifactPut,
    ) -> kairos_store::Result<kairos_store::ArtifactPutResult> {
        self.inner.artifact_put(p).await
    }
    async fn artifact_get(
        &self,
        p: kairos_store::ArtifactKey,
    ) -> kairos_store::Result<Option<kairos_store::Artifact>> {
        self.inner.artifact_get(p).await
    }
    async fn artifact_list(
        &self,
        p: kairos_store::ArtifactList,
    ) -> kairos_store::Result<Vec<kairos_store::Artifact>> {
        self.inner.artifact_list(p).await
    }
    async fn artifact_prune(&self, p: kairos_store::ArtifactPrune) -> kairos_store::Result<u64> {
        self.inner.artifact_prune(p).await
    }
}

#[async_trait]
impl InboundStore for TimedStore {
    async fn inbound_event_record(
        &self,
        p: kairos_store::InboundEventRecord,
    ) -> kairos_store::Result<kairos_store::InboundEventRecorded> {
        self.inner.inbound_event_record(p).await
    }
    async fn inbound_event_get(
        &self,
        source: &str,
        id: &str,
    ) -> kairos_store::Result<Option<kairos_store::InboundEvent>> {
        self.inner.inbound_event_get(source, id).await
    }
    async fn inbound_event_prune(
        &self,
        p: kairos_store::InboundEventPrune,
    ) -> kairos_store::Result<u64> {
        self.inner.inbound_event_prune(p).await
    }
    async fn exposure_outcome_count(
        &self,
        p: kairos_store::ExposureOutcomeCount,
    ) -> kairos_store::Result<Vec<kairos_store::MailOutcomeCount>> {
        self.inner.exposure_outcome_count(p).await
    }
    async fn inbound_event_count(
        &self,
        p: kairos_store::InboundEventCount,
    ) -> kairos_store::Result<Vec<kairos_store::InboundEventTally>> {
        self.inner.inbound_event_count(p).await
    }
}

#[async_trait]
impl InsightStore for TimedStore {
    async fn job_count_by_state(&self) -> kairos_store::Result<Vec<(String, i64)>> {
        self.inner.job_count_by_state().await
    }
    async fn job_count_group(
        &self,
        p: kairos_store::JobCountGroup,
    ) -> kairos_store::Result<Vec<kairos_store::JobCount>> {
        self.inner.job_count_group(p).await
    }
    async fn job_waiting(
        &self,
    ) -> kairos_store::Result<Vec<kairos_store::concurrency::JobWaiting>> {
        self.inner.job_waiting().await
    }
    async fn job_backlog(
        &self,
        p: kairos_store::JobBacklog,
    ) -> kairos_store::Result<kairos_store::Backlog> {
        self.inner.job_backlog(p).await
    }
    async fn job_count_finished(
        &self,
        p: kairos_store::JobCountFinished,
    ) -> kairos_store::Result<Vec<kairos_store::JobCount>> {
        self.inner.job_count_finished(p).await
    }
    async fn job_finished_series(
        &self,
        p: kairos_store::JobFinishedSeries,
    ) -> kairos_store::Result<Vec<kairos_store::FinishedBucket>> {
        self.inner.job_finished_series(p).await
    }
    async fn job_dead_scheduled(
        &self,
        p: kairos_store::JobDeadScheduled,
    ) -> kairos_store::Result<Vec<kairos_store::DeadScheduledRun>> {
        self.inner.job_dead_scheduled(p).await
    }
    async fn job_count_decided(
        &self,
        p: kairos_store::JobCountDecided,
    ) -> kairos_store::Result<Vec<kairos_store::DecidedGroup>> {
        self.inner.job_count_decided(p).await
    }
    async fn schedule_fire_times(
        &self,
        p: kairos_store::ScheduleFireTimes,
    ) -> kairos_store::Result<Vec<DateTime<Utc>>> {
        self.inner.schedule_fire_times(p).await
    }
    async fn slo_alert_list(&self) -> kairos_store::Result<Vec<kairos_store::SloAlert>> {
        self.inner.slo_alert_list().await
    }
    async fn slo_alert_put(&self, p: kairos_store::SloAlertPut) -> kairos_store::Result<()> {
        self.inner.slo_alert_put(p).await
    }
    async fn slo_alert_ack(
        &self,
        p: kairos_store::SloAlertAck,
    ) -> kairos_store::Result<Option<kairos_store::SloAlert>> {
        self.inner.slo_alert_ack(p).await
    }
    async fn monitor_pass_record(
        &self,
        p: kairos_store::MonitorPassRecord,
    ) -> kairos_store::Result<()> {
        self.inner.monitor_pass_record(p).await
    }
    async fn monitor_pass_last(&self) -> kairos_store::Result<Option<DateTime<Utc>>> {
        self.inner.monitor_pass_last().await
    }
    async fn monitor_pass_get(&self) -> kairos_store::Result<Option<kairos_store::MonitorPass>> {
        self.inner.monitor_pass_get().await
    }
    async fn queue_sample_record(
        &self,
        p: kairos_store::QueueSampleRecord,
    ) -> kairos_store::Result<Option<kairos_store::QueueSample>> {
        self.inner.queue_sample_record(p).await
    }
    async fn queue_sample_list(
        &self,
        p: kairos_store::QueueSampleList,
    ) -> kairos_store::Result<Vec<kairos_store::QueueSample>> {
        self.inner.queue_sample_list(p).await
    }
    async fn queue_sample_prune(
        &self,
        p: kairos_store::QueueSamplePrune,
    ) -> kairos_store::Result<u64> {
        self.inner.queue_sample_prune(p).await
    }
    async fn quarter_count_record(
        &self,
        p: kairos_store::QuarterCountRecord,
    ) -> kairos_store::Result<bool> {
        self.inner.quarter_count_record(p).await
    }
    async fn quarter_count_list(
        &self,
        p: kairos_store::QuarterCountList,
    ) -> kairos_store::Result<kairos_store::QuarterCounts> {
        self.inner.quarter_count_list(p).await
    }
    async fn quarter_count_sum(
        &self,
        p: kairos_store::QuarterCountSum,
    ) -> kairos_store::Result<kairos_store::QuarterSums> {
        self.inner.quarter_count_sum(p).await
    }
    async fn topic_count_range(
        &self,
        p: kairos_store::TopicCountRange,
    ) -> kairos_store::Result<Vec<kairos_store::TopicCount>> {
        self.inner.topic_count_range(p).await
    }
    async fn quarter_count_prune(
        &self,
        p: kairos_store::QuarterCountPrune,
    ) -> kairos_store::Result<u64> {
        self.inner.quarter_count_prune(p).await
    }
}

#[async_trait]
impl NodeStore for TimedStore {
    async fn migrate(&self) -> kairos_store::Result<()> {
        self.inner.migrate().await
    }
    async fn migration_pending(&self) -> kairos_store::Result<Vec<i64>> {
        self.inner.migration_pending().await
    }
    async fn migration_list(&self) -> kairos_store::Result<Vec<kairos_store::MigrationStatus>> {
        self.inner.migration_list().await
    }
    async fn setting_get(&self, name: &str) -> kairos_store::Result<Option<kairos_store::Setting>> {
        self.inner.setting_get(name).await
    }
    async fn setting_put(&self, p: kairos_store::SettingPut) -> kairos_store::Result<()> {
        self.inner.setting_put(p).await
    }
    async fn setting_create(
        &self,
        p: kairos_store::SettingPut,
    ) -> kairos_store::Result<Option<kairos_store::Setting>> {
        self.inner.setting_create(p).await
    }
    async fn api_token_create(&self, p: kairos_store::ApiTokenCreate) -> kairos_store::Result<()> {
        self.inner.api_token_create(p).await
    }
    async fn api_token_list(&self) -> kairos_store::Result<Vec<kairos_store::ApiTokenRecord>> {
        self.inner.api_token_list().await
    }
    async fn api_token_get(
        &self,
        token_hash: &str,
    ) -> kairos_store::Result<Option<kairos_store::ApiTokenRecord>> {
        self.inner.api_token_get(token_hash).await
    }
    async fn api_token_revoke(
        &self,
        p: kairos_store::ApiTokenRevoke,
    ) -> kairos_store::Result<bool> {
        self.inner.api_token_revoke(p).await
    }
    async fn api_token_touch(&self, p: kairos_store::ApiTokenTouch) -> kairos_store::Result<()> {
        self.inner.api_token_touch(p).await
    }
    async fn admin_session_create(
        &self,
        p: kairos_store::AdminSessionCreate,
    ) -> kairos_store::Result<()> {
        self.inner.admin_session_create(p).await
    }
    async fn admin_session_get(
        &self,
        id_hash: &str,
    ) -> kairos_store::Result<Option<kairos_store::AdminSession>> {
        self.inner.admin_session_get(id_hash).await
    }
    async fn admin_session_delete(&self, id_hash: &str) -> kairos_store::Result<bool> {
        self.inner.admin_session_delete(id_hash).await
    }
    async fn node_heartbeat(&self, p: kairos_store::NodeHeartbeat) -> kairos_store::Result<()> {
        self.inner.node_heartbeat(p).await
    }
    async fn node_list(
        &self,
        p: kairos_store::NodeList,
    ) -> kairos_store::Result<Vec<kairos_store::NodeRecord>> {
        self.inner.node_list(p).await
    }
    async fn node_prune(&self, p: kairos_store::NodePrune) -> kairos_store::Result<u64> {
        self.inner.node_prune(p).await
    }
    async fn db_health_read(
        &self,
        p: kairos_store::DbHealthRead,
    ) -> kairos_store::Result<kairos_store::DbHealth> {
        self.inner.db_health_read(p).await
    }
    async fn db_vacuum(
        &self,
        p: kairos_store::DbVacuum,
    ) -> kairos_store::Result<kairos_store::DbVacuumed> {
        self.inner.db_vacuum(p).await
    }
}

/// Jobs that succeeded since `since`. Counted over the finished jobs only (the partial
/// index on `finished_at`), not by a count per state over the whole table: behind a backlog
/// of a million jobs that scan took longer than processing 10,000 jobs, and the benchmark
/// measured it instead of the engine.
pub(crate) async fn succeeded(
    store: &dyn kairos_store::Store,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<i64, kairos_store::Error> {
    Ok(store
        .job_count_finished(kairos_store::JobCountFinished {
            since,
            until: since + chrono::Duration::days(3650),
        })
        .await?
        .into_iter()
        .filter(|c| c.state == "succeeded")
        .map(|c| c.count)
        .sum())
}
