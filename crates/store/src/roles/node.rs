//! What a node needs to run and be operated: its schema, settings and admin sessions.

use crate::*;
use async_trait::async_trait;

/// The schema (migrations), node-wide settings and admin UI sessions.
#[async_trait]
pub trait NodeStore: Send + Sync {
    /// Apply the embedded migrations (idempotent).
    async fn migrate(&self) -> Result<()>;
    /// Versions of the embedded migrations not applied to the database (empty: current).
    async fn migration_pending(&self) -> Result<Vec<i64>> {
        Ok(self
            .migration_list()
            .await?
            .into_iter()
            .filter(|m| m.applied_at.is_none())
            .map(|m| m.version)
            .collect())
    }
    /// Every embedded migration, in order, with whether it is applied.
    async fn migration_list(&self) -> Result<Vec<MigrationStatus>>;
    /// A setting by name.
    async fn setting_get(&self, name: &str) -> Result<Option<Setting>>;
    /// Set or clear a setting.
    async fn setting_put(&self, p: SettingPut) -> Result<()>;
    /// Store a setting only if it does not exist yet; the stored value afterwards (the one
    /// given, or the one already there: the first writer wins).
    async fn setting_create(&self, p: SettingPut) -> Result<Option<Setting>>;
    /// Store an admin session, deleting expired ones in the same transaction.
    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()>;
    /// An admin session by the hash of its id (expired or not: the caller compares).
    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>>;
    /// End an admin session (logout); `false` if it did not exist.
    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool>;
    /// Store a scoped API token (a name in use is a `Conflict`).
    async fn api_token_create(&self, p: ApiTokenCreate) -> Result<()>;
    /// Every scoped API token, revoked ones too, oldest first.
    async fn api_token_list(&self) -> Result<Vec<ApiTokenRecord>>;
    /// A scoped API token by the hash of the token (revoked or not: the caller checks).
    async fn api_token_get(&self, token_hash: &str) -> Result<Option<ApiTokenRecord>>;
    /// Revoke a token by id or name; `false` if there is none, or it is revoked already.
    async fn api_token_revoke(&self, p: ApiTokenRevoke) -> Result<bool>;
    /// Record a token's use (see [`ApiTokenTouch`]).
    async fn api_token_touch(&self, p: ApiTokenTouch) -> Result<()>;
    /// What holds the database's cleanup back: open snapshots, dead row versions, the WAL.
    async fn db_health_read(&self, p: DbHealthRead) -> Result<DbHealth>;
    /// Reclaim the space of the job tables' dead row versions where nothing else does
    /// (PostgreSQL with autovacuum off; see [`DbVacuum`]).
    async fn db_vacuum(&self, p: DbVacuum) -> Result<DbVacuumed>;
    /// Record a node's heartbeat (see [`NodeHeartbeat`]).
    async fn node_heartbeat(&self, p: NodeHeartbeat) -> Result<()>;
    /// The nodes with their heartbeats and running jobs, by id (see [`NodeList`]).
    async fn node_list(&self, p: NodeList) -> Result<Vec<NodeRecord>>;
    /// Forget the nodes silent for long; how many.
    async fn node_prune(&self, p: NodePrune) -> Result<u64>;
}
