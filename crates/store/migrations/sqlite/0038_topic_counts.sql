-- Mail per topic by the quarter hour it was sent in, for the monitor's `bounce_rate` and
-- `complaint_rate`, which sum a week of them instead of reading a week of mail at every pass.
-- Per quarter (its start), kind and topic: `succeeded`, the jobs with a topic that succeeded
-- in it, counted once by the leader's sampler after the quarter ends (`topic_counts_taken`
-- marks a quarter counted, even one without such jobs); `bounced` and `complained`, the
-- jobs among them with an `email.bounced` / `email.complained` event, added as each job's
-- first event of that type is recorded. A quarter without a mark (no leader, or before this
-- migration) is counted from the job table.
CREATE TABLE topic_counts_taken (
    start    INTEGER PRIMARY KEY,
    taken_at INTEGER NOT NULL
);
CREATE TABLE topic_counts (
    start      INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    topic      TEXT NOT NULL,
    succeeded  INTEGER NOT NULL DEFAULT 0,
    bounced    INTEGER NOT NULL DEFAULT 0,
    complained INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (start, kind, topic)
);
-- The bounces and complaints recorded before: each mail once per type, in its send quarter.
INSERT INTO topic_counts (start, kind, topic, bounced, complained)
SELECT (j.finished_at / 900000) * 900000, j.kind, j.topic,
       COUNT(DISTINCT CASE WHEN e.type = 'email.bounced' THEN j.id END),
       COUNT(DISTINCT CASE WHEN e.type = 'email.complained' THEN j.id END)
FROM inbound_events e JOIN jobs j ON j.id = e.job_id
WHERE e.type IN ('email.bounced', 'email.complained') AND e.job_id IS NOT NULL
  AND j.state = 'succeeded' AND j.topic IS NOT NULL AND j.finished_at IS NOT NULL
GROUP BY (j.finished_at / 900000) * 900000, j.kind, j.topic;
