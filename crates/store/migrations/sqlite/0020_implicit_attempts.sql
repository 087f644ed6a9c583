-- A plain success (no status code, response, provider id or error) writes no job_attempts
-- row (issue 14): the job row holds it. `attempted_at` is the attempt's start and
-- `finished_at` its end, as before; `attempted_by` is the node that ran it, and is set only
-- for such an attempt, which is how `attempt_list` knows to show it.
ALTER TABLE jobs ADD COLUMN attempted_by TEXT;
