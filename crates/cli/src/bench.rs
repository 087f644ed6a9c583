//! `kairos bench`: enqueue and process N no-op jobs on a fresh SQLite database in a temp dir,
//! end to end through the real engine (claims, leases, group-committed completions).
//!
//! Phase 1 (throughput): N jobs due now, optionally behind a `--backlog` of jobs due in a year
//! (which the claim query must not scan); measures enqueue and processing rates.
//! Phase 2 (lateness): jobs spread over two seconds into the future at a rate the engine can
//! keep up with; measures how late each starts after its `run_at` (p50/p99).
//! With `--webhook` every job is a signed webhook delivered to a receiver in this process that
//! verifies each signature (see [`crate::bench_webhook`]).
//! The last line on stdout is one JSON object.
//!
//! With `--rate R --duration D` it is a steady-rate run instead (see [`crate::bench_rate`]):
//! R jobs per second enqueued by the bench's own producer while the same node runs them.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, Job, JobKind, Outcome, RetryPolicy, SystemClock};
use kairos_engine::executor::ExecutorConfig;
use kairos_engine::{Engine, EngineConfig, Handler, JobContext, Kinds};
use kairos_store::{JobInsert, Store};
use kairos_store_sqlite::SqliteStore;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Options of `kairos bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Jobs to enqueue and process.
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Extra jobs due in a year, queued behind the work (shows the claim does not scan them).
    #[arg(long, default_value_t = 0)]
    pub backlog: usize,
    /// Jobs running at once.
    #[arg(long, default_value_t = 500)]
    pub concurrency: usize,
    /// Jobs in the lateness phase (default: a tenth of --jobs, 100 to 5,000).
    #[arg(long)]
    pub lateness_jobs: Option<usize>,
    /// Database directory to use instead of a fresh temp dir (must be empty).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Benchmark PostgreSQL instead (`postgres://…`): a fresh schema `kairos_bench_<random>` is
    /// created and dropped at the end.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Benchmark email instead: `file` (the .eml outbox) or an SMTP server's `smtp://` URL;
    /// --jobs recipients get one mail each through the real `email` handler.
    #[arg(long)]
    pub email: Option<String>,
    /// Benchmark signed webhook deliveries instead of no-op jobs: every job is a real `webhook`
    /// job sent to a receiver on 127.0.0.1 in this process, which verifies every signature
    /// (adds `deliveries_per_sec` and `verified` to the result).
    #[arg(long)]
    pub webhook: bool,
    /// Steady rate instead of a burst: the bench's own producer enqueues this many jobs per
    /// second, spread evenly, through the API's enqueue path while the node runs them, for
    /// --duration; then the queue drains. With --json: one line per second (`t`, `enqueued`,
    /// `completed`, `backlog`, `claim_p50_ms`, `claim_p99_ms`, `lateness_p99_ms`, and
    /// `dead_tuples` on PostgreSQL or `wal_bytes` on SQLite) before the summary line.
    #[arg(long, value_name = "JOBS_PER_SEC")]
    pub rate: Option<u64>,
    /// How long a --rate run enqueues: `30s`, `15m` (at most `7d`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_flag)]
    pub duration: Option<Duration>,
    /// With --rate on PostgreSQL: open this many sessions (application_name
    /// `kairos-bench-hold`) that each hold a REPEATABLE READ snapshot for --hold-secs,
    /// scanning pg_class every half second, then commit and start again, for the whole run.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub hold_snapshots: usize,
    /// How long each --hold-snapshots session holds its snapshot, in seconds.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub hold_secs: u64,
    /// Seconds between the starts of the --hold-snapshots sessions.
    #[arg(long, default_value_t = 20, value_name = "SECS")]
    pub hold_stagger: u64,
    /// With --rate: the pruner keeps this long of finished jobs (`5m`; at least `1m`), as a
    /// node whose KAIROS_RETENTION_SUCCEEDED and KAIROS_RETENTION_DEAD say so, pruning every
    /// tenth of it (at most every 30 s). Without it every finished job is kept.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_flag)]
    pub keep: Option<Duration>,
    /// With --rate: run at the rate this long before the measured --duration starts, so that
    /// the measured run sees the node in its steady state (the kept finished jobs already in
    /// the tables). No lines are printed and nothing is counted during it. Default: --keep's
    /// value when --keep is given, else none; `0s` measures from an empty queue.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_flag)]
    pub warmup: Option<Duration>,
    /// With --rate: the producer enqueues each tick's due jobs through the batch enqueue
    /// (`POST /v1/jobs/batch`'s `job_enqueue_many`) in calls of at most N jobs (1 to 1,000),
    /// still at most 64 calls in flight. 1, the default: one `job_enqueue` per job.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub enqueue_batch: usize,
    /// With --rate: draw the per-second samples (throughput, backlog, lateness, dead tuples
    /// or WAL size) over time into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Give every job a concurrency key: job n gets `{"key": "k{n mod N}", "max": --key-max}`,
    /// so that N keys share the work (1,000 keys of max 1 against no keys measures what keys
    /// cost). Adds `concurrency_keys`, `key_max` and `key_waits` (jobs put back for their key)
    /// to the result.
    #[arg(long, value_name = "N")]
    pub concurrency_keys: Option<u32>,
    /// With --concurrency-keys: how many jobs of one key run at once (default 1).
    #[arg(long, value_name = "M")]
    pub key_max: Option<u32>,
}

/// The concurrency key of the bench's `n`-th job (`--concurrency-keys`, `--key-max`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BenchKeys {
    /// Distinct keys.
    pub(crate) keys: u32,
    /// Each key's `max`.
    pub(crate) max: u32,
}

impl BenchKeys {
    fn of(a: &BenchArgs) -> Option<BenchKeys> {
        a.concurrency_keys.map(|keys| BenchKeys {
            keys,
            max: a.key_max.unwrap_or(1),
        })
    }

    fn key(&self, n: u64) -> kairos_core::Concurrency {
        kairos_core::Concurrency {
            key: format!("k{}", n % u64::from(self.keys.max(1))),
            max: self.max,
        }
    }
}

fn parse_duration_flag(s: &str) -> Result<Duration, String> {
    kairos_core::retry::parse_duration("--duration", s).map_err(|e| e.reason().to_string())
}

/// The longest `--duration` or warm-up of a steady run: longer is not a benchmark, and
/// instants that far ahead overflow the clock.
const MAX_RATE_RUN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Flags that do not go together, refused before anything is opened.
pub fn check(a: &BenchArgs) -> crate::common::CliResult {
    use crate::common::CliError;
    match (a.rate, a.duration) {
        (Some(0), _) => {
            return Err(CliError::usage(
                "--rate",
                "must be at least 1 job per second",
            ));
        }
        (Some(_), None) => {
            return Err(CliError::usage(
                "--duration",
                "is needed with --rate (like 30s or 15m)",
            ));
        }
        (None, Some(_)) => return Err(CliError::usage("--duration", "only with --rate")),
        (Some(_), Some(d)) if d < Duration::from_secs(1) => {
            return Err(CliError::usage("--duration", "must be at least 1s"));
        }
        (Some(_), Some(d)) if d > MAX_RATE_RUN => {
            return Err(CliError::usage(
                "--duration",
                "must be at most 7d (a benchmark run)",
            ));
        }
        _ => {}
    }
    if a.rate.is_some() && crate::bench_rate::warmup(a) > MAX_RATE_RUN {
        return Err(CliError::usage(
            "--warmup",
            "must be at most 7d (without --warmup the warm-up is --keep's value: give \
             --warmup to choose a shorter one, or 0s for none)",
        ));
    }
    match (a.concurrency_keys, a.key_max) {
        (None, Some(_)) => {
            return Err(CliError::usage("--key-max", "only with --concurrency-keys"));
        }
        (Some(0), _) => {
            return Err(CliError::usage(
                "--concurrency-keys",
                "must be at least 1 key",
            ));
        }
        (_, Some(m)) if !(1..=kairos_core::concurrency::MAX_CONCURRENCY).contains(&m) => {
            return Err(CliError::usage(
                "--key-max",
                format!("must be 1 to {}", kairos_core::concurrency::MAX_CONCURRENCY),
            ));
        }
        (Some(_), _) if a.rate.is_some() || a.email.is_some() => {
            return Err(CliError::usage(
                "--concurrency-keys",
                "only with a burst of no-op or --webhook jobs (not with --rate or --email)",
            ));
        }
        _ => {}
    }
    if !(1..=kairos_engine::ops::MAX_ENQUEUE_BATCH).contains(&a.enqueue_batch) {
        return Err(CliError::usage(
            "--enqueue-batch",
            format!(
                "must be 1 to {} jobs per call",
                kairos_engine::ops::MAX_ENQUEUE_BATCH
            ),
        ));
    }
    if a.rate.is_none() {
        if a.enqueue_batch > 1 {
            return Err(CliError::usage(
                "--enqueue-batch",
                "only with --rate and --duration (a steady-rate run)",
            ));
        }
        if a.hold_snapshots > 0 {
            return Err(CliError::usage(
                "--hold-snapshots",
                "only with --rate and --duration (a steady-rate run)",
            ));
        }
        if a.plot.is_some() {
            return Err(CliError::usage(
                "--plot",
                "only with --rate and --duration (a steady-rate run)",
            ));
        }
        if a.keep.is_some() {
            return Err(CliError::usage(
                "--keep",
                "only with --rate and --duration (a steady-rate run)",
            ));
        }
        if a.warmup.is_some() {
            return Err(CliError::usage(
                "--warmup",
                "only with --rate and --duration (a steady-rate run)",
            ));
        }
        return Ok(());
    }
    for (flag, given) in [
        ("--email", a.email.is_some()),
        ("--webhook", a.webhook),
        ("--backlog", a.backlog > 0),
        ("--lateness-jobs", a.lateness_jobs.is_some()),
    ] {
        if given {
            return Err(CliError::usage(
                flag,
                "not with --rate (a burst-only option)",
            ));
        }
    }
    if a.keep.is_some_and(|k| k < Duration::from_secs(60)) {
        return Err(CliError::usage(
            "--keep",
            "must be at least 1m (the pruner keeps finished jobs at least a minute)",
        ));
    }
    if a.hold_snapshots > 0 {
        if a.database_url.is_none() {
            return Err(CliError::usage(
                "--hold-snapshots",
                "holds PostgreSQL snapshots and needs --database-url postgres://…; SQLite has \
                 none to hold (a steady SQLite run shows its WAL's size instead)",
            ));
        }
        if a.hold_secs == 0 {
            return Err(CliError::usage("--hold-secs", "must be at least 1"));
        }
    }
    Ok(())
}

/// The store under test and how to clean it up.
pub(crate) enum BenchDb {
    Sqlite(Arc<SqliteStore>, std::path::PathBuf),
    Postgres(Arc<kairos_store_postgres::PostgresStore>, String),
}

impl BenchDb {
    pub(crate) fn store(&self) -> Arc<dyn Store> {
        match self {
            BenchDb::Sqlite(s, _) => s.shared(),
            BenchDb::Postgres(s, _) => s.shared(),
        }
    }
    pub(crate) fn name(&self) -> &'static str {
        match self {
            BenchDb::Sqlite(..) => "sqlite",
            BenchDb::Postgres(..) => "postgres",
        }
    }
    /// What reads the size of the job tables during a run.
    pub(crate) fn size_probe(&self) -> SizeProbe {
        match self {
            BenchDb::Sqlite(_, file) => SizeProbe::File(file.clone()),
            BenchDb::Postgres(s, _) => SizeProbe::Postgres(s.pool().clone()),
        }
    }
    pub(crate) async fn close(self) {
        match self {
            BenchDb::Sqlite(s, _) => s.close().await,
            BenchDb::Postgres(s, schema) => {
                // The schema name is generated below from hex digits only.
                let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
                if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(drop))
                    .execute(s.pool())
                    .await
                {
                    eprintln!("warning: could not drop the bench schema {schema}: {e}");
                }
                s.close().await;
            }
        }
    }
}

/// Reads the bytes the job tables take: `jobs` and `job_attempts` with their indexes and
/// TOAST on PostgreSQL, the database file on SQLite (pages freed by deletes are reused, so a
/// file that stops growing means the tables do).
#[derive(Clone)]
pub(crate) enum SizeProbe {
    File(std::path::PathBuf),
    Postgres(sqlx::PgPool),
}

impl SizeProbe {
    /// The size now; `None` when it cannot be read.
    pub(crate) async fn read(&self) -> Option<u64> {
        match self {
            SizeProbe::File(file) => std::fs::metadata(file).ok().map(|m| m.len()),
            SizeProbe::Postgres(pool) => sqlx::query_scalar::<_, i64>(
                "SELECT pg_total_relation_size('jobs') + pg_total_relation_size('job_attempts')",
            )
            .fetch_one(pool)
            .await
            .ok()
            .map(|b| b.max(0) as u64),
        }
    }
}

/// Records how late each job started and counts the jobs it saw; runs `inner` (the real
/// webhook handler with `--webhook`) or does nothing.
pub(crate) struct NoopHandler {
    pub(crate) lateness_ms: Mutex<Vec<f64>>,
    handled: AtomicU64,
    /// The phase's target: the handler that brings `handled` to it (or fails) wakes `reached`.
    pub(crate) target: AtomicU64,
    reached: Notify,
    inner: Option<Arc<dyn Handler>>,
    /// The first failed outcome of `inner`: the bench stops on it rather than wait for retries.
    failure: Mutex<Option<String>>,
}

impl NoopHandler {
    /// A handler that wakes the wait at `target` jobs, running `inner` if given.
    pub(crate) fn new(target: u64, inner: Option<Arc<dyn Handler>>) -> Self {
        NoopHandler {
            lateness_ms: Mutex::new(Vec::new()),
            handled: AtomicU64::new(0),
            target: AtomicU64::new(target),
            reached: Notify::new(),
            inner,
            failure: Mutex::new(None),
        }
    }
}

/// The node both benches run: the real engine with `concurrency` handler slots, and the claim
/// cooldown a node on that database has by default.
pub(crate) fn engine_config(concurrency: usize, postgres: bool) -> EngineConfig {
    let cooldown = kairos_app::config::default_claim_cooldown_ms(postgres);
    EngineConfig {
        executor: ExecutorConfig {
            concurrency,
            max_batch: 1000,
            poll_interval: Duration::from_millis(50),
            claim_cooldown: Duration::from_millis(cooldown),
            ..Default::default()
        },
        ..Default::default()
    }
    .with_node("bench")
}

#[async_trait]
impl Handler for NoopHandler {
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let late = (ctx.now - job.run_at).num_microseconds().unwrap_or(0) as f64 / 1000.0;
        self.lateness_ms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(late);
        let outcome = match &self.inner {
            Some(h) => h.handle(job, ctx).await,
            None => Outcome::ok(),
        };
        if let Outcome::Failed(f) = &outcome {
            self.failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(|| crate::bench_webhook::describe(f));
            self.reached.notify_one();
        }
        let handled = self.handled.fetch_add(1, Ordering::Relaxed) + 1;
        if handled == self.target.load(Ordering::Relaxed) {
            self.reached.notify_one();
        }
        outcome
    }

    fn timeout(&self) -> Duration {
        self.inner
            .as_ref()
            .map_or(Duration::from_secs(10), |h| h.timeout())
    }
}

/// A job due at `run_at`: a no-op `bench` job, or a `webhook` job to `endpoint`; the `n`-th
/// of the run, with its key when the run has `keys`.
fn job(
    now: DateTime<Utc>,
    run_at: DateTime<Utc>,
    endpoint: Option<&str>,
    (n, keys): (u64, Option<BenchKeys>),
) -> JobInsert {
    JobInsert {
        id: new_id(IdPrefix::Job, now),
        kind: JobKind(
            if endpoint.is_some() {
                "webhook"
            } else {
                "bench"
            }
            .into(),
        ),
        payload: serde_json::json!({"n": 1}),
        endpoint_id: endpoint.map(str::to_string),
        schedule_id: None,
        fire_at: None,
        period_key: None,
        channel: None,
        dedupe_key: None,
        retry: RetryPolicy::notification(),
        // `bench` is a kind nobody else registers, and `webhook`'s default is this policy too.
        audience: Default::default(),
        retry_is_kind_default: true,
        run_at,
        now,
        concurrency: keys.map(|k| k.key(n)),
        http_origin: None,
    }
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Wait until `target` jobs are handled and every outcome is committed, with a progress bar;
/// bounded by `limit`. Then check, outside the timed wait, that `target` jobs succeeded.
///
/// The handler that brings the count to `target` wakes this wait (as graphile_worker's bench
/// is woken by its last job). Then the wait watches `committed`, the outcomes the store
/// wrapper ([`TimedStore`](crate::bench_timed::TimedStore)) counted once their batch's commit
/// returned, every millisecond; a job handled but not yet committed keeps it going. The wait
/// used to ask the database whether any job was still due or running, which reads the due and
/// lease indexes: small in a clean run, but while another session holds a snapshot they keep
/// an entry for every job claimed since, and each poll took 200 ms at the end of a
/// 300,000-job run, 0.4 s of a 7 s measurement (`docs/benchmarks.md`). Counting every
/// finished row by state took a scan of the whole phase each time, and a poll of the handler's
/// counter every 20 ms stopped the clock up to 20 ms late: 2-6 % of a 20,000-job run at
/// 40,000 jobs/s.
pub(crate) async fn wait_done(
    store: &dyn Store,
    committed: &AtomicU64,
    since: DateTime<Utc>,
    handler: &NoopHandler,
    (target, bar, limit): (i64, &ProgressBar, Duration),
) -> Result<Duration, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let failed = || {
        handler
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    };
    loop {
        if let Some(f) = failed() {
            return Err(format!("a job failed: {f}").into());
        }
        let handled = handler.handled.load(Ordering::Relaxed) as i64;
        bar.set_position(handled.max(0) as u64);
        if handled >= target {
            break;
        }
        if start.elapsed() > limit {
            return Err(format!("only {handled} of {target} jobs ran within {limit:?}").into());
        }
        tokio::select! {
            _ = handler.reached.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    let target_u = u64::try_from(target).unwrap_or(0);
    loop {
        let done = committed.load(Ordering::Relaxed);
        if done >= target_u {
            break;
        }
        if start.elapsed() > limit {
            return Err(
                format!("only {done} of {target} outcomes committed after {limit:?}").into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = start.elapsed();
    let n = crate::bench_timed::succeeded(store, since).await?;
    if n < target {
        return Err(format!("only {n} of {target} jobs succeeded").into());
    }
    Ok(took)
}

/// Run the benchmark.
pub async fn run(args: BenchArgs, json: bool) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(t) = &args.email {
        return crate::bench_email::run(args.jobs, args.concurrency, t).await;
    }
    if args.jobs == 0 && args.rate.is_none() {
        return Err("--jobs: must be at least 1".into());
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let db =
        match &args.database_url {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                let schema = format!("kairos_bench_{}", uuid::Uuid::new_v4().simple());
                let pg = kairos_store_postgres::PostgresStore::connect(url, &schema).await?;
                // As a node does when it is built (`kairos_app::node`).
                pg.warm_hot_path().await?;
                BenchDb::Postgres(Arc::new(pg), schema)
            }
            Some(_) => return Err(
                "--database-url: must be a postgres:// URL (SQLite runs in a temp dir by default)"
                    .into(),
            ),
            None => {
                let file = dir.join("kairos.db");
                BenchDb::Sqlite(Arc::new(SqliteStore::open(&file).await?), file)
            }
        };
    if args.rate.is_some() {
        return crate::bench_rate::run(&args, json, db).await;
    }
    // The store wrapped to count the outcomes it commits: the finish line (`wait_done`).
    let timed = crate::bench_timed::TimedStore::new(db.store());
    let store: Arc<dyn Store> = timed.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let hook = if args.webhook {
        Some(crate::bench_webhook::Hook::start(store.clone(), clock.clone()).await?)
    } else {
        None
    };
    let endpoint = hook.as_ref().map(|h| h.endpoint_id.clone());
    let endpoint = endpoint.as_deref();
    let keys = BenchKeys::of(&args);
    let mut seq = 0u64;
    let mut next = || {
        seq += 1;
        (seq, keys)
    };
    let handler = Arc::new(NoopHandler::new(
        args.jobs as u64,
        hook.as_ref().map(|h| h.handler.clone()),
    ));
    let kinds = Arc::new(Kinds::builtin().with_handler(
        if hook.is_some() { "webhook" } else { "bench" },
        handler.clone(),
    ));
    let engine = Engine::new(
        engine_config(args.concurrency, args.database_url.is_some()),
        store.clone(),
        clock.clone(),
        kinds.clone(),
    )?;
    let style = ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} {per_sec}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");

    // Every job of the benchmark finishes after this instant (a second of margin).
    let started = clock.now() - chrono::Duration::seconds(1);
    // Backlog far in the future: it sits in the queue and must cost the claim nothing. It is
    // standing state, so it is written as a queue accumulates one, in transactions of 5,000
    // rather than one of a million, whose WAL the checkpoints were still copying back while
    // phase 1 ran (docs/benchmarks-history.md: SQLite went from 13,464 to about 20,000 jobs/s
    // here).
    let now = clock.now();
    if args.backlog > 0 {
        let far = now + chrono::Duration::days(365);
        let bar = ProgressBar::new(args.backlog as u64)
            .with_style(style.clone())
            .with_message("backlog");
        let mut left = args.backlog;
        while left > 0 {
            let n = left.min(5_000);
            store
                .job_insert_many((0..n).map(|_| job(now, far, endpoint, next())).collect())
                .await?;
            left -= n;
            bar.inc(n as u64);
        }
        bar.finish_and_clear();
        // A standing backlog has long been copied from the WAL into the database file; a
        // fresh one's WAL would still be checkpointed (hundreds of MB) while phase 1 runs.
        if let BenchDb::Sqlite(s, _) = &db {
            s.checkpoint().await?;
        }
    }

    // Phase 1: enqueue N due jobs, then process them.
    let bar = ProgressBar::new(args.jobs as u64)
        .with_style(style.clone())
        .with_message("enqueue");
    let t = Instant::now();
    for chunk in (0..args.jobs).collect::<Vec<_>>().chunks(5_000) {
        let now = clock.now();
        store
            .job_insert_many(
                chunk
                    .iter()
                    .map(|_| job(now, now, endpoint, next()))
                    .collect(),
            )
            .await?;
        bar.inc(chunk.len() as u64);
    }
    let enqueue_secs = t.elapsed().as_secs_f64();
    bar.finish_and_clear();

    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let bar = ProgressBar::new(args.jobs as u64)
        .with_style(style.clone())
        .with_message("process");
    let process_secs = wait_done(
        store.as_ref(),
        &timed.completed,
        started,
        &handler,
        (args.jobs as i64, &bar, Duration::from_secs(1800)),
    )
    .await?
    .as_secs_f64();
    bar.finish_and_clear();
    // Every phase-1 delivery reached the receiver before its job's outcome was committed.
    let verified = hook
        .as_ref()
        .map(|h| h.counts.verified.load(Ordering::Relaxed));

    // Phase 2: lateness. Jobs due over the next two seconds, starting 200 ms from now.
    handler
        .lateness_ms
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    let late_n = args
        .lateness_jobs
        .unwrap_or((args.jobs / 10).clamp(100, 5_000));
    let now = clock.now();
    let spread: Vec<_> = (0..late_n)
        .map(|i| {
            let offset = 200 + (2_000 * i / late_n.max(1)) as i64;
            job(
                now,
                now + chrono::Duration::milliseconds(offset),
                endpoint,
                next(),
            )
        })
        .collect();
    handler
        .target
        .store((args.jobs + late_n) as u64, Ordering::Relaxed);
    store.job_insert_many(spread).await?;
    engine.wake().notify_one();
    let bar = ProgressBar::new(late_n as u64)
        .with_style(style)
        .with_message("lateness");
    wait_done(
        store.as_ref(),
        &timed.completed,
        started,
        &handler,
        ((args.jobs + late_n) as i64, &bar, Duration::from_secs(600)),
    )
    .await?;
    bar.finish_and_clear();
    cancel.cancel();
    let _ = run.await;

    let mut late = handler
        .lateness_ms
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    late.sort_by(|a, b| a.total_cmp(b));
    let early = late.iter().filter(|l| **l < 0.0).count();
    let mut result = serde_json::json!({
        "jobs": args.jobs,
        "backlog": args.backlog,
        "concurrency": args.concurrency,
        "database": db.name(),
        "enqueue_per_sec": (args.jobs as f64 / enqueue_secs).round(),
        "process_per_sec": (args.jobs as f64 / process_secs).round(),
        "p50_lateness_ms": (percentile(&late, 0.50) * 100.0).round() / 100.0,
        "p99_lateness_ms": (percentile(&late, 0.99) * 100.0).round() / 100.0,
        "started_early": early,
    });
    if let Some(k) = keys {
        let waits = store.job_waiting().await?;
        result["concurrency_keys"] = k.keys.into();
        result["key_max"] = k.max.into();
        result["key_waits"] = waits
            .iter()
            .find(|w| w.reason == kairos_store::concurrency::WAIT_CONCURRENCY_KEY)
            .map_or(0, |w| w.waits_total)
            .into();
    }
    if let (Some(hook), Some(verified)) = (hook, verified) {
        result["deliveries_per_sec"] = (verified as f64 / process_secs).round().into();
        result["verified"] = verified.into();
        result["rejected"] = hook.counts.rejected.load(Ordering::Relaxed).into();
        hook.stop().await;
    }
    drop(engine);
    drop(store);
    db.close().await;
    println!("{result}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_engine::executor::completion_for;
    use kairos_store::JobClaim;

    fn handler(target: u64) -> NoopHandler {
        NoopHandler {
            lateness_ms: Mutex::new(Vec::new()),
            handled: AtomicU64::new(target),
            target: AtomicU64::new(target),
            reached: Notify::new(),
            inner: None,
            failure: Mutex::new(None),
        }
    }

    /// A store on a real SQLite file in a temp dir (kept alive by the returned guard).
    async fn scratch() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("kairos.db"))
            .await
            .unwrap();
        (dir, store)
    }

    /// The bench's clock stops when every outcome is committed, not when the handlers have
    /// returned: a job handled but still running in the database keeps the wait going, and
    /// the wait ends once its outcome is committed through the counting wrapper.
    #[tokio::test]
    async fn bench_clock_stops_only_once_every_outcome_is_committed() {
        let (_dir, sqlite) = scratch().await;
        let timed = crate::bench_timed::TimedStore::new(sqlite.shared());
        let store: &dyn Store = timed.as_ref();
        let clock = SystemClock;
        let now = clock.now();
        let since = now - chrono::Duration::seconds(1);
        store
            .job_insert_many(vec![job(now, now, None, (0, None))])
            .await
            .unwrap();
        let claimed = store
            .job_claim(JobClaim {
                now,
                limit: 10,
                node: "bench".into(),
                lease_token: "lease".into(),
                lease_until: now + chrono::Duration::seconds(60),
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let h = handler(1);
        let bar = ProgressBar::hidden();
        let err = wait_done(
            store,
            &timed.completed,
            since,
            &h,
            (1, &bar, Duration::from_millis(50)),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("only 0 of 1 outcomes committed"),
            "{err}"
        );

        let done = completion_for(
            &kairos_engine::kinds::Plain,
            &claimed[0],
            Outcome::ok(),
            now,
            clock.now(),
            "bench",
            0.0,
        );
        store.job_complete_many(vec![done]).await.unwrap();
        let took = wait_done(
            store,
            &timed.completed,
            since,
            &h,
            (1, &bar, Duration::from_secs(5)),
        )
        .await
        .unwrap();
        assert!(took < Duration::from_secs(5));
        sqlite.close().await;
    }

    /// Handled jobs that did not succeed fail the run after the clock has stopped: the wait
    /// checks the succeeded count rather than trusting the handler's counter.
    #[tokio::test]
    async fn bench_fails_when_fewer_jobs_succeeded_than_it_ran() {
        let (_dir, store) = scratch().await;
        let clock = SystemClock;
        let since = clock.now() - chrono::Duration::seconds(1);
        let h = handler(3);
        let bar = ProgressBar::hidden();
        // The count says three were committed; the database holds none.
        let committed = AtomicU64::new(3);
        let err = wait_done(
            &store,
            &committed,
            since,
            &h,
            (3, &bar, Duration::from_secs(5)),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("only 0 of 3 jobs succeeded"),
            "{err}"
        );
        store.close().await;
    }
}
