-- kairos schema, SQLite flavour. Instants are INTEGER milliseconds since the Unix epoch (UTC):
-- they sort and compare fastest and keep the millisecond precision a job's run_at needs.
-- The PostgreSQL schema mirrors this one with timestamptz (S0-14: plain SQL anyone can read).

CREATE TABLE endpoints (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    disabled_at     INTEGER,
    disabled_reason TEXT,
    created_at      INTEGER NOT NULL,
    UNIQUE (url, secret)
);

CREATE TABLE schedules (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL,
    spec         TEXT NOT NULL,          -- JSON: {"type":"cron","expr":…} | at | every
    timezone     TEXT NOT NULL,
    period       TEXT NOT NULL,
    misfire      TEXT NOT NULL,
    payload      TEXT NOT NULL,
    endpoint_id  TEXT REFERENCES endpoints (id),
    retry        TEXT,
    state        TEXT NOT NULL CHECK (state IN ('active', 'paused', 'finished')),
    next_fire_at INTEGER,
    last_fire_at INTEGER,
    locked_until INTEGER,
    locked_by    TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

-- Serves the scheduler's due query (S0-1): only active schedules, by next firing.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE state = 'active';

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    state            TEXT NOT NULL
                     CHECK (state IN ('available', 'running', 'succeeded', 'skipped', 'cancelled', 'dead')),
    payload          TEXT NOT NULL,
    endpoint_id      TEXT,
    schedule_id      TEXT,
    fire_at          INTEGER,
    period_key       TEXT,
    dedupe_key       TEXT UNIQUE,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    retry            TEXT,                -- NULL: the kind's default policy
    run_at           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    attempted_at     INTEGER,
    finished_at      INTEGER,
    locked_by        TEXT,
    lease_token      TEXT,
    lease_expires_at INTEGER,
    last_error       TEXT,
    reason           TEXT
);

-- The claim query reads only this partial index: its cost does not grow with finished jobs,
-- and dead jobs are never in it (S0-3).
CREATE INDEX jobs_due ON jobs (run_at, id) WHERE state = 'available';
-- The rescuer's query: running jobs by lease end.
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
-- Dead letters for the DLQ listing. (No general index on state: it would be rewritten on every
-- transition of every job, the hottest write path; listings by other states scan newest first.)
CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead';
CREATE INDEX jobs_schedule ON jobs (schedule_id, id) WHERE schedule_id IS NOT NULL;

CREATE TABLE job_attempts (
    id           INTEGER PRIMARY KEY,
    job_id       TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    outcome      TEXT NOT NULL CHECK (outcome IN ('succeeded', 'skipped', 'failed', 'lost', 'cancelled')),
    error_class  TEXT,
    status_code  INTEGER,
    error        TEXT,
    response     TEXT,
    provider_id  TEXT,
    node         TEXT
);

CREATE INDEX job_attempts_job ON job_attempts (job_id, attempt);
