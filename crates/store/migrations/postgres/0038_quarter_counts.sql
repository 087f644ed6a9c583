-- What the monitor's week- and day-long checks sum per quarter hour instead of reading every
-- finished job of their window at every pass. `counted_quarters` marks a quarter counted by
-- the leader's sampler (two minutes after it ends), whether or not it had jobs; a quarter
-- without a mark (no leader, or before this migration) is counted from the job table. Mirrors
-- the SQLite tables with timestamptz.
CREATE TABLE counted_quarters (
    start      timestamptz PRIMARY KEY,
    counted_at timestamptz NOT NULL
);
-- `bounce_rate`, `complaint_rate`: per quarter, kind and topic, `succeeded` the jobs with a
-- topic that succeeded in it (counted with the quarter); `bounced` and `complained` the jobs
-- among them with an `email.bounced` / `email.complained` event, added as each job's first
-- event of that type is recorded.
CREATE TABLE topic_counts (
    start      timestamptz NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    topic      text COLLATE "C" NOT NULL,
    succeeded  bigint NOT NULL DEFAULT 0,
    bounced    bigint NOT NULL DEFAULT 0,
    complained bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (start, kind, topic)
);
-- `skip_rate`: per quarter, the jobs decided in it (succeeded, skipped, dead) per schedule, or
-- per kind and topic for jobs without a schedule, state and skip reason, counted with the
-- quarter. '' stands for none (a key column cannot be NULL): no schedule, no kind and topic
-- for a schedule's jobs, no reason but for skipped jobs; no schedule id, topic or reason is ''.
CREATE TABLE decided_counts (
    start       timestamptz NOT NULL,
    schedule_id text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    topic       text COLLATE "C" NOT NULL,
    state       text COLLATE "C" NOT NULL,
    reason      text COLLATE "C" NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (start, schedule_id, kind, topic, state, reason)
);
-- The bounces and complaints recorded before: each mail once per type, in its send quarter.
INSERT INTO topic_counts (start, kind, topic, bounced, complained)
SELECT to_timestamp(floor(extract(epoch FROM j.finished_at) / 900) * 900), j.kind, j.topic,
       COUNT(DISTINCT CASE WHEN e.type = 'email.bounced' THEN j.id END),
       COUNT(DISTINCT CASE WHEN e.type = 'email.complained' THEN j.id END)
FROM inbound_events e JOIN jobs j ON j.id = e.job_id
WHERE e.type IN ('email.bounced', 'email.complained') AND e.job_id IS NOT NULL
  AND j.state = 'succeeded' AND j.topic IS NOT NULL AND j.finished_at IS NOT NULL
GROUP BY 1, j.kind, j.topic;
