-- Limits of an `http` job's host (issue 34): calls per second and calls in flight to one
-- origin (scheme, host and port), shared by every `http` job that calls it, across nodes.
--
-- jobs.http_origin: the origin an `http` job calls (`https://api.example.com:443`); NULL for
-- other kinds. The claim probes host_limits by it, as it probes endpoint_limits by
-- endpoint_id.
ALTER TABLE jobs ADD COLUMN http_origin TEXT;
-- An origin's limits (a row only while it has one), set by the `http` object of the job or
-- schedule saved last that names them: a token bucket kept here in thousandths of a token,
-- and `max_in_flight` as slots of the origin's implicit key in concurrency_slots.
CREATE TABLE host_limits (
    origin        TEXT PRIMARY KEY,
    per_second    INTEGER,
    burst         INTEGER,
    max_in_flight INTEGER,
    tokens_milli  INTEGER NOT NULL DEFAULT 0,
    refilled_at   INTEGER,
    updated_at    INTEGER NOT NULL
);
