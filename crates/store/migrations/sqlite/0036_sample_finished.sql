-- The jobs that finished in each sampled minute, succeeded and dead, counted by the sampler
-- from `jobs_finished` (one minute of it) when it records the minute. The overview's throughput
-- charts sum them instead of counting a day of finished jobs at every page load. NULL in the
-- samples taken before this migration: the charts count those minutes from the job table.
ALTER TABLE queue_samples ADD COLUMN succeeded INTEGER;
ALTER TABLE queue_samples ADD COLUMN dead INTEGER;
