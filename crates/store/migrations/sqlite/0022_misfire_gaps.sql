-- Late firings run (issue 30). A schedule may set its own misfire threshold and window (NULL:
-- the node's default threshold, a 7-day window), and the due firings that did not run are
-- recorded, one row per gap and reason, for the occurrences list and the missed_firings check.
ALTER TABLE schedules ADD COLUMN misfire_threshold_ms INTEGER;
ALTER TABLE schedules ADD COLUMN misfire_window_ms INTEGER;

-- `skip` was the default policy, so stored `skip` cannot tell a choice from the default; the
-- new default `once` runs a firing missed while no node ran (see docs/operations.md, upgrade).
UPDATE schedules SET misfire = 'once' WHERE misfire = 'skip';

-- Gone with the schedule. `recovered_at`: the schedule's next on-time firing after the gap.
CREATE TABLE schedule_gaps (
    schedule_id   TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    reason        TEXT NOT NULL,
    first_fire_at INTEGER NOT NULL,
    last_fire_at  INTEGER NOT NULL,
    count         INTEGER NOT NULL,
    recorded_at   INTEGER NOT NULL,
    recovered_at  INTEGER,
    PRIMARY KEY (schedule_id, first_fire_at, reason)
);

-- Serves the missed_firings check: the gaps not recovered yet.
CREATE INDEX schedule_gaps_open ON schedule_gaps (first_fire_at) WHERE recovered_at IS NULL;
