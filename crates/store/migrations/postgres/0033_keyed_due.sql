-- Claims skip the jobs of a concurrency key at its max (issue 34): they stay `available`
-- instead of being claimed and put back. The due keyed jobs, in claim order: where a claim
-- finds the lowest one it may have skipped, and how many wait for their key now (empty
-- unless jobs with keys are due).
CREATE INDEX jobs_keyed_due ON jobs (run_at, id)
    WHERE state = 'available' AND concurrency_key IS NOT NULL;
