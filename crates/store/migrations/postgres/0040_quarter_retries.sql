-- Per quarter hour, how many times finished jobs of it were sent back to the queue (a retry
-- or replay bumps it in its transaction, before it takes the jobs out of the quarter's
-- counts). The sampler reads it before it reads a quarter's jobs and again in the transaction
-- that stores the counts: a retry committed in between changed it, and the quarter is read
-- again, so a job retried while its quarter is counted is counted once.
CREATE TABLE quarter_retries (
    start timestamptz PRIMARY KEY,
    n     bigint NOT NULL
);
