-- kairos schema, PostgreSQL flavour. It mirrors the SQLite schema (crates/store-sqlite/
-- migrations/0001_init.sql) table for table, column for column; the differences are types:
-- instants are timestamptz (microsecond precision, UTC), JSON is jsonb, the attempt log's key
-- is an identity column. Ids are `COLLATE "C"`: byte order, like SQLite, whatever the
-- database's default collation, so `ORDER BY id` is time order and comparisons are cheap.
-- Tables are created unqualified: the runner sets search_path to the store's schema.

CREATE TABLE endpoints (
    id              text COLLATE "C" PRIMARY KEY,
    url             text NOT NULL,
    secret          text NOT NULL,
    disabled_at     timestamptz,
    disabled_reason text,
    created_at      timestamptz NOT NULL,
    UNIQUE (url, secret)
);

CREATE TABLE schedules (
    id           text COLLATE "C" PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    kind         text NOT NULL,
    spec         jsonb NOT NULL,         -- {"type":"cron","expr":…} | at | every
    timezone     text NOT NULL,
    period       text NOT NULL,
    misfire      text NOT NULL,
    payload      jsonb NOT NULL,
    endpoint_id  text COLLATE "C" REFERENCES endpoints (id),
    retry        jsonb,                  -- NULL: the kind's default policy
    state        text NOT NULL CHECK (state IN ('active', 'paused', 'finished')),
    next_fire_at timestamptz,
    last_fire_at timestamptz,
    locked_until timestamptz,
    locked_by    text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Serves the scheduler's due query (S0-1): only active schedules, by next firing.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE state = 'active';

CREATE TABLE jobs (
    id               text COLLATE "C" PRIMARY KEY,
    kind             text NOT NULL,
    state            text NOT NULL
                     CHECK (state IN ('available', 'running', 'succeeded', 'skipped', 'cancelled', 'dead')),
    payload          jsonb NOT NULL,
    endpoint_id      text COLLATE "C",
    schedule_id      text COLLATE "C",
    fire_at          timestamptz,
    period_key       text,
    dedupe_key       text UNIQUE,
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    retry            jsonb,              -- NULL: the kind's default policy
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    attempted_at     timestamptz,
    finished_at      timestamptz,
    locked_by        text,
    lease_token      text,
    lease_expires_at timestamptz,
    last_error       text,
    reason           text
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
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       text COLLATE "C" NOT NULL,
    attempt      integer NOT NULL,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('succeeded', 'skipped', 'failed', 'lost', 'cancelled')),
    error_class  text,
    status_code  integer,
    error        text,
    response     text,
    provider_id  text,
    node         text
);

CREATE INDEX job_attempts_job ON job_attempts (job_id, attempt);
