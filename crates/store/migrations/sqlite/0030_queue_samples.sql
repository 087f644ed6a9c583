-- The queue over time (issue 36): one row per minute, written by the leader's sampler shortly
-- after the minute ends (`INSERT … ON CONFLICT DO NOTHING`: a second writer changes nothing),
-- pruned after the sampler's retention (2 days by default). `due`, `available` and `running`
-- are counts at `recorded_at`; `lateness_p99_ms` is the 99th percentile of the lateness (run_at
-- to attempt start) of the `started` jobs whose attempt began in the minute.
CREATE TABLE queue_samples (
    minute          INTEGER PRIMARY KEY,
    due             INTEGER NOT NULL,
    available       INTEGER NOT NULL,
    running         INTEGER NOT NULL,
    started         INTEGER NOT NULL,
    lateness_p99_ms INTEGER,
    recorded_at     INTEGER NOT NULL
);
