-- Operator visibility (issue 13): the `dead_runs` SLO check reads the dead jobs of schedules
-- by when they died. Partial, so it holds the dead letters of schedules only and is written
-- once per such job, when it dies (never on the claim/retry path).
CREATE INDEX jobs_dead_scheduled ON jobs (finished_at) WHERE state = 'dead' AND schedule_id IS NOT NULL;
