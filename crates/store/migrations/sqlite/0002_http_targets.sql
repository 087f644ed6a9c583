-- Issue 6: HTTP call targets and retention (S4-2, S4-8).

-- Where an `http` job calls and with what. Job payloads reference a row by id, so a bearer
-- token, an Authorization header or a signing secret never sits in a payload (the API lists
-- payloads). The same definition is stored once (unique fingerprint).
CREATE TABLE http_targets (
    id          TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    url         TEXT NOT NULL,
    method      TEXT NOT NULL,
    headers     TEXT NOT NULL,          -- JSON object of name -> value
    body        TEXT,
    timeout_ms  INTEGER NOT NULL,
    auth        TEXT NOT NULL CHECK (auth IN ('none', 'bearer', 'signature')),
    secret      TEXT,
    created_at  INTEGER NOT NULL
);

-- The pruner's scan: finished jobs by age. Partial, so it is written once per job, when it
-- finishes, and never on the hot claim/retry path of unfinished jobs.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
