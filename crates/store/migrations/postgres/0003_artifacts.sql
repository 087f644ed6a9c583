-- Artifacts (S4-1, S4-5) and schedule catch-up times (S4-4). Mirrors the SQLite migration
-- 0003; the differences are types (timestamptz, jsonb) and `COLLATE "C"` on ids.
CREATE TABLE artifacts (
    name        text COLLATE "C" NOT NULL,
    period_key  text COLLATE "C" NOT NULL,
    content     text NOT NULL,
    data        jsonb NOT NULL,
    job_id      text COLLATE "C",
    schedule_id text COLLATE "C",
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (name, period_key)
);

CREATE INDEX artifacts_created ON artifacts (created_at);

CREATE TABLE schedule_catch_ups (
    schedule_id text COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    at          text NOT NULL,
    next_at     timestamptz,
    PRIMARY KEY (schedule_id, at)
);

CREATE INDEX schedule_catch_ups_due ON schedule_catch_ups (next_at) WHERE next_at IS NOT NULL;
