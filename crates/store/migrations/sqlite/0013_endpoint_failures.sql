-- Operator visibility (issue 13): `GET /v1/endpoints` shows each webhook endpoint's last
-- failed send next to its disabled state. Written by a failed send only (one row by primary
-- key), never on the success path.
ALTER TABLE endpoints ADD COLUMN last_failure_at INTEGER;
ALTER TABLE endpoints ADD COLUMN last_failure TEXT;
