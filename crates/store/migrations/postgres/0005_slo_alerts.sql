-- The SLO monitor's alert state (S3-17): one row per check and subject, so that a warning is
-- sent to the alert webhook once, a recovery once, and a restart or a new leader does not
-- alert again. `check_name` because CHECK is a keyword. Mirrors the SQLite table with
-- boolean and timestamptz.
CREATE TABLE slo_alerts (
    key          text PRIMARY KEY,
    check_name   text NOT NULL,
    active       boolean NOT NULL,
    since        timestamptz NOT NULL,
    message      text NOT NULL,
    seq          bigint NOT NULL,
    notified_seq bigint NOT NULL,
    updated_at   timestamptz NOT NULL
);
