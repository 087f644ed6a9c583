-- Channels: a schedule's firing creates one job per channel (S0-6, S0-7), and a recipient may
-- have a webhook endpoint besides an address. Mirrors the SQLite migration with jsonb.
ALTER TABLE schedules ADD COLUMN channels jsonb;
ALTER TABLE jobs ADD COLUMN channel text;
ALTER TABLE recipients ADD COLUMN endpoint_id text REFERENCES endpoints (id);
