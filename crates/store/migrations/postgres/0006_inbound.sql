-- Inbound provider events, the suppression log, settings (seed 003: S3-9 … S3-13, S3-18).
-- PostgreSQL flavour of crates/store-sqlite/migrations/0006_inbound.sql: timestamptz, jsonb.

-- Each provider webhook once: the provider's event id (svix-id / webhook-id) is the key, and
-- `INSERT … ON CONFLICT DO NOTHING RETURNING` decides the first delivery (S3-11).
CREATE TABLE inbound_events (
    source              text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    type                text NOT NULL,
    provider_message_id text,
    job_id              text,
    action              text NOT NULL,
    payload             jsonb NOT NULL,
    received_at         timestamptz NOT NULL,
    PRIMARY KEY (source, id)
);

CREATE INDEX inbound_events_received ON inbound_events (received_at);

-- Every addition to and removal from the suppression list, with its reason.
CREATE TABLE suppression_log (
    id              bigserial PRIMARY KEY,
    address         text NOT NULL,
    action          text NOT NULL CHECK (action IN ('added', 'removed')),
    reason          text NOT NULL,
    source_event_id text,
    created_at      timestamptz NOT NULL
);

CREATE INDEX suppression_log_address ON suppression_log (address, id);

-- Small settings a running node reads (maintenance mode, S3-13).
CREATE TABLE settings (
    name       text COLLATE "C" PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL
);

-- An inbound event finds the job that sent its message by the provider's message id.
CREATE INDEX job_attempts_provider_id ON job_attempts (provider_id) WHERE provider_id IS NOT NULL;

-- The suppression cascade finds every recipient of an address (compared lowercase).
CREATE INDEX recipients_email_lower ON recipients (lower(btrim(email)));
