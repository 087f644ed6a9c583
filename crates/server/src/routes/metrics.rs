//! `GET /metrics`: Prometheus text format. No token (scrapers seldom carry one; the numbers
//! are counts by kind and state, nothing personal — bind `KAIROS_LISTEN` to a private
//! network if even that should not leave it).
//!
//! Two sources, rendered one after the other:
//! - the process's recorder ([`metrics_recorder`](crate::monitoring::metrics_recorder)):
//!   attempts, lateness and duration histograms, scheduler firings and misfires, SLO
//!   transitions — counted by this node's engine;
//! - the database, read at each scrape: jobs by state and kind, queue depth, oldest due age,
//!   SLO warnings, what holds cleanup back (oldest snapshot age, dead row versions, WAL size).
//!   These are the same on every node, and are not put in the global recorder,
//!   so that several apps over several stores in one process (tests) never mix them up.

use crate::AppState;
use crate::monitoring::{builtin_checks, metrics_recorder};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Router, routing::get};
use kairos_engine::monitor::names;
use kairos_store::{DbHealth, DbHealthRead, JobBacklog};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The database gauges shared by scrapes that overlap: one read at a time, whatever the
/// scrape rate. `/metrics` carries no token, so without this anyone who reaches the port could
/// keep the database reading as many times at once as they open requests (the jobs per state
/// and kind are [`JobCounts`](crate::job_counts::JobCounts), which counts the finished ones
/// at most once at a time). A scrape is answered from a read that *started
/// after it arrived* — its own, or one a scrape that arrived with it ran — so a scrape never
/// sees numbers older than itself; a lone scraper reads the database every time, as before. A
/// failed read is shared the same way, so scrapes queued behind a database that does not
/// answer each wait for one read, not for one read per scrape ahead of them.
#[derive(Debug, Default)]
pub struct GaugeFlight {
    /// Reads started so far; a read's number is the count after its start.
    started: std::sync::atomic::AtomicU64,
    /// The last read: its number and its text, or why it failed. Held while a read runs.
    last: tokio::sync::Mutex<Option<(u64, Result<String, String>)>>,
}

impl GaugeFlight {
    /// The gauges from a read that started after this call, running one if none did.
    async fn read<F, Fut>(&self, run: F) -> Result<String, kairos_store::Error>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<String, kairos_store::Error>>,
    {
        use std::sync::atomic::Ordering;
        let shared = |r: &Result<String, String>| {
            r.clone()
                .map_err(|e| kairos_store::Error::new(kairos_store::ErrorKind::Unavailable, e))
        };
        let arrived = self.started.load(Ordering::Acquire);
        let mut last = self.last.lock().await;
        if let Some((n, r)) = last.as_ref()
            && *n > arrived
        {
            return shared(r);
        }
        let n = self.started.fetch_add(1, Ordering::AcqRel) + 1;
        let r = run().await;
        *last = Some((n, r.as_ref().map(String::clone).map_err(|e| e.to_string())));
        r
    }
}

/// The content type of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

/// A label value with `\`, `"` and newlines escaped (kinds are user-defined strings).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header_lines(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// The database gauges, as Prometheus text. `Err` when the store does not answer.
async fn store_gauges(state: &AppState) -> Result<String, kairos_store::Error> {
    let store = state.kairos.store();
    let now = state.kairos.clock().now();
    let counts = state.job_counts.read(store, state.kairos.clock()).await?;
    let backlog = store
        .job_backlog(JobBacklog {
            now,
            stuck_before: now,
            lease_expired_before: now,
        })
        .await?;
    let alerts = store.slo_alert_list().await?;
    let last_pass = store.monitor_pass_last().await?;
    let mut out = String::new();
    header_lines(
        &mut out,
        "kairos_jobs",
        "Jobs by state and kind, from the database.",
    );
    for c in &counts.jobs {
        let _ = writeln!(
            out,
            "kairos_jobs{{state=\"{}\",kind=\"{}\"}} {}",
            label(&c.state),
            label(&c.kind),
            c.count
        );
    }
    header_lines(
        &mut out,
        "kairos_jobs_retained_age_seconds",
        "How old the counts of finished states (succeeded, skipped, cancelled, dead) in kairos_jobs are: 0 when counted for this scrape; no sample while their first count runs.",
    );
    // No sample while the first count runs (the finished states are missing from
    // `kairos_jobs` then too).
    if let Some(at) = counts.retained_at {
        let age = ((now - at).num_milliseconds().max(0) as f64) / 1e3;
        let _ = writeln!(out, "kairos_jobs_retained_age_seconds {age}");
    }
    header_lines(
        &mut out,
        "kairos_queue_depth",
        "Available jobs due now and not yet claimed.",
    );
    let _ = writeln!(out, "kairos_queue_depth {}", backlog.due);
    waiting_lines(&mut out, &store.job_waiting().await?);
    header_lines(
        &mut out,
        "kairos_oldest_due_age_seconds",
        "How long the oldest due, unclaimed job has been due (0 when none).",
    );
    let age = backlog
        .oldest_due_at
        .map(|t| ((now - t).num_milliseconds().max(0) as f64) / 1e3)
        .unwrap_or(0.0);
    let _ = writeln!(out, "kairos_oldest_due_age_seconds {age}");
    header_lines(
        &mut out,
        "kairos_slo_warning",
        "1 while an SLO check warns (any subject), else 0.",
    );
    let mut by_check: BTreeMap<String, u8> = builtin_checks()
        .iter()
        .map(|c| (c.to_string(), 0))
        .collect();
    for a in &alerts {
        let v = by_check.entry(a.check.clone()).or_insert(0);
        *v = (*v).max(u8::from(a.active));
    }
    // `monitor_stale` is never a stored alert (a stopped monitor cannot raise it): read here
    // from the last pass, like `GET /v1/slo` does.
    let stale = state.monitor.enabled(names::MONITOR_STALE)
        && kairos_engine::monitor::is_stale(&state.monitor, last_pass, now);
    by_check.insert(names::MONITOR_STALE.to_string(), u8::from(stale));
    for (check, v) in by_check {
        let _ = writeln!(out, "kairos_slo_warning{{check=\"{}\"}} {v}", label(&check));
    }
    // What holds cleanup back: optional, so a database that refuses these reads (a role
    // without pg_read_all_stats sees its own sessions only, still fine) never hides the rest.
    match store.db_health_read(DbHealthRead { now }).await {
        Ok(h) => db_health_lines(&mut out, &h),
        Err(e) => tracing::warn!(error = %e, "metrics: reading the database's health failed"),
    }
    header_lines(
        &mut out,
        "kairos_monitor_last_success_timestamp_seconds",
        "Unix time of the end of the background monitor's last completed pass (0 before its first).",
    );
    let last = last_pass.map_or(0.0, |t| t.timestamp_millis() as f64 / 1e3);
    let _ = writeln!(out, "kairos_monitor_last_success_timestamp_seconds {last}");
    Ok(out)
}

/// `kairos_jobs_waiting{reason}` (due jobs put back to wait) and
/// `kairos_job_wait_seconds_total{reason}` (the waiting imposed, summed over every node: a
/// counter kept in the database).
fn waiting_lines(out: &mut String, waits: &[kairos_store::concurrency::JobWaiting]) {
    header_lines(
        out,
        "kairos_jobs_waiting",
        "Due jobs put back to wait, by reason (rate_limit, in_flight, concurrency_key).",
    );
    for w in waits {
        let _ = writeln!(
            out,
            "kairos_jobs_waiting{{reason=\"{}\"}} {}",
            label(&w.reason),
            w.waiting
        );
    }
    let _ = writeln!(
        out,
        "# HELP kairos_job_wait_seconds_total Seconds jobs were made to wait, by reason, on every node."
    );
    let _ = writeln!(out, "# TYPE kairos_job_wait_seconds_total counter");
    for w in waits {
        let _ = writeln!(
            out,
            "kairos_job_wait_seconds_total{{reason=\"{}\"}} {}",
            label(&w.reason),
            w.wait_ms_total as f64 / 1e3
        );
    }
}

/// `kairos_db_oldest_snapshot_age_seconds`, `kairos_db_dead_tuples{table}` (PostgreSQL) and
/// `kairos_sqlite_wal_bytes` (SQLite).
fn db_health_lines(out: &mut String, h: &DbHealth) {
    header_lines(
        out,
        "kairos_db_oldest_snapshot_age_seconds",
        "How long the oldest transaction has held the database's cleanup back (0 when none).",
    );
    let _ = writeln!(
        out,
        "kairos_db_oldest_snapshot_age_seconds {}",
        h.oldest_age_secs()
    );
    if !h.dead_tuples.is_empty() {
        header_lines(
            out,
            "kairos_db_dead_tuples",
            "Dead row versions per table, from pg_stat_user_tables.",
        );
        for (table, n) in &h.dead_tuples {
            let _ = writeln!(
                out,
                "kairos_db_dead_tuples{{table=\"{}\"}} {n}",
                label(table)
            );
        }
    }
    if let Some(bytes) = h.wal_bytes {
        header_lines(
            out,
            "kairos_sqlite_wal_bytes",
            "The size of the SQLite -wal file.",
        );
        let _ = writeln!(out, "kairos_sqlite_wal_bytes {bytes}");
    }
}

/// The metrics.
#[utoipa::path(operation_id = "metrics_metrics", get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text format", body = String,
        content_type = "text/plain; version=0.0.4")))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut out = String::new();
    if let Some(h) = metrics_recorder() {
        h.run_upkeep();
        out.push_str(&h.render());
    }
    header_lines(
        &mut out,
        "kairos_store_up",
        "1 when the database answered this scrape.",
    );
    match state.gauges.read(|| store_gauges(&state)).await {
        Ok(gauges) => {
            out.push_str("kairos_store_up 1\n");
            out.push_str(&gauges);
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: the database did not answer");
            out.push_str("kairos_store_up 0\n");
        }
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], out).into_response()
}

#[cfg(test)]
mod tests {
    use super::GaugeFlight;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::sync::Notify;
    use tokio::task::JoinHandle;

    type Scrape = JoinHandle<Result<String, kairos_store::Error>>;

    /// A scrape whose read, if it runs one, counts itself in `reads`, waits for `gate` (at
    /// most 2 s: a regression fails the test instead of hanging it) and fails if `fail`.
    fn scrape(
        flight: &Arc<GaugeFlight>,
        reads: &Arc<AtomicU32>,
        gate: &Arc<Notify>,
        fail: bool,
    ) -> Scrape {
        let (flight, reads, gate) = (flight.clone(), reads.clone(), gate.clone());
        tokio::spawn(async move {
            flight
                .read(|| async move {
                    let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                    let _ =
                        tokio::time::timeout(std::time::Duration::from_secs(2), gate.notified())
                            .await;
                    if fail {
                        return Err(kairos_store::Error::new(
                            kairos_store::ErrorKind::Unavailable,
                            format!("read {n} failed"),
                        ));
                    }
                    Ok(format!("read {n}"))
                })
                .await
        })
    }

    /// Yield until `reads` reaches `n` (bounded).
    async fn reads_reach(reads: &AtomicU32, n: u32) {
        for _ in 0..100 {
            if reads.load(Ordering::SeqCst) == n {
                return;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(reads.load(Ordering::SeqCst), n);
    }

    /// Ten scrapes: the first's read is held open while nine more arrive; the nine arrived
    /// after it started, so one of them reads again and the other eight share that read.
    /// Returns the first's answer and the nine's.
    async fn ten_scrapes(
        flight: &Arc<GaugeFlight>,
        reads: &Arc<AtomicU32>,
        fail: bool,
    ) -> (
        Result<String, kairos_store::Error>,
        Vec<Result<String, kairos_store::Error>>,
    ) {
        let gate = Arc::new(Notify::new());
        let first = scrape(flight, reads, &gate, fail);
        let before = reads.load(Ordering::SeqCst);
        reads_reach(reads, before + 1).await;
        let waiting: Vec<_> = (0..9).map(|_| scrape(flight, reads, &gate, fail)).collect();
        tokio::task::yield_now().await;
        gate.notify_one();
        let first = first.await.expect("first scrape");
        reads_reach(reads, before + 2).await;
        gate.notify_one();
        let mut rest = Vec::new();
        for w in waiting {
            rest.push(w.await.expect("scrape"));
        }
        (first, rest)
    }

    /// A scrape that arrives alone, its read succeeding at once.
    async fn later_scrape(flight: &Arc<GaugeFlight>, reads: &Arc<AtomicU32>) -> String {
        let gate = Arc::new(Notify::new());
        gate.notify_one();
        let later = scrape(flight, reads, &gate, false).await.expect("later");
        later.expect("a read of its own")
    }

    /// A fresh flight and its read counter.
    fn flight() -> (Arc<GaugeFlight>, Arc<AtomicU32>) {
        (
            Arc::new(GaugeFlight::default()),
            Arc::new(AtomicU32::new(0)),
        )
    }

    /// Scrapes that overlap share one read; a scrape after them reads again.
    #[tokio::test]
    async fn overlapping_scrapes_share_one_read_and_a_later_one_reads_again() {
        let (flight, reads) = flight();
        let (first, rest) = ten_scrapes(&flight, &reads, false).await;
        assert_eq!(first.expect("read 1"), "read 1");
        for r in rest {
            assert_eq!(r.expect("read 2"), "read 2");
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2, "ten scrapes, two reads");
        // A scrape that arrives after every read ended never gets an older one.
        assert_eq!(later_scrape(&flight, &reads).await, "read 3");
    }

    /// Scrapes queued behind a database that does not answer share its failure (each waits
    /// for one read, not one per scrape ahead); the failure is not kept for a later scrape.
    #[tokio::test]
    async fn overlapping_scrapes_share_a_failed_read_and_a_later_one_reads_again() {
        let (flight, reads) = flight();
        let (first, rest) = ten_scrapes(&flight, &reads, true).await;
        assert!(first.is_err());
        for r in rest {
            let e = r.expect_err("shared failure");
            assert!(e.to_string().contains("read 2 failed"), "{e}");
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2, "ten scrapes, two reads");
        assert_eq!(later_scrape(&flight, &reads).await, "read 3");
    }
}
