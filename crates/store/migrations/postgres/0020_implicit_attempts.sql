-- A plain success writes no job_attempts row: the job row holds it (issue 14). Mirrors the
-- SQLite migration.
ALTER TABLE jobs ADD COLUMN attempted_by text;
