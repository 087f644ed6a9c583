-- Issue 6: HTTP call targets and retention (S4-2, S4-8). Mirrors the SQLite migration 0002;
-- the differences are types (timestamptz, jsonb).

-- Where an `http` job calls and with what. Job payloads reference a row by id, so a bearer
-- token, an Authorization header or a signing secret never sits in a payload (the API lists
-- payloads). The same definition is stored once (unique fingerprint).
CREATE TABLE http_targets (
    id          text COLLATE "C" PRIMARY KEY,
    fingerprint text NOT NULL UNIQUE,
    url         text NOT NULL,
    method      text NOT NULL,
    headers     jsonb NOT NULL,         -- object of name -> value
    body        text,
    timeout_ms  bigint NOT NULL,
    auth        text NOT NULL CHECK (auth IN ('none', 'bearer', 'signature')),
    secret      text,
    created_at  timestamptz NOT NULL
);

-- The pruner's scan: finished jobs by age. Partial, so it is written once per job, when it
-- finishes, and never on the hot claim/retry path of unfinished jobs.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
