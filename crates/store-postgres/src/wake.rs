//! Telling the other nodes that jobs were inserted, without serialising the inserts.
//!
//! A transaction that runs `NOTIFY` takes a database-wide lock when it commits and holds it
//! until its commit record is flushed, so every notifying commit waits for the one before it:
//! single-job inserts that each notified could not commit faster than one WAL flush after
//! another (about 700 a second here, where the same inserts without it commit in groups). The
//! store's own inserts (`job_insert`, `job_insert_many`) therefore do not notify in their
//! statement; after their commit they ask this waker, which sends one `pg_notify` (on the
//! store's general pool) for every insert that committed before it was sent: one such commit
//! at a time per node, while the inserts commit beside it in groups. A burst of
//! inserts sends a few notifications, never one per insert, and never one before the jobs it
//! announces are committed. Inserts in an application's transaction (`job_insert_in_tx`) and
//! the shared roles' inserts (a schedule's firing, an expansion) keep the notification in
//! their statement: only their commit can announce them.

use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

/// The notification, with the schema as payload (`listen.rs`).
const NOTIFY: &str = "SELECT pg_notify('kairos_jobs', current_schema())";

/// The store's waker. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub(crate) struct Waker {
    /// An insert committed since the last notification was sent.
    pending: AtomicBool,
    /// A task is sending notifications.
    running: AtomicBool,
}

impl Waker {
    /// Jobs were committed: make sure a notification is sent after this call.
    pub(crate) fn committed(self: &Arc<Self>, pool: &PgPool) {
        self.pending.store(true, SeqCst);
        if self.running.swap(true, SeqCst) {
            // The running task sees `pending` before it stops.
            return;
        }
        let w = self.clone();
        let pool = pool.clone();
        tokio::spawn(async move {
            loop {
                if w.pending.swap(false, SeqCst) {
                    if let Err(e) = sqlx::query(NOTIFY).execute(&pool).await {
                        // Polling is the fallback; the inserts themselves succeeded.
                        tracing::warn!(error = %e, "notifying other nodes of new jobs failed");
                    }
                    continue;
                }
                w.running.store(false, SeqCst);
                // An insert that set `pending` after the swap above may have seen `running`
                // still set and left: take the work back unless another task did.
                if w.pending.load(SeqCst) && !w.running.swap(true, SeqCst) {
                    continue;
                }
                break;
            }
        });
    }
}
