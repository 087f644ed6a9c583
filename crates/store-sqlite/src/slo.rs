//! Monitoring reads (metrics, SLO checks, readiness) and the SLO alert state, on SQLite:
//! the shared statements (`kairos_store::sql::insight`); reads go to the read pool, the alert
//! write goes through the one writer.

use crate::SqliteStore;
use crate::rows::SqRun;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::sql::insight;
use kairos_store::*;

#[async_trait]
impl InsightStore for SqliteStore {
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>> {
        insight::job_count_by_state(&mut SqRun::Pool(&self.read)).await
    }

    async fn job_count_by_state_kind(&self) -> Result<Vec<JobCount>> {
        insight::job_count_by_state_kind(&mut SqRun::Pool(&self.read)).await
    }

    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog> {
        insight::job_backlog(&mut SqRun::Pool(&self.read), p).await
    }

    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>> {
        insight::job_count_finished(&mut SqRun::Pool(&self.read), p).await
    }

    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>> {
        insight::job_dead_scheduled(&mut SqRun::Pool(&self.read), p).await
    }

    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<DecidedCount>> {
        insight::job_count_decided(&mut SqRun::Pool(&self.read), p).await
    }

    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>> {
        insight::schedule_fire_times(&mut SqRun::Pool(&self.read), p).await
    }

    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>> {
        insight::slo_alert_list(&mut SqRun::Pool(&self.read)).await
    }

    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()> {
        insight::slo_alert_put(&mut SqRun::Pool(&self.write), p).await
    }
}
