//! The facade's catch-up and artifact operations: validation shared by the API and the CLI.

use super::{Kairos, tz_of};
use crate::catch_up;
use crate::error::OpsError;
use crate::kinds::digest::handler::valid_key;
use kairos_store::{Artifact, ArtifactKey, ArtifactList, CatchUp, CatchUpSet, Schedule};

impl Kairos {
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
