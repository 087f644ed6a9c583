-- Operator visibility (issue 13): each webhook endpoint's last failed send. Mirrors the SQLite
-- migration.
ALTER TABLE endpoints ADD COLUMN last_failure_at timestamptz;
ALTER TABLE endpoints ADD COLUMN last_failure text;
