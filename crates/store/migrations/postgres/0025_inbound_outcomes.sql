-- Deliverability reads: a mail's provider events by its job (bounce and complaint rates per
-- topic, A/B variant stats), and the events of one action in a window (unknown events).
CREATE INDEX inbound_events_job ON inbound_events (job_id, type) WHERE job_id IS NOT NULL;
CREATE INDEX inbound_events_action ON inbound_events (action, received_at);
