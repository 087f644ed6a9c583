-- The nodes of a cluster (issue 36): each node upserts its row every few seconds (its
-- heartbeat service). `leader`: what its last heartbeat said (a leader clears the mark of
-- the others). A node silent for long is shown as gone, and its row deleted later.
CREATE TABLE nodes (
    id                TEXT PRIMARY KEY,
    started_at        INTEGER NOT NULL,
    last_heartbeat_at INTEGER NOT NULL,
    leader            INTEGER NOT NULL DEFAULT 0
);
