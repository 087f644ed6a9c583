-- The job queue's CHECK constraints compared in place (issue 31: the writer's work per job).
-- A CHECK written `state IN ('available', 'running', …)` is evaluated on every insert and on
-- every update that sets the column, and SQLite codes an IN list of more than two constants
-- as a temporary b-tree: each claim, completion and insert opened one (a pager and a page
-- cache), filled it with the six names, looked the value up and freed it again — once per
-- statement, on the single writer's thread. The same constraint as a chain of `=` is compared
-- in place (docs/benchmarks.md, "SQLite's writer").
--
-- SQLite cannot alter a CHECK, so `jobs` and `job_attempts` are rebuilt by SQLite's documented
-- procedure: a new table, every row copied with its id, the old table dropped, the new one
-- renamed, its indexes and trigger created again. Nothing references either table with a
-- foreign key, and no view reads them. The columns keep their names, order and types.
--
-- The rebuild also gives `jobs` the partial unique index on `dedupe_key` that PostgreSQL has
-- had since 0021 (only the jobs with a key are in it; the column's UNIQUE constraint entered a
-- NULL for every job without one, and dropping it needs a rebuild). The inserts'
-- `ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL` infers it.

CREATE TABLE jobs_rebuilt (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    state            TEXT NOT NULL
                     CHECK (state = 'available' OR state = 'running' OR state = 'succeeded'
                            OR state = 'skipped' OR state = 'cancelled' OR state = 'dead'),
    payload          TEXT NOT NULL,
    endpoint_id      TEXT,
    schedule_id      TEXT,
    fire_at          INTEGER,
    period_key       TEXT,
    dedupe_key       TEXT,
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
    reason           TEXT,
    channel          TEXT,
    attempted_by     TEXT,
    topic            TEXT,
    recipient_id     TEXT,
    variant          TEXT,
    concurrency_key  TEXT,
    concurrency_max  INTEGER,
    wait_reason      TEXT,
    http_origin      TEXT
);

INSERT INTO jobs_rebuilt (
    id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key,
    attempt, max_attempts, retry, run_at, created_at, attempted_at, finished_at, locked_by,
    lease_token, lease_expires_at, last_error, reason, channel, attempted_by, topic,
    recipient_id, variant, concurrency_key, concurrency_max, wait_reason, http_origin)
SELECT
    id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key,
    attempt, max_attempts, retry, run_at, created_at, attempted_at, finished_at, locked_by,
    lease_token, lease_expires_at, last_error, reason, channel, attempted_by, topic,
    recipient_id, variant, concurrency_key, concurrency_max, wait_reason, http_origin
FROM jobs;

DROP TABLE jobs;
ALTER TABLE jobs_rebuilt RENAME TO jobs;

-- The indexes as 0001–0033 left them, and the key's partial unique index.
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX jobs_due ON jobs (run_at, id, concurrency_key, concurrency_max)
    WHERE state = 'available';
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead';
CREATE INDEX jobs_schedule ON jobs (schedule_id, id) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_schedule_period ON jobs (schedule_id, period_key) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_dead_scheduled ON jobs (finished_at) WHERE state = 'dead' AND schedule_id IS NOT NULL;
CREATE INDEX jobs_recipient ON jobs (recipient_id) WHERE recipient_id IS NOT NULL;
CREATE INDEX jobs_waiting ON jobs (wait_reason) WHERE wait_reason IS NOT NULL AND state = 'available';
CREATE INDEX jobs_keyed_running ON jobs (concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_keyed_due ON jobs (run_at, id)
    WHERE state = 'available' AND concurrency_key IS NOT NULL;

-- As 0018: a key whose job was pruned still holds it.
CREATE TRIGGER jobs_dedupe_tombstone BEFORE INSERT ON jobs
WHEN NEW.dedupe_key IS NOT NULL
 AND EXISTS (SELECT 1 FROM dedupe_tombstones WHERE dedupe_key = NEW.dedupe_key)
BEGIN
    SELECT RAISE(IGNORE);
END;

CREATE TABLE job_attempts_rebuilt (
    id           INTEGER PRIMARY KEY,
    job_id       TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    outcome      TEXT NOT NULL
                 CHECK (outcome = 'succeeded' OR outcome = 'skipped' OR outcome = 'failed'
                        OR outcome = 'lost' OR outcome = 'cancelled'),
    error_class  TEXT,
    status_code  INTEGER,
    error        TEXT,
    response     TEXT,
    provider_id  TEXT,
    node         TEXT
);

-- With their ids: the endpoint health service reads attempts past the last id it folded.
INSERT INTO job_attempts_rebuilt (
    id, job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error,
    response, provider_id, node)
SELECT
    id, job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error,
    response, provider_id, node
FROM job_attempts;

DROP TABLE job_attempts;
ALTER TABLE job_attempts_rebuilt RENAME TO job_attempts;

CREATE INDEX job_attempts_job ON job_attempts (job_id, attempt);
CREATE INDEX job_attempts_provider_id ON job_attempts (provider_id) WHERE provider_id IS NOT NULL;
