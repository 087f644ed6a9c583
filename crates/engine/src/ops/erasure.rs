//! Erasure of a person (`DELETE /v1/recipients/{id}`, `kairos recipient delete`), and the
//! deletion of topics and subscriptions. docs/privacy.md says what is stored where and how
//! erasure reaches each place.
//!
//! Erasing a recipient, in order:
//! 1. their pending jobs (`available`, `running`; the jobs whose payload names them) are
//!    cancelled with reason `erased`, in batches (`job_bulk_cancel`);
//! 2. one store transaction deletes the recipient (address, attributes) and their
//!    subscriptions, keeps the suppression of their address as its keyed hash (the erasure
//!    key is created on first use), and replaces the address in stored inbound events and in
//!    their jobs' stored errors and responses;
//! 3. outbox files kairos wrote (`<data_dir>/outbox/*.eml`) that hold the address are
//!    deleted.
//!
//! Nothing here logs an address.

use super::Kairos;
use crate::error::OpsError;
use kairos_store::*;
use std::path::{Path, PathBuf};

/// The reason recorded on the jobs an erasure cancels.
pub const ERASED_REASON: &str = "erased";

/// What erasing a recipient did (`kairos recipient delete` prints it; the API answers 204).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Erasure {
    /// Pending jobs cancelled with reason `erased`.
    pub jobs_cancelled: u64,
    /// Subscriptions deleted.
    pub subscriptions_deleted: u64,
    /// Suppression entries now stored as the keyed hash.
    pub suppressions_hashed: u64,
    /// Stored inbound events whose payload had the address replaced.
    pub events_redacted: u64,
    /// Stored job errors and responses that had the address replaced.
    pub texts_redacted: u64,
    /// Outbox files deleted.
    pub outbox_files_deleted: u64,
}

impl Kairos {
    /// Where the `file` email transport writes (`<data_dir>/outbox`): erasure deletes the
    /// messages there that hold the erased address.
    pub fn with_outbox(mut self, dir: PathBuf) -> Self {
        self.outbox = Some(dir);
        self
    }

    /// Erase a recipient (see the module docs). Not found: a recipient that does not exist,
    /// or was erased already.
    pub async fn recipient_erase(&self, id: &str) -> Result<Erasure, OpsError> {
        if self.store.recipient_get(id).await?.is_none() {
            return Err(OpsError::not_found("recipient", id));
        }
        let select = JobSelect {
            ids: None,
            filter: JobFilter {
                recipient_id: Some(id.to_string()),
                ..Default::default()
            },
            after_id: None,
            limit: JOB_BULK_BATCH,
        };
        let jobs_cancelled = self.job_bulk_cancel_select(select, ERASED_REASON).await?;
        let erased = self
            .store
            .recipient_erase(RecipientErase {
                id: id.to_string(),
                new_key: rand::random::<[u8; 32]>().to_vec(),
                now: self.clock.now(),
            })
            .await?
            .ok_or_else(|| OpsError::not_found("recipient", id))?;
        let outbox_files_deleted = match &self.outbox {
            Some(dir) => scrub_outbox(dir.clone(), erased.address.clone()).await?,
            None => 0,
        };
        tracing::info!(
            jobs_cancelled,
            subscriptions = erased.subscriptions,
            suppressions_hashed = erased.suppressions_hashed,
            events_redacted = erased.events_redacted,
            outbox_files_deleted,
            "recipient erased"
        );
        Ok(Erasure {
            jobs_cancelled,
            subscriptions_deleted: erased.subscriptions,
            suppressions_hashed: erased.suppressions_hashed,
            events_redacted: erased.events_redacted,
            texts_redacted: erased.texts_redacted,
            outbox_files_deleted,
        })
    }

    /// Delete a topic and every subscription to it. Schedules naming the topic stay; their
    /// next jobs fail with "topic does not exist".
    pub async fn topic_delete(&self, name: &str) -> Result<(), OpsError> {
        if self.store.topic_delete(name).await? {
            Ok(())
        } else {
            Err(OpsError::not_found("topic", name))
        }
    }

    /// Delete the subscription of (recipient, topic).
    pub async fn subscription_delete(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<(), OpsError> {
        let deleted = self
            .store
            .subscription_delete(SubscriptionDelete {
                recipient_id: recipient_id.to_string(),
                topic: topic.to_string(),
            })
            .await?;
        if deleted {
            Ok(())
        } else {
            Err(OpsError::not_found(
                "subscription",
                &format!("{recipient_id}/{topic}"),
            ))
        }
    }
}

/// Delete every file in `dir` whose bytes hold `address` (ASCII case-insensitive): the `.eml`
/// messages the file transport wrote to it, and any temporary file left by a crash. A missing
/// directory holds nothing.
async fn scrub_outbox(dir: PathBuf, address: String) -> Result<u64, OpsError> {
    tokio::task::spawn_blocking(move || scrub_dir(&dir, &address))
        .await
        .map_err(|e| {
            OpsError::new(
                crate::error::OpsErrorKind::Internal,
                format!("outbox scrub: {e}"),
            )
        })?
        .map_err(|e| {
            OpsError::new(
                crate::error::OpsErrorKind::Internal,
                format!("removing the address from the outbox failed: {e}"),
            )
        })
}

fn scrub_dir(dir: &Path, address: &str) -> std::io::Result<u64> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let needle = normalize_address(address).into_bytes();
    if needle.is_empty() {
        return Ok(0);
    }
    let mut deleted = 0;
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let bytes = std::fs::read(entry.path())?;
        if bytes
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(&needle))
        {
            std::fs::remove_file(entry.path())?;
            deleted += 1;
        }
    }
    Ok(deleted)
}
