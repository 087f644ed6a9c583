-- Retention must not forget idempotency: when the pruner deletes a job that carried a dedupe
-- key, the key stays here (in the same transaction), so re-firing an old period, a catch-up or
-- a client retrying with the same idempotency key creates nothing. Mirrors the SQLite
-- migration.
CREATE TABLE dedupe_tombstones (
    dedupe_key  text PRIMARY KEY,
    job_id      text NOT NULL,
    finished_at timestamptz NOT NULL
);
CREATE INDEX dedupe_tombstones_finished ON dedupe_tombstones (finished_at);
-- Every insert path goes through `INSERT … ON CONFLICT (dedupe_key) DO NOTHING`; a BEFORE
-- trigger returning NULL skips a row whose key is tombstoned, so it is neither counted nor
-- returned, as if the key were taken. Differs from SQLite: a function, whose search_path is
-- fixed to this schema when it is created.
CREATE FUNCTION jobs_dedupe_tombstone() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.dedupe_key IS NOT NULL
       AND EXISTS (SELECT 1 FROM dedupe_tombstones WHERE dedupe_key = NEW.dedupe_key) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER jobs_dedupe_tombstone BEFORE INSERT ON jobs
FOR EACH ROW WHEN (NEW.dedupe_key IS NOT NULL) EXECUTE FUNCTION jobs_dedupe_tombstone();
-- Retention by age for the tables that grew without limit: indexes for the pruner's batches.
CREATE INDEX exposures_created ON exposures (created_at);
CREATE INDEX expansions_done ON expansions (updated_at) WHERE done;
CREATE INDEX suppression_log_created ON suppression_log (created_at);
