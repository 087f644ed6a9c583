-- Claims skip the jobs of a concurrency key at its max (issue 34): they stay `available`
-- instead of being claimed and put back.
-- jobs_keyed_running: how many jobs of a key run now, which a claim compares with the key's
-- max (empty unless keyed jobs run).
CREATE INDEX jobs_keyed_running ON jobs (concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
-- jobs_keyed_due: the due keyed jobs in claim order (how many wait for their key now).
CREATE INDEX jobs_keyed_due ON jobs (run_at, id)
    WHERE state = 'available' AND concurrency_key IS NOT NULL;
-- jobs_due holds each job's key and limit, so that a claim reads a job without a key from
-- the index alone, as it did before keys.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at, id, concurrency_key, concurrency_max)
    WHERE state = 'available';
