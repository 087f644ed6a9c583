-- Channels: a schedule's firing creates one job per channel (S0-6, S0-7), and a recipient may
-- have a webhook endpoint besides an address.
--
-- schedules.channels: JSON array of {name, kind, payload?, endpoint_id?, retry?}; NULL for a
-- schedule made with a single `kind` (its one channel is named after its kind).
ALTER TABLE schedules ADD COLUMN channels TEXT;
-- jobs.channel: the channel a job delivers on; NULL for a job enqueued directly.
ALTER TABLE jobs ADD COLUMN channel TEXT;
-- recipients.endpoint_id: the recipient's webhook endpoint, for the `webhook` channel.
ALTER TABLE recipients ADD COLUMN endpoint_id TEXT REFERENCES endpoints (id);
