//! Operations on deliverability: a topic's A/B variants with what became of their mails.

use super::Kairos;
use crate::error::OpsError;
use kairos_store::{ExposureOutcomeCount, MailOutcomeCount};

impl Kairos {
    /// Per A/B variant of topic `name`: its mails sent (exposures, recorded with each
    /// successful send) and how many of them were delivered, opened, clicked, bounced and
    /// marked as spam, by the provider events matched to their jobs by provider message id.
    /// Not found if the topic does not exist; empty if it has no exposures.
    pub async fn topic_variant_stats(&self, name: &str) -> Result<Vec<MailOutcomeCount>, OpsError> {
        self.topic_get(name).await?;
        Ok(self
            .store
            .exposure_outcome_count(ExposureOutcomeCount {
                topic: name.to_string(),
            })
            .await?)
    }
}
