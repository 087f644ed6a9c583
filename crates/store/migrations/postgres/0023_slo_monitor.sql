-- The monitor watches itself (issue 30). `acked_at`: when an operator last acknowledged the
-- alert; the checks whose warnings can be fixed (dead runs, missing artifacts) do not raise
-- again for what was already there then. `monitor_passes`: when the background monitor last
-- completed a pass, so that a reader (`GET /v1/slo`, `/metrics`) can tell a monitor that
-- stopped from one that finds nothing wrong. Mirrors the SQLite file with timestamptz.
ALTER TABLE slo_alerts ADD COLUMN acked_at timestamptz;
CREATE TABLE monitor_passes (
    service      text PRIMARY KEY,
    last_pass_at timestamptz NOT NULL
);
