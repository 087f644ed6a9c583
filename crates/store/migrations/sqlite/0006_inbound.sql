-- Inbound provider events, the suppression log, settings (seed 003: S3-9 … S3-13, S3-18).
-- Instants are INTEGER milliseconds since the epoch, as in 0001.

-- Each provider webhook once: the provider's event id (svix-id / webhook-id) is the key, and
-- `INSERT … ON CONFLICT DO NOTHING RETURNING` decides the first delivery (S3-11).
CREATE TABLE inbound_events (
    source              TEXT NOT NULL,
    id                  TEXT NOT NULL,
    type                TEXT NOT NULL,
    provider_message_id TEXT,
    job_id              TEXT,
    action              TEXT NOT NULL,   -- suppressed | recorded | unknown (unknown values read as stored)
    payload             TEXT NOT NULL,   -- JSON as received
    received_at         INTEGER NOT NULL,
    PRIMARY KEY (source, id)
);

CREATE INDEX inbound_events_received ON inbound_events (received_at);

-- Every addition to and removal from the suppression list, with its reason.
CREATE TABLE suppression_log (
    id              INTEGER PRIMARY KEY,
    address         TEXT NOT NULL,
    action          TEXT NOT NULL CHECK (action IN ('added', 'removed')),
    reason          TEXT NOT NULL,
    source_event_id TEXT,
    created_at      INTEGER NOT NULL
);

CREATE INDEX suppression_log_address ON suppression_log (address, id);

-- Small settings a running node reads (maintenance mode, S3-13).
CREATE TABLE settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- An inbound event finds the job that sent its message by the provider's message id.
CREATE INDEX job_attempts_provider_id ON job_attempts (provider_id) WHERE provider_id IS NOT NULL;

-- The suppression cascade finds every recipient of an address (compared lowercase).
CREATE INDEX recipients_email_lower ON recipients (lower(trim(email)));
