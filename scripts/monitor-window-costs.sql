-- What the monitor's week-, day- and hour-long checks cost, before and after the quarter-hour
-- counts of migrations 0038 and 0039 (docs/operations.md, "SLO monitor"). From the project
-- root, on an empty schema that `kairos migrate` creates, first on the search path:
--   export KAIROS_SECRET_KEY=$(cargo run -q -p kairos -- key generate | tail -1)
--   KAIROS_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres KAIROS_DATABASE_SCHEMA=costs cargo run -q -p kairos -- migrate
--   PGOPTIONS="-c search_path=costs" psql -h 127.0.0.1 -U postgres postgres -f scripts/monitor-window-costs.sql
--   psql -h 127.0.0.1 -U postgres postgres -c "DROP SCHEMA costs CASCADE"
-- It seeds 2,000,000 succeeded mails over 7 days in 20 topics (2 % bounced, 0.1 % complained,
-- half delivered) and 360,000 webhook jobs in the last hour (100 a second, 2 % dead), counts
-- the quarters as the sampler would, and times the old reads (the whole window) against the
-- new ones (the counted quarters, and the job table for the window's edges: half an hour, the
-- most, for the week and the day; 15 and 30 minutes for the hour). Last, it adds the decided
-- counts of 1,000 schedules firing every quarter for a day and times reading them per quarter
-- against summing them in the database. It writes about 1.2 GB; drop the schema afterwards.
\set ON_ERROR_STOP on
INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at, finished_at, topic)
SELECT 'j' || g, 'email', 'succeeded', '{}'::jsonb, 3,
       now() - (g * interval '302 milliseconds'), now() - (g * interval '302 milliseconds'),
       now() - (g * interval '302 milliseconds'), 't' || (g % 20)
FROM generate_series(1, 2000000) g;
INSERT INTO inbound_events (source, id, type, provider_message_id, job_id, action, payload, received_at)
SELECT 'resend', 'b' || g, 'email.bounced', 'p' || g, 'j' || g, 'suppressed', '{}'::jsonb, now() - (g * interval '302 milliseconds') + interval '1 minute'
FROM generate_series(1, 2000000, 50) g;
INSERT INTO inbound_events (source, id, type, provider_message_id, job_id, action, payload, received_at)
SELECT 'resend', 'c' || g, 'email.complained', 'p' || g, 'j' || g, 'recorded', '{}'::jsonb, now() - (g * interval '302 milliseconds') + interval '1 minute'
FROM generate_series(7, 2000000, 1000) g;
INSERT INTO inbound_events (source, id, type, provider_message_id, job_id, action, payload, received_at)
SELECT 'resend', 'd' || g, 'email.delivered', 'p' || g, 'j' || g, 'recorded', '{}'::jsonb, now() - (g * interval '302 milliseconds') + interval '1 minute'
FROM generate_series(1, 2000000, 2) g;
INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at, finished_at)
SELECT 'w' || g, 'webhook', CASE WHEN g % 50 = 0 THEN 'dead' ELSE 'succeeded' END, '{}'::jsonb, 3,
       now() - (g * interval '10 milliseconds'), now() - (g * interval '10 milliseconds'),
       now() - (g * interval '10 milliseconds')
FROM generate_series(1, 360000) g;
VACUUM ANALYZE jobs; VACUUM ANALYZE inbound_events;
\echo migration 0038: the bounces and complaints recorded before, into their quarters
\timing on
INSERT INTO topic_counts (start, kind, topic, bounced, complained)
SELECT to_timestamp(floor(extract(epoch FROM j.finished_at) / 900) * 900), j.kind, j.topic,
       COUNT(DISTINCT CASE WHEN e.type = 'email.bounced' THEN j.id END),
       COUNT(DISTINCT CASE WHEN e.type = 'email.complained' THEN j.id END)
FROM inbound_events e JOIN jobs j ON j.id = e.job_id
WHERE e.type IN ('email.bounced', 'email.complained') AND e.job_id IS NOT NULL
  AND j.state = 'succeeded' AND j.topic IS NOT NULL AND j.finished_at IS NOT NULL
GROUP BY 1, j.kind, j.topic;
\timing off
-- The sampler's counts of every quarter of the week (what it stores, one quarter at a time).
INSERT INTO counted_quarters SELECT s, now() FROM generate_series(date_bin('15 minutes', now() - interval '7 days', 'epoch'), date_bin('15 minutes', now(), 'epoch') - interval '15 minutes', interval '15 minutes') s ON CONFLICT DO NOTHING;
INSERT INTO topic_counts (start, kind, topic, succeeded) SELECT date_bin('15 minutes', finished_at, 'epoch'), kind, topic, COUNT(*) FROM jobs WHERE state='succeeded' AND topic IS NOT NULL AND finished_at >= now() - interval '7 days' AND finished_at < date_bin('15 minutes', now(), 'epoch') GROUP BY 1,2,3 ON CONFLICT (start, kind, topic) DO UPDATE SET succeeded = excluded.succeeded;
INSERT INTO decided_counts SELECT date_bin('15 minutes', finished_at, 'epoch'), COALESCE(schedule_id, ''), CASE WHEN schedule_id IS NULL THEN kind ELSE '' END, CASE WHEN schedule_id IS NULL THEN topic ELSE '' END, state, CASE WHEN state = 'skipped' THEN COALESCE(reason, '') ELSE '' END, COUNT(*) FROM jobs WHERE state IN ('succeeded','skipped','dead') AND (schedule_id IS NOT NULL OR topic IS NOT NULL) AND finished_at >= now() - interval '7 days' AND finished_at < date_bin('15 minutes', now(), 'epoch') GROUP BY 1,2,3,4,5,6 ON CONFLICT DO NOTHING;
\echo migration 0039: the finished jobs per kind of the quarters counted before
\timing on
INSERT INTO kind_counts (start, kind, state, n)
SELECT q.start, j.kind, j.state, COUNT(*)
FROM counted_quarters q
JOIN jobs j ON j.finished_at >= q.start AND j.finished_at < q.start + interval '15 minutes'
GROUP BY q.start, j.kind, j.state;
\timing off
VACUUM ANALYZE topic_counts; VACUUM ANALYZE decided_counts; VACUUM ANALYZE counted_quarters; VACUUM ANALYZE kind_counts;
\timing on
\echo NEW list (a week of quarters)
SELECT count(*) FROM (SELECT t.start, c.kind, c.topic, c.succeeded, c.bounced, c.complained FROM counted_quarters t LEFT JOIN topic_counts c ON c.start = t.start WHERE t.start >= date_bin('15 minutes', now() - interval '7 days', 'epoch') AND t.start < now() ORDER BY t.start, c.kind, c.topic) x;
\echo NEW range (edges, 30 min with two probes per job)
SELECT count(*) FROM (SELECT j.kind, j.topic, COUNT(*) AS n,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = j.id AND e.type = 'email.bounced') THEN 1 END) AS bounced,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = j.id AND e.type = 'email.complained') THEN 1 END) AS complained
 FROM jobs j WHERE j.finished_at >= now() - interval '30 minutes' AND j.finished_at < now() AND j.state = 'succeeded' AND j.topic IS NOT NULL GROUP BY j.kind, j.topic) x;
\echo NEW a bounce added to its quarter (rolled back)
BEGIN;
INSERT INTO topic_counts (start, kind, topic, bounced, complained)
 SELECT to_timestamp(floor(extract(epoch FROM j.finished_at) / 900) * 900), j.kind, j.topic, 1, 0 FROM jobs j
 WHERE j.id = 'j12345' AND j.state = 'succeeded' AND j.topic IS NOT NULL AND j.finished_at IS NOT NULL
 AND NOT EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = 'j12345' AND e.type = 'email.bounced' AND NOT (e.source = 'resend' AND e.id = 'x'))
 ON CONFLICT (start, kind, topic) DO UPDATE SET bounced = topic_counts.bounced + excluded.bounced, complained = topic_counts.complained + excluded.complained;
ROLLBACK;
\echo OLD sent_mail_count (5 EXISTS per mail)
SELECT count(*) FROM (
SELECT m.topic AS k, COUNT(*) AS sent,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = m.job_id AND e.type = 'email.delivered') THEN 1 END) AS delivered,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = m.job_id AND e.type = 'email.opened') THEN 1 END) AS opened,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = m.job_id AND e.type = 'email.clicked') THEN 1 END) AS clicked,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = m.job_id AND e.type = 'email.bounced') THEN 1 END) AS bounced,
 COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e WHERE e.job_id = m.job_id AND e.type = 'email.complained') THEN 1 END) AS complained
FROM (SELECT id AS job_id, topic FROM jobs WHERE finished_at >= now() - interval '7 days' AND finished_at < now() AND state = 'succeeded' AND kind = ANY(ARRAY['email'])) m
WHERE m.topic IS NOT NULL GROUP BY m.topic) x;
\echo OLD job_count_decided (a day)
SELECT count(*) FROM (SELECT schedule_id, topic, state, reason, COUNT(*) AS n FROM (
  SELECT schedule_id, CASE WHEN schedule_id IS NULL AND kind = ANY(ARRAY['email']) THEN topic END AS topic, state, CASE WHEN state = 'skipped' THEN reason END AS reason
  FROM jobs WHERE finished_at >= now() - interval '1 day' AND finished_at < now() AND state IN ('succeeded', 'skipped', 'dead')) d
  WHERE schedule_id IS NOT NULL OR topic IS NOT NULL GROUP BY schedule_id, topic, state, reason) x;
\echo NEW decided list (a day of quarters)
SELECT count(*) FROM (SELECT t.start, d.schedule_id, d.kind, d.topic, d.state, d.reason, d.n FROM counted_quarters t LEFT JOIN decided_counts d ON d.start = t.start WHERE t.start >= date_bin('15 minutes', now() - interval '1 day', 'epoch') AND t.start < now() ORDER BY t.start) x;
\echo NEW decided range (30 min)
SELECT count(*) FROM (SELECT schedule_id, topic, state, reason, COUNT(*) AS n FROM (
  SELECT schedule_id, CASE WHEN schedule_id IS NULL AND kind = ANY(ARRAY['email']) THEN topic END AS topic, state, CASE WHEN state = 'skipped' THEN reason END AS reason
  FROM jobs WHERE finished_at >= now() - interval '30 minutes' AND finished_at < now() AND state IN ('succeeded', 'skipped', 'dead')) d
  WHERE schedule_id IS NOT NULL OR topic IS NOT NULL GROUP BY schedule_id, topic, state, reason) x;
\echo OLD job_count_finished (an hour)
SELECT count(*) FROM (SELECT state, kind, COUNT(*) AS n FROM jobs WHERE finished_at >= now() - interval '1 hour' AND finished_at < now() GROUP BY state, kind) x;
\echo NEW kind list (an hour of quarters)
SELECT count(*) FROM (SELECT t.start, k.kind, k.state, k.n FROM counted_quarters t LEFT JOIN kind_counts k ON k.start = t.start WHERE t.start >= date_bin('15 minutes', now() - interval '1 hour', 'epoch') AND t.start < now() ORDER BY t.start, k.kind, k.state) x;
\echo NEW finished range (15 min, the mean of the edges)
SELECT count(*) FROM (SELECT state, kind, COUNT(*) AS n FROM jobs WHERE finished_at >= now() - interval '15 minutes' AND finished_at < now() GROUP BY state, kind) x;
\echo NEW finished range (30 min, the most)
SELECT count(*) FROM (SELECT state, kind, COUNT(*) AS n FROM jobs WHERE finished_at >= now() - interval '30 minutes' AND finished_at < now() GROUP BY state, kind) x;
\timing off
INSERT INTO decided_counts
SELECT q.start, 'sch_' || g, '', '', CASE WHEN g % 10 = 0 THEN 'skipped' ELSE 'succeeded' END,
       CASE WHEN g % 10 = 0 THEN 'not_entitled' ELSE '' END, 1
FROM counted_quarters q, generate_series(1, 1000) g
WHERE q.start >= date_bin('15 minutes', now() - interval '1 day', 'epoch') ON CONFLICT DO NOTHING;
VACUUM ANALYZE decided_counts;
\timing on
\echo OLD decided list (a day of quarters, 1,000 schedules: a row per schedule and quarter)
SELECT count(*) FROM (SELECT t.start, d.schedule_id, d.kind, d.topic, d.state, d.reason, d.n FROM counted_quarters t LEFT JOIN decided_counts d ON d.start = t.start WHERE t.start >= date_bin('15 minutes', now() - interval '1 day', 'epoch') AND t.start < now() ORDER BY t.start) x;
\echo NEW decided sum (the same day summed in the database: a row per schedule)
SELECT count(*) FROM (SELECT schedule_id, kind, topic, state, reason, CAST(SUM(n) AS BIGINT) AS n FROM decided_counts WHERE start >= date_bin('15 minutes', now() - interval '1 day', 'epoch') + interval '15 minutes' AND start < date_bin('15 minutes', now(), 'epoch') GROUP BY schedule_id, kind, topic, state, reason ORDER BY schedule_id, kind, topic, state, reason) x;
\echo NEW topic sum (a week summed in the database)
SELECT count(*) FROM (SELECT kind, topic, CAST(SUM(succeeded) AS BIGINT), CAST(SUM(bounced) AS BIGINT), CAST(SUM(complained) AS BIGINT) FROM topic_counts WHERE start >= date_bin('15 minutes', now() - interval '7 days', 'epoch') + interval '15 minutes' AND start < date_bin('15 minutes', now(), 'epoch') GROUP BY kind, topic ORDER BY kind, topic) x;
