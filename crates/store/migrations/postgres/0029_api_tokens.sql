-- Scoped API tokens (issue 35): `kairos token create --name ci --scope read|write|admin`. The
-- row holds the hex SHA-256 of the token, never the token; a revoked token stays listed.
-- Mirrors the SQLite table with timestamptz.
CREATE TABLE api_tokens (
    id           text PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    scope        text NOT NULL,
    token_hash   text NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
