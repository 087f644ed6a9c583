-- The SLO monitor's alert state (S3-17): one row per check and subject, so that a warning is
-- sent to the alert webhook once, a recovery once, and a restart or a new leader does not
-- alert again. `check_name` because CHECK is a keyword.
CREATE TABLE slo_alerts (
    key          TEXT PRIMARY KEY,
    check_name   TEXT NOT NULL,
    active       INTEGER NOT NULL,      -- 0 or 1
    since        INTEGER NOT NULL,
    message      TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    notified_seq INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
