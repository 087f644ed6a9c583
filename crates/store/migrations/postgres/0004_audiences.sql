-- Audiences (seed 003), PostgreSQL flavour of crates/store-sqlite/migrations/0004_audiences.sql:
-- the same tables and columns; instants are timestamptz, JSON is jsonb, flags are boolean.
-- Personal data (email, attributes) lives only in `recipients`; jobs carry ids (S3-8).

CREATE TABLE recipients (
    id          text COLLATE "C" PRIMARY KEY,
    email       text NOT NULL,
    timezone    text NOT NULL,
    locale      text,
    attributes  jsonb NOT NULL,
    state       text NOT NULL CHECK (state IN ('active', 'disabled')),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE topics (
    name                   text COLLATE "C" PRIMARY KEY,
    subject                text NOT NULL,
    html                   text,
    text                   text,
    variants               jsonb NOT NULL,
    entitlement_url        text,
    entitlement_timeout_ms bigint,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL
);

CREATE TABLE subscriptions (
    recipient_id text COLLATE "C" NOT NULL REFERENCES recipients (id) ON DELETE CASCADE,
    topic        text COLLATE "C" NOT NULL,
    target       text,
    channels     jsonb NOT NULL,
    enabled      boolean NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (recipient_id, topic)
);

-- The audience expansion pages through one topic's subscribers by recipient id (keyset).
CREATE INDEX subscriptions_topic ON subscriptions (topic, recipient_id);

CREATE TABLE suppressions (
    address         text PRIMARY KEY,    -- trimmed, lowercase
    reason          text NOT NULL,
    source_event_id text,
    created_at      timestamptz NOT NULL
);

-- One row per firing of an audience schedule: the expansion's cursor (S3-3).
CREATE TABLE expansions (
    schedule_id text COLLATE "C" NOT NULL,
    period_key  text NOT NULL,
    fire_at     timestamptz NOT NULL,
    cursor      text COLLATE "C",
    done        boolean NOT NULL DEFAULT false,
    created     bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (schedule_id, period_key)
);

CREATE INDEX expansions_pending ON expansions (updated_at) WHERE NOT done;

-- A/B exposures, written with the completion of a succeeded email job (S3-19).
CREATE TABLE exposures (
    job_id       text COLLATE "C" PRIMARY KEY,
    topic        text NOT NULL,
    variant      text NOT NULL,
    recipient_id text,
    period_key   text,
    created_at   timestamptz NOT NULL
);

CREATE INDEX exposures_topic ON exposures (topic, variant);

-- Occurrence view: a schedule's jobs by period.
CREATE INDEX jobs_schedule_period ON jobs (schedule_id, period_key) WHERE schedule_id IS NOT NULL;
