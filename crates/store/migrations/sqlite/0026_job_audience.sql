-- The audience a job delivers to, in columns: the stores no longer read a kind's payload.
-- Older jobs are filled by their payload's shape (a string `topic`, `recipient_id`,
-- `variant`), whatever their kind.
ALTER TABLE jobs ADD COLUMN topic TEXT;
ALTER TABLE jobs ADD COLUMN recipient_id TEXT;
ALTER TABLE jobs ADD COLUMN variant TEXT;

UPDATE jobs SET
    topic = CASE WHEN json_type(payload, '$.topic') = 'text'
                 THEN json_extract(payload, '$.topic') END,
    recipient_id = CASE WHEN json_type(payload, '$.recipient_id') = 'text'
                        THEN json_extract(payload, '$.recipient_id') END,
    variant = CASE WHEN json_type(payload, '$.variant') = 'text'
                   THEN json_extract(payload, '$.variant') END
WHERE json_valid(payload)
  AND (json_type(payload, '$.topic') = 'text'
       OR json_type(payload, '$.recipient_id') = 'text'
       OR json_type(payload, '$.variant') = 'text');

-- Erasure and the delivery views look jobs up by recipient.
CREATE INDEX jobs_recipient ON jobs (recipient_id) WHERE recipient_id IS NOT NULL;
