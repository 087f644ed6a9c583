-- Several targets per subscription (a manager gets one summary per report): the list is a
-- JSON array of ids; `target` keeps the first one for readers that know only one.
ALTER TABLE subscriptions ADD COLUMN targets TEXT NOT NULL DEFAULT '[]';
UPDATE subscriptions SET targets = json_array(target) WHERE target IS NOT NULL;

-- The audience dedupe key loses the schedule id: it becomes (topic, recipient, target,
-- period, channel[, product]), prefixed `aud2:`, so re-creating a schedule or a second
-- schedule on the topic cannot mail a period again. Keys already written are rewritten to
-- the new form so that the week of the upgrade is not mailed twice. An old key is
-- `aud:` then length-prefixed parts (schedule, recipient, target, period, channel); the parts
-- after the schedule are kept as they are, the topic comes first and a digest's artifact
-- name (its product) last. Lengths are in bytes, as Rust counts them.
--
-- Jobs: the topic and product are in the payload. Where two old jobs map to one new key
-- (two schedules already mailed the period), the earliest takes it and the other keeps its
-- old key.
WITH old AS (
    SELECT id, payload, substr(dedupe_key, instr(dedupe_key, '|') + 1) AS tail
    FROM jobs
    WHERE dedupe_key LIKE 'aud:%' AND json_extract(payload, '$.topic') IS NOT NULL
), k AS (
    SELECT id,
           'aud2:' || length(CAST(json_extract(payload, '$.topic') AS BLOB)) || ':'
           || json_extract(payload, '$.topic') || '|' || tail
           || CASE WHEN json_extract(payload, '$.artifact.name') IS NULL THEN ''
                   ELSE '|' || length(CAST(json_extract(payload, '$.artifact.name') AS BLOB))
                        || ':' || json_extract(payload, '$.artifact.name') END AS nk
    FROM old
), pick AS (
    SELECT min(id) AS id, nk FROM k GROUP BY nk
)
UPDATE jobs SET dedupe_key = (SELECT nk FROM pick WHERE pick.id = jobs.id)
WHERE id IN (SELECT id FROM pick)
  AND NOT EXISTS (SELECT 1 FROM jobs j, pick f
                  WHERE f.id = jobs.id AND j.dedupe_key = f.nk);

-- Tombstones (keys of pruned jobs) hold no payload: the topic comes from the schedule named
-- in the key. The old tombstone stays until pruned by age; one whose schedule is gone keeps
-- only its old key.
INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at)
SELECT 'aud2:' || length(CAST(json_extract(s.payload, '$.topic') AS BLOB)) || ':'
       || json_extract(s.payload, '$.topic') || '|' || t.tail
       || CASE WHEN s.kind <> 'digest' OR json_extract(s.payload, '$.name') IS NULL THEN ''
               ELSE '|' || length(CAST(json_extract(s.payload, '$.name') AS BLOB))
                    || ':' || json_extract(s.payload, '$.name') END,
       t.job_id, t.finished_at
FROM (
    SELECT job_id, finished_at,
           substr(rest, instr(rest, ':') + 1, instr(rest, '|') - instr(rest, ':') - 1) AS sid,
           substr(rest, instr(rest, '|') + 1) AS tail
    FROM (SELECT job_id, finished_at, substr(dedupe_key, 5) AS rest
          FROM dedupe_tombstones WHERE dedupe_key LIKE 'aud:%')
) t
JOIN schedules s ON s.id = t.sid
WHERE json_extract(s.payload, '$.topic') IS NOT NULL
ON CONFLICT (dedupe_key) DO NOTHING;
