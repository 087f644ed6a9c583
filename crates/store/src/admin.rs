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

/// A scoped API token (`kairos token create`): the hash of the token, never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiTokenRecord {
    /// `tok_…`.
    pub id: String,
    /// Its unique name (`ci`).
    pub name: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// When a request last used it (recorded at most about once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// When it was revoked: it opens nothing since.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// `api_token_create`: store a new token; a name in use (even revoked) is a `Conflict`.
#[derive(Debug, Clone)]
pub struct ApiTokenCreate {
    /// The token to store (`last_used_at` and `revoked_at` are ignored).
    pub token: ApiTokenRecord,
}

/// `api_token_revoke`: revoke the token with this id or name, if it is not revoked yet.
#[derive(Debug, Clone)]
pub struct ApiTokenRevoke {
    /// Its id (`tok_…`) or name.
    pub id_or_name: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `api_token_touch`: record that the token with `token_hash` was used at `now`, unless its
/// last use is already after `skip_after` (one write a minute per token, not one a request).
#[derive(Debug, Clone)]
pub struct ApiTokenTouch {
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    /// Now.
    pub now: DateTime<Utc>,
    /// A last use after this instant is left as it is.
    pub skip_after: DateTime<Utc>,
}
