//! What digests produce: artifacts, one per (name, period key).

use crate::*;
use async_trait::async_trait;

/// Artifacts: written once per (name, period key), never overwritten.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// Store an artifact unless its (name, period key) exists (insert-if-absent, never an
    /// overwrite) and, only if it was created, its follow-up jobs in the same transaction.
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult>;
    /// An artifact by name and period key.
    async fn artifact_get(&self, p: ArtifactKey) -> Result<Option<Artifact>>;
    /// Artifacts, newest period first, optionally of one name.
    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>>;
    /// Delete artifacts created before a cut-off, at most `limit` (retention). Returns how
    /// many.
    async fn artifact_prune(&self, p: ArtifactPrune) -> Result<u64>;
}
