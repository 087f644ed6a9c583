-- The nodes of a cluster (issue 36): each node upserts its row every few seconds (its
-- heartbeat service). `leader`: what its last heartbeat said (a leader clears the mark of
-- the others). A node silent for long is shown as gone, and its row deleted later. Mirrors
-- the SQLite table with boolean and timestamptz.
CREATE TABLE nodes (
    id                text PRIMARY KEY,
    started_at        timestamptz NOT NULL,
    last_heartbeat_at timestamptz NOT NULL,
    leader            boolean NOT NULL DEFAULT false
);
