-- Overlap policies (issue 34). `overlap`: what a firing does while the previous occurrence
-- still has open jobs (`allow`, the behaviour before, `skip`, `buffer_one`,
-- `cancel_previous`). `buffered_fire_at`: the one firing a `buffer_one` schedule holds until
-- the previous occurrence's jobs end (NULL: none).
ALTER TABLE schedules ADD COLUMN overlap TEXT NOT NULL DEFAULT 'allow';
ALTER TABLE schedules ADD COLUMN buffered_fire_at INTEGER;

-- Serves the scheduler's look at held firings each tick: only rows holding one.
CREATE INDEX schedules_buffered ON schedules (buffered_fire_at) WHERE buffered_fire_at IS NOT NULL;
