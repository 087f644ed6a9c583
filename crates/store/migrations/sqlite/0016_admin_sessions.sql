-- Admin UI sessions (issue 12): one row per login, deleted on logout, so an old cookie opens
-- nothing after logout on any node or after a restart. `id_hash` is the hex SHA-256 of the
-- session id the cookie carries; the id itself is never stored.
CREATE TABLE admin_sessions (
    id_hash    TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires_at);
