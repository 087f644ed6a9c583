-- What the background monitor's last completed pass found: its checks' results as JSON (the
-- shape `GET /v1/slo` gives them, without `since`). The admin's overview shows them instead of
-- evaluating every check at each page load — some read a day or a week of finished jobs. NULL
-- for a pass recorded before this migration: the overview then evaluates the checks itself.
ALTER TABLE monitor_passes ADD COLUMN report TEXT;
