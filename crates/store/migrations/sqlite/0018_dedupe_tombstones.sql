-- Retention must not forget idempotency: when the pruner deletes a job that carried a dedupe
-- key, the key stays here (in the same transaction), so re-firing an old period, a catch-up or
-- a client retrying with the same idempotency key creates nothing. Tombstones are pruned after
-- their own, longer retention, counted from when the job finished.
CREATE TABLE dedupe_tombstones (
    dedupe_key  TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    finished_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX dedupe_tombstones_finished ON dedupe_tombstones (finished_at);
-- Every insert path (single, batch, schedule firing, catch-up, audience expansion) goes
-- through `INSERT … ON CONFLICT (dedupe_key) DO NOTHING`; this makes a tombstoned key behave
-- as a taken one for all of them: the row is skipped, not counted and not returned.
CREATE TRIGGER jobs_dedupe_tombstone BEFORE INSERT ON jobs
WHEN NEW.dedupe_key IS NOT NULL
 AND EXISTS (SELECT 1 FROM dedupe_tombstones WHERE dedupe_key = NEW.dedupe_key)
BEGIN
    SELECT RAISE(IGNORE);
END;
-- Retention by age for the tables that grew without limit: indexes for the pruner's batches.
CREATE INDEX exposures_created ON exposures (created_at);
CREATE INDEX expansions_done ON expansions (updated_at) WHERE done = 1;
CREATE INDEX suppression_log_created ON suppression_log (created_at);
