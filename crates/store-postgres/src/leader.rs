//! Leader election with a session advisory lock.
//!
//! [`run_leader_election`] keeps trying `pg_try_advisory_lock(key)` on a dedicated connection
//! (not one of the pool's: the lock belongs to the session and must live exactly as long as
//! that connection). The node that gets it is the leader and holds the connection, checking it
//! every `retry` interval; the others try again every `retry`. If the leader's process or
//! connection dies, PostgreSQL ends the session and releases the lock, and another node takes
//! it at its next try. A leader that finds its connection broken stops leading at once.
//!
//! Leadership only avoids duplicate maintenance work (see [`Leader`]): a node that leads for a
//! moment after losing its lock cannot break anything.

use kairos_store::Leader;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use std::str::FromStr;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The advisory lock key of `schema`'s leader: a 64-bit hash of a namespaced name, computed
/// by the server (`hashtextextended('kairos.leader.' || schema, 0)`), so it is the same on
/// every node and does not collide with the migration lock.
pub const LEADER_KEY_SQL: &str = "hashtextextended('kairos.leader.' || $1, 0)";

/// Run leader election for `schema` on the database at `url` until `cancel`, setting `leader`
/// when leadership is won or lost. Non-leaders try again every `retry` (a few seconds); the
/// leader checks its connection as often. On `cancel` a leader releases the lock (by closing
/// its session) so another node takes over at its next try. Errors are logged, never returned.
pub async fn run_leader_election(
    url: String,
    schema: String,
    leader: Leader,
    retry: Duration,
    cancel: CancellationToken,
) {
    let opts = match PgConnectOptions::from_str(&url) {
        Ok(o) => o.application_name(&format!("kairos leader {schema}")),
        Err(e) => {
            tracing::error!(error = %e, "leader election: the database url is not valid; never leading");
            return;
        }
    };
    let lock_sql = format!("SELECT pg_try_advisory_lock({LEADER_KEY_SQL})");
    let mut conn: Option<PgConnection> = None;
    loop {
        // Connect if needed, then try the lock (a leader: check the session is alive).
        let step = async {
            if conn.is_none() {
                conn = Some(opts.connect().await?);
            }
            let c = conn.as_mut().expect("connected above");
            if leader.is_leader() {
                sqlx::query("SELECT 1").execute(&mut *c).await?;
                Ok::<bool, sqlx::Error>(true)
            } else {
                let got: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(lock_sql.as_str()))
                    .bind(&schema)
                    .fetch_one(&mut *c)
                    .await?;
                Ok(got)
            }
        };
        let result = tokio::select! {
            _ = cancel.cancelled() => break,
            r = tokio::time::timeout(retry.max(Duration::from_secs(1)) * 2, step) => r,
        };
        let leading = match result {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "leader election: database connection failed");
                conn = None;
                false
            }
            Err(_) => {
                tracing::warn!("leader election: the database did not answer in time");
                conn = None;
                false
            }
        };
        let was = leader.set(leading);
        if leading && !was {
            tracing::info!(schema = %schema, "this node is now the leader");
        } else if !leading && was {
            tracing::warn!(schema = %schema, "this node is no longer the leader");
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(retry) => {}
        }
    }
    leader.set(false);
    if let Some(c) = conn {
        // Closing the session releases its advisory locks.
        let _ = tokio::time::timeout(Duration::from_secs(5), c.close()).await;
    }
}
