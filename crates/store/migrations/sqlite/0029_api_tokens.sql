-- Scoped API tokens (issue 35): `kairos token create --name ci --scope read|write|admin`. The
-- row holds the hex SHA-256 of the token, never the token; a revoked token stays listed.
CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    scope        TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
