//! What the metrics and the SLO monitor read: counts, backlog and alert states.

use crate::*;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Read-only aggregates over jobs and schedules for the metrics and the monitor, and the
/// monitor's stored alert states.
#[async_trait]
pub trait InsightStore: Send + Sync {
    /// Number of jobs per state.
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>>;
    /// Number of jobs per state and kind in one group of states, ordered by state and kind
    /// (the `kairos_jobs` gauge): the queue's states at each `/metrics` scrape, the retained
    /// ones when their count is due ([`JobStateGroup`]).
    async fn job_count_group(&self, p: JobCountGroup) -> Result<Vec<JobCount>>;
    /// Jobs put back to wait, per reason (every reason of
    /// [`WAIT_REASONS`](crate::concurrency::WAIT_REASONS), zeros included): the
    /// `kairos_jobs_waiting` and `kairos_job_wait_seconds_total` metrics.
    async fn job_waiting(&self) -> Result<Vec<crate::concurrency::JobWaiting>>;
    /// The queue depth, the oldest due job, and stuck work.
    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog>;
    /// Jobs that reached a final state (`finished_at`) in a window, per state and kind (the
    /// failure rate).
    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>>;
    /// Jobs that reached `succeeded` or `dead` in a window, per time bucket and state (the
    /// admin's throughput charts).
    async fn job_finished_series(&self, p: JobFinishedSeries) -> Result<Vec<FinishedBucket>>;
    /// Schedules with jobs that reached `dead` in a window, one row per schedule with its
    /// latest dead job, newest first, at most `limit` (the `dead_runs` check).
    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>>;
    /// Jobs that reached `succeeded`, `skipped` or `dead` in a window, per schedule (or
    /// `payload.topic` of `email` jobs without a schedule), state and skip reason (the
    /// `skip_rate` check). Jobs with neither are not counted.
    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<DecidedGroup>>;
    /// The distinct `fire_at` of a schedule's jobs and audience expansions in a window,
    /// ascending: the firings materialized (missed firings).
    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>>;
    /// Every stored SLO alert state.
    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>>;
    /// Insert or replace an SLO alert state.
    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()>;
    /// Acknowledge an alert (see [`SloAlertAck`]); its state afterwards, `None` for an
    /// unknown key.
    async fn slo_alert_ack(&self, p: SloAlertAck) -> Result<Option<SloAlert>>;
    /// Record that the background monitor completed a pass (replaces the previous record).
    async fn monitor_pass_record(&self, p: MonitorPassRecord) -> Result<()>;
    /// When the background monitor last completed a pass; `None` before its first.
    async fn monitor_pass_last(&self) -> Result<Option<DateTime<Utc>>>;
    /// The background monitor's last completed pass with what it found; `None` before its
    /// first.
    async fn monitor_pass_get(&self) -> Result<Option<MonitorPass>>;
    /// Measure the queue and store it as a minute's sample (see [`QueueSampleRecord`]); the
    /// sample stored, `None` when the minute had one already.
    async fn queue_sample_record(&self, p: QueueSampleRecord) -> Result<Option<QueueSample>>;
    /// The samples of a window's minutes, oldest first.
    async fn queue_sample_list(&self, p: QueueSampleList) -> Result<Vec<QueueSample>>;
    /// Delete the samples older than a minute; how many.
    async fn queue_sample_prune(&self, p: QueueSamplePrune) -> Result<u64>;
    /// Count a quarter hour's succeeded jobs with a topic, its decided jobs and its finished
    /// jobs per kind, and store the counts (see [`QuarterCountRecord`]); false when the quarter
    /// was counted already, or when its jobs kept being retried while they were read (a job
    /// sent back to the queue between the read and the store is never counted in it; the
    /// next call counts the quarter).
    async fn quarter_count_record(&self, p: QuarterCountRecord) -> Result<bool>;
    /// The quarters counted in a window, with their counts of one kind ([`QuarterCountOf`]).
    async fn quarter_count_list(&self, p: QuarterCountList) -> Result<QuarterCounts>;
    /// One kind of counts summed over the quarters of a range, per key (see
    /// [`QuarterCountSum`]).
    async fn quarter_count_sum(&self, p: QuarterCountSum) -> Result<QuarterSums>;
    /// The succeeded jobs with a topic in a window, per kind and topic, with their bounced and
    /// complained mails, counted from the job table (what the counted quarters do not cover).
    async fn topic_count_range(&self, p: TopicCountRange) -> Result<Vec<TopicCount>>;
    /// Delete the counts of the quarters before an instant; how many quarters.
    async fn quarter_count_prune(&self, p: QuarterCountPrune) -> Result<u64>;
}
