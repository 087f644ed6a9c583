-- Late firings run (issue 30). Mirrors the SQLite migration: per-schedule misfire threshold
-- and window (NULL: the defaults), `skip` moved to the new default `once`, and one row per gap
-- of due firings that did not run.
ALTER TABLE schedules ADD COLUMN misfire_threshold_ms bigint;
ALTER TABLE schedules ADD COLUMN misfire_window_ms bigint;

UPDATE schedules SET misfire = 'once' WHERE misfire = 'skip';

CREATE TABLE schedule_gaps (
    schedule_id   text COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    reason        text NOT NULL,
    first_fire_at timestamptz NOT NULL,
    last_fire_at  timestamptz NOT NULL,
    count         bigint NOT NULL,
    recorded_at   timestamptz NOT NULL,
    recovered_at  timestamptz,
    PRIMARY KEY (schedule_id, first_fire_at, reason)
);

CREATE INDEX schedule_gaps_open ON schedule_gaps (first_fire_at) WHERE recovered_at IS NULL;
