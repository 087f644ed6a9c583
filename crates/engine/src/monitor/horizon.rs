//! The `db_horizon` check: a transaction that has held the database's cleanup back longer
//! than `db_horizon`. On PostgreSQL, one warning per session whose snapshot
//! (`backend_xmin`) is older than that — subject its pid, message its application, client and
//! transaction start — since no row version younger than it can be vacuumed and every claim
//! walks the dead entries of what already ran. On SQLite, one warning (subject `reader`) while
//! a reader's snapshot has kept checkpoints from catching up with the WAL that long.
//!
//! This is the warning that comes before the slowdown: the queue itself stays correct, only
//! slower, so the rest of the monitor would not notice until the backlog grew.

use super::{CheckResult, CheckStatus, MonitorConfig, names};
use chrono::{DateTime, SecondsFormat, Utc};
use kairos_store::{DbHealthRead, HeldSnapshot, Store};

/// The subject of the SQLite warning, where a reader in another process has no id.
pub const SQLITE_READER: &str = "reader";

/// Sessions (or the SQLite reader) holding cleanup back past `cfg.db_horizon`.
pub(super) async fn db_horizon(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let health = store.db_health_read(DbHealthRead { now }).await?;
    let limit = cfg.db_horizon.as_secs_f64();
    let mut out: Vec<CheckResult> = health
        .held
        .iter()
        .filter(|h| h.age_secs > limit)
        .map(|h| warning(h, limit))
        .collect();
    if out.is_empty() {
        let mut r = CheckResult::new(
            names::DB_HORIZON,
            None,
            CheckStatus::Ok,
            format!(
                "no transaction has held cleanup back for more than {}",
                super::checks::human(cfg.db_horizon)
            ),
        );
        r.value = Some(health.oldest_age_secs());
        r.threshold = Some(limit);
        out.push(r);
    }
    Ok(out)
}

fn warning(h: &HeldSnapshot, limit: f64) -> CheckResult {
    let secs = h.age_secs.round() as i64;
    let (subject, text) = match h.pid {
        Some(pid) => {
            let mut who = format!("session {pid}");
            if let Some(app) = &h.application {
                who.push_str(&format!(" (application {app:?})"));
            }
            if let Some(client) = &h.client {
                who.push_str(&format!(" from {client}"));
            }
            let start = h
                .xact_start
                .map(|t| {
                    format!(
                        ", transaction started {}",
                        t.to_rfc3339_opts(SecondsFormat::Secs, true)
                    )
                })
                .unwrap_or_default();
            let state = h
                .state
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default();
            (
                pid.to_string(),
                format!(
                    "{who} has held a snapshot for {secs} s{start}{state}: no row version younger than it can be vacuumed, so the queue slows as dead entries pile up; end that transaction (pg_terminate_backend({pid}) if it is abandoned)"
                ),
            )
        }
        None => (
            SQLITE_READER.to_string(),
            format!(
                "WAL checkpoints have not caught up for {secs} s: a reader (another process's open transaction, a backup) keeps its snapshot, or writes outpace checkpoints; the WAL grows until it ends"
            ),
        ),
    };
    let mut r = CheckResult::new(names::DB_HORIZON, Some(subject), CheckStatus::Warning, text);
    r.value = Some(h.age_secs);
    r.threshold = Some(limit);
    r
}
