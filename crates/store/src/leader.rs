//! [`Leader`]: whether this node currently runs the leader-only maintenance services
//! (rescuer; later pruner and monitor).
//!
//! Leadership avoids duplicate maintenance work; correctness never depends on it. Claims are
//! `SKIP LOCKED`/conditional updates only one node can win, completions are fenced by the lease
//! token, and expansion is deduplicated by unique keys: two nodes that both believe they lead
//! for a moment (a leader that has not yet noticed it lost its lock) do the same idempotent
//! work twice, nothing more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared leadership flag: read by services, set by an elector (on PostgreSQL an advisory
/// lock held on a dedicated connection; on SQLite the one node always leads). Cheap to clone;
/// clones share the flag.
#[derive(Debug, Clone)]
pub struct Leader {
    flag: Arc<AtomicBool>,
}

impl Leader {
    /// Always the leader: a single node (SQLite), or tests.
    pub fn always() -> Self {
        Leader {
            flag: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Not the leader until an elector says so with [`Leader::set`].
    pub fn follower() -> Self {
        Leader {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether this node leads now.
    pub fn is_leader(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Set by the elector when leadership is won or lost; returns the previous value.
    pub fn set(&self, leader: bool) -> bool {
        self.flag.swap(leader, Ordering::AcqRel)
    }
}
