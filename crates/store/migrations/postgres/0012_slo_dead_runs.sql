-- Operator visibility (issue 13): the `dead_runs` SLO check reads the dead jobs of schedules
-- by when they died. Mirrors the SQLite migration.
CREATE INDEX jobs_dead_scheduled ON jobs (finished_at) WHERE state = 'dead' AND schedule_id IS NOT NULL;
