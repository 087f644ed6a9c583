//! The nodes of a cluster (issue 36): each node writes a heartbeat every few seconds, so that
//! an operator sees which nodes live, which one leads and what each runs.

use chrono::{DateTime, Utc};

/// `node_heartbeat`: node `id` is alive at `at` (insert or update its row). A node that
/// leads also clears the leader mark of every other node in the same transaction, so that
/// at most one row says leader after a change of leadership.
#[derive(Debug, Clone)]
pub struct NodeHeartbeat {
    /// The node's id (the one its leases and attempts name).
    pub id: String,
    /// When the node's process started (kept from its first heartbeat on; a restart writes
    /// its new start).
    pub started_at: DateTime<Utc>,
    /// The heartbeat's instant.
    pub at: DateTime<Utc>,
    /// Whether the node leads now.
    pub leader: bool,
}

/// `node_list`: every node with a heartbeat row, and the jobs running under each one's lease
/// (jobs held by a node without a row are listed too, with no heartbeat).
#[derive(Debug, Clone, Default)]
pub struct NodeList {}

/// One node as the admin shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    /// The node's id.
    pub id: String,
    /// When its process started; `None` for a node holding jobs without a heartbeat row.
    pub started_at: Option<DateTime<Utc>>,
    /// Its last heartbeat; `None` as for `started_at`.
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// Whether its last heartbeat said it leads.
    pub leader: bool,
    /// Jobs `running` under its lease now.
    pub running: i64,
}

/// `node_prune`: forget nodes whose last heartbeat is before `silent_before`.
#[derive(Debug, Clone)]
pub struct NodePrune {
    /// Nodes silent since before this are deleted.
    pub silent_before: DateTime<Utc>,
}
