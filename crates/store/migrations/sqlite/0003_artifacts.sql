-- Artifacts (S4-1, S4-5): one product per (name, period key). The primary key is the rule
-- "a period is built once": `INSERT … ON CONFLICT DO NOTHING` keeps the first.
CREATE TABLE artifacts (
    name        TEXT NOT NULL,
    period_key  TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,          -- JSON: items, failed feeds, summarizer
    job_id      TEXT,
    schedule_id TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (name, period_key)
);

-- Retention (S4-8) deletes the oldest first.
CREATE INDEX artifacts_created ON artifacts (created_at);

-- Catch-up times of schedules (S4-4): at `at` (HH:MM in the schedule's zone) the scheduler
-- runs the period again only if its product is missing. Gone with the schedule.
CREATE TABLE schedule_catch_ups (
    schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    at          TEXT NOT NULL,
    next_at     INTEGER,
    PRIMARY KEY (schedule_id, at)
);

CREATE INDEX schedule_catch_ups_due ON schedule_catch_ups (next_at) WHERE next_at IS NOT NULL;
