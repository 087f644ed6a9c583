-- Endpoint health, auto-disable and secret rotation (issue 15 §3). Mirrors the SQLite
-- migration.
ALTER TABLE endpoints ADD COLUMN last_success_at timestamptz;
ALTER TABLE endpoints ADD COLUMN consecutive_failures bigint NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN failing_since timestamptz;
ALTER TABLE endpoints ADD COLUMN previous_secret text;
ALTER TABLE endpoints ADD COLUMN previous_secret_expires_at timestamptz;

CREATE TABLE endpoint_health_hours (
    endpoint_id text COLLATE "C" NOT NULL,
    hour        timestamptz NOT NULL,
    attempts    bigint NOT NULL,
    failures    bigint NOT NULL,
    PRIMARY KEY (endpoint_id, hour)
);
CREATE INDEX endpoint_health_hours_hour ON endpoint_health_hours (hour);

CREATE TABLE endpoint_health_cursor (
    id              integer PRIMARY KEY CHECK (id = 1),
    last_attempt_id bigint NOT NULL
);
INSERT INTO endpoint_health_cursor (id, last_attempt_id)
SELECT 1, COALESCE(MAX(id), 0) FROM job_attempts;
