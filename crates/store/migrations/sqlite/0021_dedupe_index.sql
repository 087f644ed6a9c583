-- PostgreSQL replaces its unique constraint on jobs.dedupe_key with a partial unique index
-- (only jobs with a key; see its 0021). SQLite keeps the column's UNIQUE constraint: an
-- update enters a row in an index only when an indexed column changes, so the NULL keys cost
-- one index entry per job at insert, and dropping the constraint would rebuild the table.
-- The inserts' `ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL` names it as before.
SELECT 1;
