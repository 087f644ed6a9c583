-- The audience a job delivers to, in columns: the stores no longer read a kind's payload.
-- Older jobs are filled by their payload's shape (a string `topic`, `recipient_id`,
-- `variant`), whatever their kind.
ALTER TABLE jobs ADD COLUMN topic TEXT;
ALTER TABLE jobs ADD COLUMN recipient_id TEXT;
ALTER TABLE jobs ADD COLUMN variant TEXT;

UPDATE jobs SET
    topic = CASE WHEN jsonb_typeof(payload -> 'topic') = 'string' THEN payload ->> 'topic' END,
    recipient_id = CASE WHEN jsonb_typeof(payload -> 'recipient_id') = 'string'
                        THEN payload ->> 'recipient_id' END,
    variant = CASE WHEN jsonb_typeof(payload -> 'variant') = 'string'
                   THEN payload ->> 'variant' END
WHERE jsonb_typeof(payload -> 'topic') = 'string'
   OR jsonb_typeof(payload -> 'recipient_id') = 'string'
   OR jsonb_typeof(payload -> 'variant') = 'string';

-- Erasure and the delivery views look jobs up by recipient.
CREATE INDEX jobs_recipient ON jobs (recipient_id) WHERE recipient_id IS NOT NULL;
