-- Several targets per subscription (a manager gets one summary per report): the list is a
-- JSON array of ids; `target` keeps the first one for readers that know only one.
ALTER TABLE subscriptions ADD COLUMN targets jsonb NOT NULL DEFAULT '[]'::jsonb;
UPDATE subscriptions SET targets = jsonb_build_array(target) WHERE target IS NOT NULL;

-- The audience dedupe key loses the schedule id: it becomes (topic, recipient, target,
-- period, channel[, product]), prefixed `aud2:`, so re-creating a schedule or a second
-- schedule on the topic cannot mail a period again. Keys already written are rewritten to
-- the new form so that the week of the upgrade is not mailed twice. Mirrors the SQLite
-- migration (an old key is `aud:` then length-prefixed parts: schedule, recipient, target,
-- period, channel; the parts after the schedule are kept, the topic and a digest's artifact
-- name come first and last). Lengths are in bytes, as Rust counts them.
--
-- Jobs: the topic and product are in the payload. Where two old jobs map to one new key
-- (two schedules already mailed the period), the earliest takes it and the other keeps its
-- old key.
WITH k AS (
    SELECT id,
           'aud2:' || octet_length(payload ->> 'topic') || ':' || (payload ->> 'topic') || '|'
           || substr(dedupe_key, strpos(dedupe_key, '|') + 1)
           || COALESCE('|' || octet_length(payload -> 'artifact' ->> 'name') || ':'
                       || (payload -> 'artifact' ->> 'name'), '') AS nk
    FROM jobs
    WHERE dedupe_key LIKE 'aud:%' AND payload ->> 'topic' IS NOT NULL
), pick AS (
    SELECT DISTINCT ON (nk) id, nk FROM k ORDER BY nk, id
)
UPDATE jobs SET dedupe_key = pick.nk
FROM pick
WHERE jobs.id = pick.id
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.dedupe_key = pick.nk);

-- Tombstones (keys of pruned jobs) hold no payload: the topic comes from the schedule named
-- in the key. The old tombstone stays until pruned by age; one whose schedule is gone keeps
-- only its old key.
INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at)
SELECT 'aud2:' || octet_length(s.payload ->> 'topic') || ':' || (s.payload ->> 'topic') || '|'
       || t.tail
       || CASE WHEN s.kind <> 'digest' OR s.payload ->> 'name' IS NULL THEN ''
               ELSE '|' || octet_length(s.payload ->> 'name') || ':' || (s.payload ->> 'name')
          END,
       t.job_id, t.finished_at
FROM (
    SELECT job_id, finished_at,
           substr(rest, strpos(rest, ':') + 1, strpos(rest, '|') - strpos(rest, ':') - 1) AS sid,
           substr(rest, strpos(rest, '|') + 1) AS tail
    FROM (SELECT job_id, finished_at, substr(dedupe_key, 5) AS rest
          FROM dedupe_tombstones WHERE dedupe_key LIKE 'aud:%') r
) t
JOIN schedules s ON s.id = t.sid
WHERE s.payload ->> 'topic' IS NOT NULL
ON CONFLICT (dedupe_key) DO NOTHING;
