-- Endpoint health, auto-disable and secret rotation (issue 15 §3).
--
-- Health is folded from job_attempts by a leader-only service, never written on the delivery
-- path: the streak columns below and the hourly counters are what it keeps.
ALTER TABLE endpoints ADD COLUMN last_success_at INTEGER;
ALTER TABLE endpoints ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN failing_since INTEGER;
-- The secret before the last rotation, sealed as `secret` is; it signs beside the new one
-- until previous_secret_expires_at. Not part of the lookup hash: the endpoint is found by its
-- current (url, secret).
ALTER TABLE endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE endpoints ADD COLUMN previous_secret_expires_at INTEGER;

-- Sends and failed sends per endpoint and hour (its start), for the 24 h failure rate; pruned
-- after 48 h.
CREATE TABLE endpoint_health_hours (
    endpoint_id TEXT NOT NULL,
    hour        INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    failures    INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, hour)
);
CREATE INDEX endpoint_health_hours_hour ON endpoint_health_hours (hour);

-- How far the health service has read job_attempts (one row). It starts at the attempts that
-- exist now: health counts from the upgrade on, so an old streak cannot disable an endpoint.
CREATE TABLE endpoint_health_cursor (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    last_attempt_id INTEGER NOT NULL
);
INSERT INTO endpoint_health_cursor (id, last_attempt_id)
SELECT 1, COALESCE(MAX(id), 0) FROM job_attempts;
