-- Flow control (issue 34): concurrency keys and endpoint limits, across nodes.
--
-- jobs.concurrency_key, jobs.concurrency_max: the key rendered when the job was made and its
-- limit; NULL for a job without one (a key that could not be rendered is stored as a failed
-- key, which the executor fails permanently, see kairos_core::concurrency).
ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
ALTER TABLE jobs ADD COLUMN concurrency_max INTEGER;
-- jobs.wait_reason: why a due job was put back without running (`concurrency_key`); cleared
-- when it takes its slot.
ALTER TABLE jobs ADD COLUMN wait_reason TEXT;
CREATE INDEX jobs_waiting ON jobs (wait_reason) WHERE wait_reason IS NOT NULL AND state = 'available';
-- schedules.concurrency: JSON {key, max}, the key a template over the payload; NULL: none.
ALTER TABLE schedules ADD COLUMN concurrency TEXT;
-- One row per slot taken: a key's slots are 0 .. max-1, so the primary key bounds how many
-- of its jobs hold one. A slot is held while its job is running under the lease that took it;
-- a slot whose job finished, was rescued, cancelled or erased is free, and the next claim of
-- the key deletes it.
CREATE TABLE concurrency_slots (
    key         TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    job_id      TEXT NOT NULL,
    lease_token TEXT NOT NULL,
    taken_at    INTEGER NOT NULL,
    PRIMARY KEY (key, slot)
);
-- How often and how long jobs were put back to wait, per reason, since the database was made:
-- the `kairos_job_wait_seconds_total{reason}` counter (every node adds to it).
CREATE TABLE job_waits (
    reason       TEXT PRIMARY KEY,
    waits        INTEGER NOT NULL,
    wait_ms      INTEGER NOT NULL
);
-- An endpoint's limits (a row only while it has one): deliveries per second with a burst
-- (a token bucket kept here, in thousandths of a token, so that every node takes from the
-- same one) and deliveries in flight at once (slots of the endpoint's implicit key in
-- concurrency_slots).
CREATE TABLE endpoint_limits (
    endpoint_id   TEXT PRIMARY KEY REFERENCES endpoints (id),
    per_second    INTEGER,
    burst         INTEGER,
    max_in_flight INTEGER,
    tokens_milli  INTEGER NOT NULL DEFAULT 0,
    refilled_at   INTEGER,
    updated_at    INTEGER NOT NULL
);
