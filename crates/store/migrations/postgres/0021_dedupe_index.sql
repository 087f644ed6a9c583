-- The dedupe key's unique index holds only the jobs that have a key (issue 14). A job is
-- written three times (insert, claim, completion) and none of those updates can be HOT (the
-- state is in partial indexes), so each row version was entered in every index — the unique
-- index on dedupe_key included, NULL keys and all. Most jobs have no key. The inserts'
-- `ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL` infers this index.
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL;
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_dedupe_key_key;
