//! `kairos bench --rate R --duration D`: a steady-rate run. The bench's own producer enqueues
//! R jobs per second through the API's enqueue path ([`Kairos::job_enqueue`]: one job, one
//! store insert, the engine woken), spread evenly over each second (every 20 ms it inserts
//! the jobs then due), while the node the burst bench assembles runs them. With
//! `--enqueue-batch N` (N > 1) each tick's due jobs go through the batch enqueue instead
//! ([`Kairos::job_enqueue_many`], as `POST /v1/jobs/batch`) in calls of at most N jobs.
//! After D it waits for the queue to drain.
//!
//! `--warmup W` (default: `--keep`'s value, else none) runs the producer and the node at the
//! rate for W before the measured D: with `--keep K` the tables then hold K of finished jobs
//! from the measured run's first second, as a node in production does, instead of filling
//! during it. Nothing of the warm-up is printed or counted but the jobs it enqueued and
//! completed (`warmup_enqueued`, `warmup_completed` in the summary).
//!
//! Every second a sample is taken: jobs enqueued and completed (outcomes committed) in that
//! second, the backlog, the claims' latency (the store is wrapped in [`TimedStore`], which
//! times each claim the engine makes), the lateness of the jobs started in that second, and
//! what cleanup is behind: dead row versions of the job tables on PostgreSQL, the WAL's size
//! on SQLite (both read by the store's `db_health_read`, as the monitor does). With `--json`
//! each sample is a JSON line; the summary line comes last. `--plot` draws the samples.
//!
//! `--hold-snapshots N` (PostgreSQL) opens N sessions named [`HOLD_APPLICATION`] that each
//! hold a `REPEATABLE READ` snapshot for `--hold-secs`, scanning `pg_class` every half second,
//! then commit and start again, the N started `--hold-stagger` seconds apart, for the whole
//! run: the production shape in which a queue's dead row versions cannot be vacuumed.

use crate::bench::{
    BenchArgs, BenchDb, NoopHandler, SizeProbe, engine_config, percentile, wait_done,
};
use crate::bench_plot::{Panel, Series, render};
use crate::bench_timed::TimedStore;
use kairos_core::{Clock, SystemClock};
use kairos_engine::ops::NewJob;
use kairos_engine::{Engine, Kairos, Kinds};
use kairos_store::{DbHealthRead, Store};
use serde_json::{Value, json};
use sqlx::{ConnectOptions, Connection};
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// The `application_name` of the sessions `--hold-snapshots` opens.
pub(crate) const HOLD_APPLICATION: &str = "kairos-bench-hold";

/// How often the producer inserts the jobs due by then.
const PRODUCER_TICK: Duration = Duration::from_millis(20);

/// Enqueues in flight at once: API clients do not wait for each other.
const ENQUEUE_CONCURRENCY: usize = 64;

/// How often a holder reads inside its snapshot.
const HOLD_SCAN: Duration = Duration::from_millis(500);

/// Windows: after the first `WARMUP_SECS`, every `WINDOW_SECS` of the producing period.
const WARMUP_SECS: u64 = 30;
const WINDOW_SECS: u64 = 10;

type BoxError = Box<dyn Error + Send + Sync>;

/// One second of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the start (the end of the second this sample covers).
    pub t: u64,
    pub enqueued: u64,
    pub completed: u64,
    /// Enqueued minus completed, since the start.
    pub backlog: i64,
    pub claims: usize,
    pub claim_p50_ms: Option<f64>,
    pub claim_p99_ms: Option<f64>,
    pub lateness_p99_ms: Option<f64>,
    /// Dead row versions of the job tables (PostgreSQL).
    pub dead_tuples: Option<i64>,
    /// The `-wal` file's size (SQLite).
    pub wal_bytes: Option<u64>,
    /// The bytes the job tables take (see [`SizeProbe`]).
    pub job_table_bytes: Option<u64>,
}

fn ms(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn p(sorted: &[f64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| ms(percentile(sorted, q)))
}

impl Sample {
    /// The JSON line: `dead_tuples` on PostgreSQL, `wal_bytes` on SQLite (null when the read
    /// failed).
    fn to_json(&self, postgres: bool) -> Value {
        let mut v = json!({
            "t": self.t,
            "enqueued": self.enqueued,
            "completed": self.completed,
            "backlog": self.backlog,
            "claims": self.claims,
            "claim_p50_ms": self.claim_p50_ms,
            "claim_p99_ms": self.claim_p99_ms,
            "lateness_p99_ms": self.lateness_p99_ms,
            "job_table_bytes": self.job_table_bytes,
        });
        if postgres {
            v["dead_tuples"] = self.dead_tuples.into();
        } else {
            v["wal_bytes"] = self.wal_bytes.into();
        }
        v
    }
}

/// The 10-second windows of the producing period (D, or longer when the producer fell behind)
/// after the first 30 s, and how many of them
/// completed fewer than `share` of the jobs enqueued in them. A window is the samples with
/// `t` in `(30 + 10k, 40 + 10k]`; only whole windows within `producing_secs` count.
pub(crate) fn windows_below(samples: &[Sample], producing_secs: u64, share: f64) -> (u64, u64) {
    let (mut windows, mut below) = (0, 0);
    let mut start = WARMUP_SECS;
    while start + WINDOW_SECS <= producing_secs {
        let (enq, done) = samples
            .iter()
            .filter(|s| s.t > start && s.t <= start + WINDOW_SECS)
            .fold((0u64, 0u64), |(e, d), s| (e + s.enqueued, d + s.completed));
        windows += 1;
        if (done as f64) < share * enq as f64 {
            below += 1;
        }
        start += WINDOW_SECS;
    }
    (windows, below)
}

/// What the sampler reads each second.
struct Probe {
    timed: Arc<TimedStore>,
    inner: Arc<dyn Store>,
    handler: Arc<NoopHandler>,
    enqueued: Arc<AtomicU64>,
    clock: Arc<dyn Clock>,
    size: SizeProbe,
    postgres: bool,
    json: bool,
}

/// What the sampler saw over the whole run.
#[derive(Default)]
struct Seen {
    samples: Vec<Sample>,
    lateness: Vec<f64>,
    claims: Vec<f64>,
    /// Jobs enqueued and outcomes committed during the warm-up (before the first sample).
    warmup_enqueued: u64,
    warmup_completed: u64,
}

impl Probe {
    /// Dead row versions of the job tables (every table whose name has `job` in it, so that
    /// a hot table and a history table both count), or the WAL's size.
    async fn cleanup(&self) -> (Option<i64>, Option<u64>) {
        let read = self.inner.db_health_read(DbHealthRead {
            now: self.clock.now(),
        });
        match tokio::time::timeout(Duration::from_millis(900), read).await {
            Ok(Ok(h)) => (
                self.postgres.then(|| {
                    h.dead_tuples
                        .iter()
                        .filter(|(t, _)| t.contains("job"))
                        .map(|(_, n)| *n)
                        .sum()
                }),
                h.wal_bytes,
            ),
            Ok(Err(e)) => {
                eprintln!("warning: reading dead tuples / WAL size failed: {e}");
                (None, None)
            }
            Err(_) => (None, None),
        }
    }

    /// Drop what the wrapper and the handler gathered so far (claim times, lateness).
    fn discard(&self) {
        self.timed.take_claims();
        self.handler
            .lateness_ms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Until `t0` (the warm-up), once a second drop what was gathered; at `t0`, drop it again
    /// and return the jobs enqueued and completed so far. `None` when `stop` came first.
    async fn warm_up(&self, t0: Instant, stop: &CancellationToken) -> Option<(u64, u64)> {
        while Instant::now() < t0 {
            let next = (Instant::now() + Duration::from_secs(1)).min(t0);
            tokio::select! {
                _ = stop.cancelled() => return None,
                _ = tokio::time::sleep_until(next) => {}
            }
            self.discard();
        }
        self.discard();
        Some((
            self.enqueued.load(Ordering::Relaxed),
            self.timed.completed.load(Ordering::Relaxed),
        ))
    }

    /// After the warm-up (until `t0`), sample every second from `t0` until `stop`, then once
    /// more for the part-second left (when anything happened in it), so that the lines add up
    /// to the measured run's totals.
    async fn run(self, t0: Instant, stop: CancellationToken) -> Seen {
        let mut seen = Seen::default();
        let Some((warm_enq, warm_done)) = self.warm_up(t0, &stop).await else {
            return seen;
        };
        (seen.warmup_enqueued, seen.warmup_completed) = (warm_enq, warm_done);
        let mut tick =
            tokio::time::interval_at(t0 + Duration::from_secs(1), Duration::from_secs(1));
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let (mut enq_before, mut done_before, mut t_before) = (warm_enq, warm_done, 0u64);
        loop {
            let last = tokio::select! {
                _ = tick.tick() => false,
                _ = stop.cancelled() => true,
            };
            let secs = t0.elapsed().as_secs_f64();
            let t = if last { secs.ceil() } else { secs.round() } as u64;
            let t = t.max(t_before + 1);
            let enq = self.enqueued.load(Ordering::Relaxed);
            let done = self.timed.completed.load(Ordering::Relaxed);
            let mut claims = self.timed.take_claims();
            claims.sort_by(|a, b| a.total_cmp(b));
            let mut late = std::mem::take(
                &mut *self
                    .handler
                    .lateness_ms
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            late.sort_by(|a, b| a.total_cmp(b));
            if last && enq == enq_before && done == done_before && late.is_empty() {
                break;
            }
            let (dead_tuples, wal_bytes) = self.cleanup().await;
            let job_table_bytes =
                tokio::time::timeout(Duration::from_millis(500), self.size.read())
                    .await
                    .ok()
                    .flatten();
            let s = Sample {
                t,
                enqueued: enq - enq_before,
                completed: done.saturating_sub(done_before),
                backlog: enq as i64 - done as i64,
                claims: claims.len(),
                claim_p50_ms: p(&claims, 0.50),
                claim_p99_ms: p(&claims, 0.99),
                lateness_p99_ms: p(&late, 0.99),
                dead_tuples,
                wal_bytes,
                job_table_bytes,
            };
            if self.json {
                println!("{}", s.to_json(self.postgres));
            }
            (enq_before, done_before, t_before) = (enq, done, t);
            seen.samples.push(s);
            seen.lateness.extend(late);
            seen.claims.extend(claims);
            if last {
                break;
            }
        }
        seen
    }
}

/// The node's settings for a steady run: the burst bench's, and with `--keep` the pruner of
/// a node keeping that much of finished jobs, pruning often enough that the tables hold
/// about that much.
pub(crate) fn rate_engine_config(args: &BenchArgs) -> kairos_engine::EngineConfig {
    let mut config = engine_config(args.concurrency, args.database_url.is_some());
    if let Some(keep) = args.keep {
        config.pruner.succeeded = Some(keep);
        config.pruner.dead = Some(keep);
        config.pruner.interval = (keep / 10).clamp(Duration::from_secs(1), Duration::from_secs(30));
    }
    config
}

/// How long the run goes at the rate before the measured `--duration`: `--warmup`, else
/// `--keep` (so that the kept finished jobs are in the tables when measuring starts), else
/// none.
pub(crate) fn warmup(args: &BenchArgs) -> Duration {
    args.warmup.or(args.keep).unwrap_or(Duration::ZERO)
}

/// The job the producer enqueues, as an API client would post it (due now).
fn new_job() -> NewJob {
    NewJob {
        kind: Some("bench".into()),
        payload: Some(json!({"n": 1})),
        ..Default::default()
    }
}

/// The jobs of one enqueue call, for `pending` jobs due and calls of at most `batch`: all of
/// them, or `batch` when more are due (the rest go in the next calls of the tick).
pub(crate) fn call_size(pending: u64, batch: usize) -> u64 {
    pending.min(batch.max(1) as u64)
}

/// What the producer did: jobs, how long it took, and the enqueue calls it made.
struct Produced {
    total: u64,
    took: Duration,
    calls: u64,
}

/// Enqueue `rate` jobs per second for `duration` from `t0`, at most [`ENQUEUE_CONCURRENCY`]
/// calls at once: with `batch` 1 each job through [`Kairos::job_enqueue`], else each tick's
/// due jobs through [`Kairos::job_enqueue_many`] in calls of at most `batch`.
async fn produce(
    kairos: Kairos,
    rate: u64,
    duration: Duration,
    t0: Instant,
    enqueued: Arc<AtomicU64>,
    batch: usize,
) -> Result<Produced, Box<dyn Error>> {
    let total = (rate as f64 * duration.as_secs_f64()).round() as u64;
    let mut tick = tokio::time::interval_at(t0, PRODUCER_TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let slots = Arc::new(Semaphore::new(ENQUEUE_CONCURRENCY));
    let mut inserts: JoinSet<Result<(), kairos_engine::OpsError>> = JoinSet::new();
    let (mut issued, mut calls) = (0u64, 0u64);
    while issued < total {
        tick.tick().await;
        let due = ((rate as f64 * t0.elapsed().as_secs_f64()) as u64).min(total);
        while issued < due {
            let slot = slots.clone().acquire_owned().await?;
            let jobs = call_size(due - issued, batch);
            issued += jobs;
            calls += 1;
            let (k, n) = (kairos.clone(), enqueued.clone());
            inserts.spawn(async move {
                if batch == 1 {
                    k.job_enqueue(new_job()).await?;
                } else {
                    k.job_enqueue_many((0..jobs).map(|_| new_job()).collect())
                        .await?;
                }
                drop(slot);
                n.fetch_add(jobs, Ordering::Relaxed);
                Ok(())
            });
            while let Some(r) = inserts.try_join_next() {
                r??;
            }
        }
    }
    while let Some(r) = inserts.join_next().await {
        r??;
    }
    Ok(Produced {
        total,
        took: t0.elapsed(),
        calls,
    })
}

/// One `--hold-snapshots` session: after `delay`, connect as [`HOLD_APPLICATION`], then until
/// `cancel`: `BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT count(*) FROM pg_class` every
/// half second for `hold`, `COMMIT`, again. Returns how many snapshots it held.
pub(crate) async fn hold_snapshots(
    url: String,
    delay: Duration,
    hold: Duration,
    cancel: CancellationToken,
) -> Result<u64, BoxError> {
    tokio::select! {
        _ = cancel.cancelled() => return Ok(0),
        _ = tokio::time::sleep(delay) => {}
    }
    let mut conn = url
        .parse::<sqlx::postgres::PgConnectOptions>()?
        .application_name(HOLD_APPLICATION)
        .connect()
        .await?;
    let mut held = 0;
    while !cancel.is_cancelled() {
        sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut conn)
            .await?;
        held += 1;
        let until = Instant::now() + hold;
        loop {
            sqlx::query("SELECT count(*) FROM pg_class")
                .execute(&mut conn)
                .await?;
            let next = (Instant::now() + HOLD_SCAN).min(until);
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep_until(next) => {}
            }
            if Instant::now() >= until {
                break;
            }
        }
        sqlx::query("COMMIT").execute(&mut conn).await?;
    }
    conn.close().await?;
    Ok(held)
}

/// Run the steady-rate benchmark on `db` (closed at the end, also after an error) and print
/// its summary line last.
pub(crate) async fn run(args: &BenchArgs, json: bool, db: BenchDb) -> Result<(), Box<dyn Error>> {
    let result = run_on(args, json, &db).await;
    db.close().await;
    let summary = result?;
    println!("{summary}");
    Ok(())
}

async fn run_on(args: &BenchArgs, json: bool, db: &BenchDb) -> Result<Value, Box<dyn Error>> {
    let (Some(rate), Some(duration)) = (args.rate, args.duration) else {
        return Err("--rate and --duration: both are needed for a steady-rate run".into());
    };
    let postgres = matches!(db, BenchDb::Postgres(..));
    let inner = db.store();
    let timed = TimedStore::new(inner.clone());
    let store: Arc<dyn Store> = timed.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let handler = Arc::new(NoopHandler::new(u64::MAX, None));
    let kinds = Arc::new(Kinds::builtin().with_handler("bench", handler.clone()));
    let config = rate_engine_config(args);
    let engine = Engine::new(config, store.clone(), clock.clone(), kinds.clone())?;
    let kairos = Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds);

    // Every job of the run finishes after this instant (a second of margin).
    let since = clock.now() - chrono::Duration::seconds(1);
    let cancel = CancellationToken::new();
    let node = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let warm = warmup(args);
    if !warm.is_zero() {
        eprintln!(
            "warming up: {warm:?} at {rate} jobs/s before the measured {duration:?} (nothing \
             printed or counted meanwhile; --warmup 0s measures from an empty queue)"
        );
    }
    let start = Instant::now();
    // The measured run starts here; the lines' `t` count from it.
    let t0 = start + warm;
    let enqueued = Arc::new(AtomicU64::new(0));
    let stop_sampling = CancellationToken::new();
    let sampler = tokio::spawn(
        Probe {
            timed: timed.clone(),
            inner: inner.clone(),
            handler: handler.clone(),
            enqueued: enqueued.clone(),
            clock: clock.clone(),
            size: db.size_probe(),
            postgres,
            json,
        }
        .run(t0, stop_sampling.clone()),
    );
    let release = CancellationToken::new();
    let mut holders = JoinSet::new();
    if let (Some(url), true) = (&args.database_url, args.hold_snapshots > 0) {
        for i in 0..args.hold_snapshots {
            let held = hold_snapshots(
                url.clone(),
                Duration::from_secs(args.hold_stagger * i as u64),
                Duration::from_secs(args.hold_secs),
                release.clone(),
            );
            holders.spawn(async move {
                let r = held.await;
                if let Err(e) = &r {
                    eprintln!("warning: --hold-snapshots: session {i} failed: {e}");
                }
                r
            });
        }
    }

    let produced = produce(
        kairos,
        rate,
        warm + duration,
        start,
        enqueued.clone(),
        args.enqueue_batch,
    )
    .await;
    let drained: Result<Duration, Box<dyn Error>> = match &produced {
        Ok(Produced { total, .. }) => {
            async {
                handler.target.store(*total, Ordering::Relaxed);
                let bar = indicatif::ProgressBar::hidden();
                let limit = duration.max(Duration::from_secs(60));
                if args.keep.is_some() {
                    // The pruner deletes finished jobs during the run, so the database cannot
                    // say how many succeeded: wait for the outcomes the wrapper counted.
                    let until = Instant::now() + limit;
                    while timed.completed.load(Ordering::Relaxed) < *total && Instant::now() < until
                    {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let done = timed.completed.load(Ordering::Relaxed);
                    if done < *total {
                        return Err(format!(
                            "draining the queue: only {done} of {total} outcomes committed"
                        )
                        .into());
                    }
                    return Ok(start.elapsed());
                }
                let drained = wait_done(
                    inner.as_ref(),
                    &timed.completed,
                    since,
                    &handler,
                    (*total as i64, &bar, limit),
                )
                .await
                .map_err(|e| -> Box<dyn Error> { format!("draining the queue: {e}").into() })
                .map(|_| start.elapsed())?;
                Ok(drained)
            }
            .await
        }
        Err(_) => Ok(start.elapsed()),
    };
    stop_sampling.cancel();
    let seen = sampler.await;
    cancel.cancel();
    let _ = node.await;
    release.cancel();
    let mut held = 0;
    let mut hold_error = None;
    while let Some(r) = holders.join_next().await {
        match r {
            Ok(Ok(n)) => held += n,
            Ok(Err(e)) => hold_error = hold_error.or(Some(e.to_string())),
            Err(e) => hold_error = hold_error.or(Some(e.to_string())),
        }
    }
    let seen = seen?;
    let Produced {
        total,
        took: producing,
        calls,
    } = produced?;
    let drained = drained?;
    if let Some(e) = hold_error {
        return Err(format!("--hold-snapshots: a holding session failed: {e}").into());
    }

    // The measured run: from the end of the warm-up.
    let producing = producing.saturating_sub(warm);
    let drained = drained.saturating_sub(warm);
    let (warm_enq, warm_done) = (seen.warmup_enqueued, seen.warmup_completed);
    let total = total.saturating_sub(warm_enq);
    let completed = timed
        .completed
        .load(Ordering::Relaxed)
        .saturating_sub(warm_done);
    let mut late = seen.lateness;
    late.sort_by(|a, b| a.total_cmp(b));
    let mut claims = seen.claims;
    claims.sort_by(|a, b| a.total_cmp(b));
    // The producing period is longer than D when the enqueue path could not keep up.
    let (windows, below) = windows_below(&seen.samples, producing.as_secs(), 0.99);
    let enqueue_per_sec = total as f64 / producing.as_secs_f64();
    if enqueue_per_sec < 0.95 * rate as f64 {
        eprintln!(
            "warning: --rate: the producer enqueued {enqueue_per_sec:.0} jobs/s of the {rate} \
             asked ({total} jobs in {:.1} s): the enqueue path, not the queue, set the pace",
            producing.as_secs_f64()
        );
    }
    let max_backlog = seen.samples.iter().map(|s| s.backlog).max().unwrap_or(0);
    let mut summary = json!({
        "jobs": total,
        "backlog": args.backlog,
        "concurrency": args.concurrency,
        "database": db.name(),
        "enqueue_per_sec": enqueue_per_sec.round(),
        "enqueue_batch": args.enqueue_batch,
        "enqueue_calls": calls,
        "process_per_sec": (completed as f64 / drained.as_secs_f64()).round(),
        "p50_lateness_ms": ms(percentile(&late, 0.50)),
        "p99_lateness_ms": ms(percentile(&late, 0.99)),
        "started_early": late.iter().filter(|l| **l < 0.0).count(),
        "rate": rate,
        "duration_secs": duration.as_secs_f64(),
        "enqueued": enqueued.load(Ordering::Relaxed).saturating_sub(warm_enq),
        "completed": completed,
        "max_backlog": max_backlog,
        "lateness_p99_ms": ms(percentile(&late, 0.99)),
        "claim_p50_ms": ms(percentile(&claims, 0.50)),
        "claim_p99_ms": ms(percentile(&claims, 0.99)),
        "windows": windows,
        "windows_below_99pct": below,
        "drain_secs": ((drained.saturating_sub(producing)).as_secs_f64() * 100.0).round() / 100.0,
        "hold_snapshots": args.hold_snapshots,
        "snapshots_held": held,
        "keep_secs": args.keep.map(|k| k.as_secs()),
        "warmup_secs": warm.as_secs_f64(),
        "warmup_enqueued": warm_enq,
        "warmup_completed": warm_done,
        "max_job_table_bytes": seen.samples.iter().filter_map(|s| s.job_table_bytes).max(),
    });
    if postgres {
        summary["max_dead_tuples"] = seen
            .samples
            .iter()
            .filter_map(|s| s.dead_tuples)
            .max()
            .into();
    } else {
        summary["max_wal_bytes"] = seen.samples.iter().filter_map(|s| s.wal_bytes).max().into();
    }
    if let Some(path) = &args.plot {
        let title = format!(
            "kairos bench --rate {rate} --duration {duration:?}{} on {}{}",
            if warm.is_zero() {
                String::new()
            } else {
                format!(" after a {warm:?} warm-up")
            },
            db.name(),
            if args.hold_snapshots > 0 {
                format!(
                    ", {} snapshots held {} s, {} s apart",
                    args.hold_snapshots, args.hold_secs, args.hold_stagger
                )
            } else {
                String::new()
            }
        );
        std::fs::write(path, plot(&title, &seen.samples, postgres))
            .map_err(|e| format!("--plot: could not write {}: {e}", path.display()))?;
    }
    Ok(summary)
}

/// The samples as an SVG: throughput, backlog, latencies, and dead tuples or the WAL.
pub(crate) fn plot(title: &str, samples: &[Sample], postgres: bool) -> String {
    let series = |name: &str, color: &'static str, f: &dyn Fn(&Sample) -> Option<f64>| Series {
        name: name.into(),
        color,
        points: samples
            .iter()
            .filter_map(|s| f(s).map(|y| (s.t as f64, y)))
            .collect(),
    };
    let cleanup = if postgres {
        Panel {
            title: "dead row versions of the job tables".into(),
            series: vec![series("dead tuples", "#8c564b", &|s| {
                s.dead_tuples.map(|n| n as f64)
            })],
        }
    } else {
        Panel {
            title: "WAL size (MB)".into(),
            series: vec![series("kairos.db-wal", "#8c564b", &|s| {
                s.wal_bytes.map(|b| b as f64 / 1e6)
            })],
        }
    };
    render(
        title,
        &[
            Panel {
                title: "jobs per second".into(),
                series: vec![
                    series("enqueued", "#1f77b4", &|s| Some(s.enqueued as f64)),
                    series("completed", "#ff7f0e", &|s| Some(s.completed as f64)),
                ],
            },
            Panel {
                title: "backlog (enqueued, not completed)".into(),
                series: vec![series("backlog", "#2ca02c", &|s| Some(s.backlog as f64))],
            },
            Panel {
                title: "latency per second (ms)".into(),
                series: vec![
                    series("lateness p99", "#d62728", &|s| s.lateness_p99_ms),
                    series("claim p99", "#9467bd", &|s| s.claim_p99_ms),
                ],
            },
            cleanup,
            Panel {
                title: "job tables (MB)".into(),
                series: vec![series("jobs + job_attempts", "#17becf", &|s| {
                    s.job_table_bytes.map(|b| b as f64 / 1e6)
                })],
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u64, enqueued: u64, completed: u64) -> Sample {
        Sample {
            t,
            enqueued,
            completed,
            ..Default::default()
        }
    }

    #[test]
    fn bench_rate_windows_count_only_whole_windows_after_the_first_30_s() {
        // 65 s produced: windows (30, 40], (40, 50], (50, 60]; (60, 70] is not whole.
        let mut samples: Vec<Sample> = (1..=70).map(|t| second(t, 100, 100)).collect();
        // The first 30 s do not count, however slow.
        samples[5].completed = 0;
        // (40, 50]: 1,000 enqueued, 989 completed: below 99 %.
        samples[44].completed = 89;
        // (60, 70] is past the producing period.
        samples[64].completed = 0;
        assert_eq!(windows_below(&samples, 65, 0.99), (3, 1));
        // 990 of 1,000 is 99 %: not below.
        samples[44].completed = 90;
        assert_eq!(windows_below(&samples, 65, 0.99), (3, 0));
        assert_eq!(windows_below(&samples, 3, 0.99), (0, 0));
    }

    #[test]
    fn bench_rate_enqueue_batch_splits_a_ticks_due_jobs_into_calls_of_at_most_n() {
        let calls = |mut pending: u64, batch: usize| {
            let mut sizes = Vec::new();
            while pending > 0 {
                let n = call_size(pending, batch);
                sizes.push(n);
                pending -= n;
            }
            sizes
        };
        assert_eq!(calls(5, 1), [1, 1, 1, 1, 1], "the default: a job per call");
        assert_eq!(calls(250, 100), [100, 100, 50]);
        assert_eq!(calls(7, 100), [7], "fewer due than N: one call");
        assert_eq!(calls(3, 0), [1, 1, 1], "never an empty call");
    }

    /// With `--enqueue-batch` the producer's calls go through the batch enqueue: every job is
    /// enqueued (and counted) once, in fewer calls than jobs, each of at most N.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bench_rate_enqueue_batch_enqueues_every_job_in_batches() {
        use kairos_store::prelude::*;
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = Arc::new(
            kairos_store_sqlite::SqliteStore::open(&dir.path().join("k.db"))
                .await
                .expect("open"),
        );
        let handler = Arc::new(NoopHandler::new(u64::MAX, None));
        let kinds = Arc::new(Kinds::builtin().with_handler("bench", handler));
        let kairos = Kairos::new(
            store.clone(),
            Arc::new(SystemClock),
            Arc::new(tokio::sync::Notify::new()),
            kinds,
        );
        let enqueued = Arc::new(AtomicU64::new(0));
        let done = produce(
            kairos,
            400,
            Duration::from_millis(500),
            Instant::now(),
            enqueued.clone(),
            30,
        )
        .await
        .expect("produce");
        assert_eq!(done.total, 200);
        assert_eq!(enqueued.load(Ordering::Relaxed), 200);
        assert!(
            done.calls >= 200 / 30 && done.calls < 200,
            "{} calls for 200 jobs in calls of at most 30",
            done.calls
        );
        let counts = store.job_count_by_state().await.expect("count");
        let available: i64 = counts
            .iter()
            .filter(|(s, _)| s == "available")
            .map(|(_, n)| *n)
            .sum();
        assert_eq!(available, 200, "{counts:?}");
    }

    #[test]
    fn bench_rate_sample_line_names_the_databases_cleanup_measure() {
        let s = Sample {
            t: 3,
            enqueued: 200,
            completed: 199,
            backlog: 1,
            claims: 4,
            claim_p50_ms: Some(0.5),
            claim_p99_ms: Some(1.25),
            lateness_p99_ms: None,
            dead_tuples: Some(12),
            wal_bytes: Some(4096),
            job_table_bytes: Some(65536),
        };
        let pg = s.to_json(true);
        assert_eq!(pg["dead_tuples"], 12, "{pg}");
        assert!(pg.get("wal_bytes").is_none(), "{pg}");
        assert!(pg["lateness_p99_ms"].is_null(), "{pg}");
        let lite = s.to_json(false);
        assert_eq!(lite["wal_bytes"], 4096, "{lite}");
        assert!(lite.get("dead_tuples").is_none(), "{lite}");
        assert_eq!(lite["job_table_bytes"], 65536, "{lite}");
        for f in [
            "t",
            "enqueued",
            "completed",
            "backlog",
            "claim_p50_ms",
            "claim_p99_ms",
        ] {
            assert!(lite.get(f).is_some(), "no {f} in {lite}");
        }
    }

    #[test]
    fn bench_rate_keep_sets_the_pruner_of_a_node_keeping_that_much() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let args = |extra: &[&str]| {
            Cli::parse_from(
                ["bench", "--rate", "800", "--duration", "15m"]
                    .iter()
                    .chain(extra),
            )
            .bench
        };
        let kept = rate_engine_config(&args(&["--keep", "5m"]));
        assert_eq!(kept.pruner.succeeded, Some(Duration::from_secs(300)));
        assert_eq!(kept.pruner.dead, Some(Duration::from_secs(300)));
        assert_eq!(kept.pruner.interval, Duration::from_secs(30));
        kept.pruner.validate().expect("a pruner a node could run");
        let two = rate_engine_config(&args(&["--keep", "2m"]));
        assert_eq!(two.pruner.interval, Duration::from_secs(12));
        let all = rate_engine_config(&args(&[]));
        assert_eq!(
            all.pruner.succeeded,
            kairos_engine::EngineConfig::default().pruner.succeeded,
            "without --keep the default"
        );
        // The bench's node has the claim cooldown a node on its database has by default.
        assert_eq!(all.executor.claim_cooldown, Duration::from_millis(1));
        let pg = rate_engine_config(&args(&["--database-url", "postgres://127.0.0.1/x"]));
        assert_eq!(pg.executor.claim_cooldown, Duration::from_millis(5));
    }

    #[test]
    fn bench_rate_warmup_defaults_to_the_kept_window() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let warm = |extra: &[&str]| {
            warmup(
                &Cli::parse_from(
                    ["bench", "--rate", "2000", "--duration", "10m"]
                        .iter()
                        .chain(extra),
                )
                .bench,
            )
        };
        assert_eq!(
            warm(&[]),
            Duration::ZERO,
            "no --keep: measured from the start"
        );
        assert_eq!(
            warm(&["--keep", "5m"]),
            Duration::from_secs(300),
            "the kept window fills before measuring"
        );
        assert_eq!(warm(&["--keep", "5m", "--warmup", "0s"]), Duration::ZERO);
        assert_eq!(warm(&["--warmup", "90s"]), Duration::from_secs(90));
    }

    #[test]
    fn bench_rate_plot_draws_each_quantity() {
        let samples: Vec<Sample> = (1..=5)
            .map(|t| Sample {
                wal_bytes: Some(t * 1_000_000),
                job_table_bytes: Some(t * 2_000_000),
                lateness_p99_ms: Some(2.0),
                ..second(t, 200, 200)
            })
            .collect();
        let svg = plot("run <1>", &samples, false);
        assert!(svg.contains("run &lt;1&gt;"), "{svg}");
        // enqueued, completed, backlog, lateness, claims, WAL, job tables.
        assert_eq!(svg.matches("<polyline").count(), 7, "{svg}");
        assert!(svg.contains("WAL size (MB)"), "{svg}");
        assert!(svg.contains("job tables (MB)"), "{svg}");
    }

    /// While a holder runs, PostgreSQL shows a session named kairos-bench-hold whose
    /// `backend_xmin` is set (it holds back cleanup); it starts again after each hold and
    /// stops when released.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bench_hold_snapshots_session_holds_backend_xmin_on_postgres() {
        let url = kairos_testkit::pg::database_url();
        if !kairos_testkit::pg::reachable(&url, "The bench holder test").await {
            return;
        }
        let release = CancellationToken::new();
        let holder = tokio::spawn(hold_snapshots(
            url.clone(),
            Duration::ZERO,
            Duration::from_secs(1),
            release.clone(),
        ));
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        let held = "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'kairos-bench-hold' AND backend_xmin IS NOT NULL";
        let mut seen = 0i64;
        // Through more than one hold (1 s each): the holder starts again after committing.
        for _ in 0..60 {
            let n: i64 = sqlx::query_scalar(held)
                .fetch_one(&mut conn)
                .await
                .expect("pg_stat_activity");
            seen = seen.max(n);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            seen >= 1,
            "no kairos-bench-hold session with a backend_xmin"
        );
        release.cancel();
        let cycles = tokio::time::timeout(Duration::from_secs(10), holder)
            .await
            .expect("the holder stops when released")
            .expect("join")
            .expect("the holder ran without error");
        assert!(cycles >= 2, "held {cycles} snapshots in 3 s of 1 s holds");
    }
}
