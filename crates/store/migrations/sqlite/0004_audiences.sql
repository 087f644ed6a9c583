-- Audiences (seed 003): recipients, topics, subscriptions, suppressions, audience expansion
-- progress and A/B exposures. Personal data (email, attributes) lives only in `recipients`;
-- jobs carry ids (S3-8). Instants are INTEGER milliseconds since the epoch, as in 0001.

CREATE TABLE recipients (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    locale      TEXT,
    attributes  TEXT NOT NULL,           -- JSON object
    state       TEXT NOT NULL CHECK (state IN ('active', 'disabled')),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE topics (
    name                   TEXT PRIMARY KEY,
    subject                TEXT NOT NULL,
    html                   TEXT,
    text                   TEXT,
    variants               TEXT NOT NULL,  -- JSON array of {name, weight, subject, html, text}
    entitlement_url        TEXT,
    entitlement_timeout_ms INTEGER,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL
);

CREATE TABLE subscriptions (
    recipient_id TEXT NOT NULL REFERENCES recipients (id) ON DELETE CASCADE,
    topic        TEXT NOT NULL,
    target       TEXT,
    channels     TEXT NOT NULL,          -- JSON array: ["email"]
    enabled      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (recipient_id, topic)
);

-- The audience expansion pages through one topic's subscribers by recipient id (keyset).
CREATE INDEX subscriptions_topic ON subscriptions (topic, recipient_id);

CREATE TABLE suppressions (
    address         TEXT PRIMARY KEY,    -- trimmed, lowercase
    reason          TEXT NOT NULL,
    source_event_id TEXT,
    created_at      INTEGER NOT NULL
);

-- One row per firing of an audience schedule: the expansion's cursor, so that a crash half
-- way through resumes after the last committed page (S3-3).
CREATE TABLE expansions (
    schedule_id TEXT NOT NULL,
    period_key  TEXT NOT NULL,
    fire_at     INTEGER NOT NULL,
    cursor      TEXT,
    done        INTEGER NOT NULL DEFAULT 0,
    created     INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (schedule_id, period_key)
);

CREATE INDEX expansions_pending ON expansions (updated_at) WHERE done = 0;

-- A/B exposures: written by the completion of a succeeded email job, in its transaction
-- (S3-19), so exposures equal successful sends.
CREATE TABLE exposures (
    job_id       TEXT PRIMARY KEY,
    topic        TEXT NOT NULL,
    variant      TEXT NOT NULL,
    recipient_id TEXT,
    period_key   TEXT,
    created_at   INTEGER NOT NULL
);

CREATE INDEX exposures_topic ON exposures (topic, variant);

-- Occurrence view: a schedule's jobs by period.
CREATE INDEX jobs_schedule_period ON jobs (schedule_id, period_key) WHERE schedule_id IS NOT NULL;
