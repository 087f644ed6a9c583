//! Admin UI sessions: one row per login, so that logging out (or expiry) ends a session on
//! every node and across restarts. The row holds a hash of the session id, never the id: a
//! copy of the database opens no session.

use chrono::{DateTime, Utc};

/// A stored admin session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminSession {
    /// Hex SHA-256 of the session id the cookie carries.
    pub id_hash: String,
    /// When the operator logged in.
    pub created_at: DateTime<Utc>,
    /// When the session ends by itself.
    pub expires_at: DateTime<Utc>,
}

/// `admin_session_create`: store a new session and, in the same transaction, delete every
/// session that expired at or before `session.created_at` (so the table stays small).
#[derive(Debug, Clone)]
pub struct AdminSessionCreate {
    /// The session to store.
    pub session: AdminSession,
}

/// One embedded migration and whether it is applied (`kairos migrate --list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// Its version.
    pub version: i64,
    /// Its name.
    pub name: String,
    /// When it was applied, as the database prints it; `None`: pending.
    pub applied_at: Option<String>,
}
