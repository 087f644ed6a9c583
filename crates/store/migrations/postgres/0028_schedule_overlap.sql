-- Overlap policies (issue 34). Mirrors the SQLite migration: the policy (default `allow`,
-- the behaviour before) and the one firing a `buffer_one` schedule holds (NULL: none).
ALTER TABLE schedules ADD COLUMN overlap text NOT NULL DEFAULT 'allow';
ALTER TABLE schedules ADD COLUMN buffered_fire_at timestamptz;

CREATE INDEX schedules_buffered ON schedules (buffered_fire_at) WHERE buffered_fire_at IS NOT NULL;
