-- `failure_rate`: per quarter hour, the jobs that finished in it per kind and final state,
-- counted with the quarter by the leader's sampler (migration 0038's `counted_quarters` marks
-- it), so a pass sums an hour's quarters instead of reading an hour of finished jobs.
CREATE TABLE kind_counts (
    start INTEGER NOT NULL,
    kind  TEXT NOT NULL,
    state TEXT NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (start, kind, state)
);
-- The quarters counted before this migration have no kind counts: count what the job table
-- still holds of them (one range of `jobs_finished` per quarter), as the sampler would.
INSERT INTO kind_counts (start, kind, state, n)
SELECT q.start, j.kind, j.state, COUNT(*)
FROM counted_quarters q
JOIN jobs j ON j.finished_at >= q.start AND j.finished_at < q.start + 900000
GROUP BY q.start, j.kind, j.state;
