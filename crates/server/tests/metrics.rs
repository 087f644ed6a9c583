//! `/metrics` scraped over HTTP and parsed with a Prometheus text-format parser
//! (`prometheus-parse`): the gauges match the store, the counters match the attempts the
//! executor recorded; `/v1/slo`, `/healthz` and `/readyz` next to it.
//!
//! One test in this binary touches the process-wide metrics recorder (the attempt counters):
//! the others only read the database gauges, so they cannot disturb its numbers.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use kairos_core::{Clock, ManualClock};
use kairos_engine::KindSettings;
use kairos_engine::handlers::builtin;
use kairos_engine::ops::{NewJob, NewSchedule, WebhookTarget};
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::job_counts::{CountPolicy, JobCounts};
use kairos_server::{ApiToken, AppState, app};
use kairos_store::{JobBacklog, Store};
use kairos_store_sqlite::SqliteStore;
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use prometheus_parse::{Sample, Scrape, Value};
use std::sync::Arc;
use tempfile::TempDir;

#[path = "common/unreadable.rs"]
mod unreadable;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
/// A webhook URL the tests' jobs never reach (they are due later, or cancelled).
const UNREACHED: &str = "http://127.0.0.1:9/hook";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

struct Node {
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    store: Arc<dyn Store>,
    engine: Engine,
    kairos: Kairos,
    dir: TempDir,
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T09:00:00Z")
        .expect("instant")
        .to_utc()
}

async fn start() -> Node {
    start_with(kairos_engine::maintenance::Maintenance::default()).await
}

async fn start_with(maintenance: kairos_engine::maintenance::Maintenance) -> Node {
    start_counting(maintenance, CountPolicy::default()).await
}

async fn start_counting(
    maintenance: kairos_engine::maintenance::Maintenance,
    counts: CountPolicy,
) -> Node {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("kairos.db"))
            .await
            .expect("open store"),
    );
    let clock = Arc::new(ManualClock::new(t0()));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let webhook = kairos_channels::WebhookConfig {
        allow_private_targets: true,
        ..Default::default()
    };
    let registry = builtin(KindSettings::new(store.clone(), dyn_clock.clone(), webhook))
        .expect("built-in kinds");
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        dyn_clock.clone(),
        kinds.clone(),
    )
    .expect("engine");
    let kairos = Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds)
        .allow_private_targets(true)
        .with_maintenance(maintenance);
    let mut state = AppState::new(kairos.clone(), ApiToken::new(TOKEN));
    state.job_counts = Arc::new(JobCounts::new(counts));
    let router = app(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Node {
        base,
        http: reqwest::Client::new(),
        clock,
        store,
        engine,
        kairos,
        dir,
    }
}

impl Node {
    async fn scrape(&self) -> Scrape {
        let res = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(res.status(), 200);
        let ct = res.headers()["content-type"].to_str().unwrap_or_default();
        assert!(ct.starts_with("text/plain"), "{ct}");
        let text = res.text().await.expect("body");
        Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
    }

    /// A webhook job due in an hour, cancelled: a finished (retained) job, no attempt.
    async fn cancelled_job(&self) {
        let id = self.webhook_job(UNREACHED, t0() + Duration::hours(1)).await;
        self.kairos.job_cancel(&id, None).await.expect("cancel");
    }

    async fn webhook_job(&self, url: &str, run_at: DateTime<Utc>) -> String {
        self.kairos
            .job_enqueue(NewJob {
                kind: Some("webhook".into()),
                webhook: Some(WebhookTarget {
                    url: url.into(),
                    secret: SECRET.into(),
                }),
                run_at: Some(run_at.to_rfc3339_opts(SecondsFormat::Millis, true)),
                ..Default::default()
            })
            .await
            .expect("enqueue")
            .0
            .id
    }
}

fn samples<'a>(s: &'a Scrape, metric: &str) -> Vec<&'a Sample> {
    s.samples.iter().filter(|x| x.metric == metric).collect()
}

fn one(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = samples(s, metric)
        .into_iter()
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match &found[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(buckets) => buckets
            .iter()
            .find(|b| b.less_than.is_infinite())
            .map(|b| b.count)
            .unwrap_or_else(|| panic!("{metric}: no +Inf bucket")),
        other => panic!("{metric}: unexpected {other:?}"),
    }
}

/// The scrape agrees with the store: `kairos_jobs{state,kind}`, queue depth and oldest due
/// age; the attempt counter and lateness histogram agree with the recorded attempts;
/// `kairos_slo_warning{check}` follows the monitor's alert state.
#[tokio::test]
async fn metrics_scrape_parses_and_matches_the_store() {
    let node = start().await;
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::ok(), Reply::status(503)]);
    let url = rx.url("/hook");
    node.webhook_job(&url, t0()).await;
    node.webhook_job(&url, t0()).await;
    node.webhook_job(&url, t0() + Duration::hours(1)).await;
    let run = node.engine.executor().run_once(t0()).await.expect("run");
    assert_eq!((run.succeeded, run.retried), (1, 1), "{run:?}");

    let now = t0() + Duration::minutes(90);
    node.clock.set(now);
    let m = node.scrape().await;

    // One kind here: a sample per state, each the store's count of that state.
    let counts = node.store.job_count_by_state().await.expect("counts");
    assert_eq!(samples(&m, "kairos_jobs").len(), counts.len());
    for (state, n) in &counts {
        let v = one(&m, "kairos_jobs", &[("state", state), ("kind", "webhook")]);
        assert_eq!(v, *n as f64, "{state}");
    }
    assert_eq!(one(&m, "kairos_jobs", &[("state", "available")]), 2.0);
    let b = node
        .store
        .job_backlog(JobBacklog {
            now,
            stuck_before: now,
            lease_expired_before: now,
        })
        .await
        .expect("backlog");
    assert_eq!(b.due, 2);
    assert_eq!(one(&m, "kairos_queue_depth", &[]), b.due as f64);
    let oldest = b.oldest_due_at.expect("a due job");
    let age = (now - oldest).num_milliseconds() as f64 / 1e3;
    assert_eq!(one(&m, "kairos_oldest_due_age_seconds", &[]), age);

    let ok = [
        ("outcome", "succeeded"),
        ("class", "none"),
        ("kind", "webhook"),
    ];
    let failed = [
        ("outcome", "failed"),
        ("class", "transient"),
        ("kind", "webhook"),
    ];
    assert_eq!(one(&m, "kairos_attempts_total", &ok), 1.0);
    assert_eq!(one(&m, "kairos_attempts_total", &failed), 1.0);
    let lateness = one(&m, "kairos_job_lateness_seconds", &[("kind", "webhook")]);
    assert_eq!(lateness, 2.0, "one observation per attempt");
    for check in [
        "failure_rate",
        "stuck_due",
        "lease_expired",
        "missed_firings",
    ] {
        assert_eq!(
            one(&m, "kairos_slo_warning", &[("check", check)]),
            0.0,
            "{check}"
        );
    }
    assert_eq!(one(&m, "kairos_store_up", &[]), 1.0);

    // Two hours after they were due, the jobs are stuck: the monitor warns, and the gauge
    // says so.
    let later = t0() + Duration::hours(2);
    let r = node
        .engine
        .monitor()
        .run_once(later)
        .await
        .expect("monitor");
    assert_eq!(r.alerts.raised, vec!["stuck_due".to_string()]);
    let m = node.scrape().await;
    assert_eq!(
        one(&m, "kairos_slo_warning", &[("check", "stuck_due")]),
        1.0
    );
    assert_eq!(
        one(&m, "kairos_slo_warning", &[("check", "failure_rate")]),
        0.0
    );

    // The scheduler's counters: an hourly schedule whose scheduler was away for three hours
    // fires once (the on-time firing) and drops three missed ones (misfire policy `skip`).
    node.clock.set(t0() + Duration::minutes(150));
    let req: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "hourly",
        "cron": "0 * * * *",
        "kind": "webhook",
        "webhook": {"url": url, "secret": SECRET},
        "misfire": "skip",
    }))
    .expect("schedule body");
    let s = node.kairos.schedule_create(req).await.expect("schedule");
    assert_eq!(s.next_fire_at, Some(t0() + Duration::hours(3)));
    let tick = node
        .engine
        .scheduler()
        .run_once(t0() + Duration::hours(6) + Duration::seconds(10))
        .await
        .expect("tick");
    assert_eq!((tick.fired, tick.misfires_skipped), (1, 3), "{tick:?}");
    let m = node.scrape().await;
    let kind = [("kind", "webhook")];
    assert_eq!(one(&m, "kairos_scheduler_firings_total", &kind), 1.0);
    assert_eq!(one(&m, "kairos_scheduler_misfires_total", &kind), 3.0);
    drop(node.dir);
}

/// `GET /v1/slo` needs the token and answers 200 with the checks, warnings included.
#[tokio::test]
async fn slo_route_reports_checks_with_warnings_as_200() {
    let node = start().await;
    node.webhook_job("http://127.0.0.1:9/never", t0()).await;
    let url = format!("{}/v1/slo", node.base);
    let anon = node.http.get(&url).send().await.expect("GET");
    assert_eq!(anon.status(), 401);
    node.clock.set(t0() + Duration::hours(2));
    let res = node
        .http
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), 200);
    let v: serde_json::Value = res.json().await.expect("json");
    assert_eq!(v["status"], "warning");
    assert_eq!(v["warnings"], 1);
    let stuck = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "stuck_due")
        .expect("stuck_due");
    assert_eq!(stuck["status"], "warning");
    assert_eq!(stuck["value"], 1.0);
}

/// `/healthz` answers while the process is up; `/readyz` only while the schema is current:
/// a migration the database has not recorded makes it 503 and names the version.
#[tokio::test]
async fn readyz_requires_current_migrations() {
    let node = start().await;
    let get = |p: &str| node.http.get(format!("{}{p}", node.base)).send();
    assert_eq!(get("/healthz").await.expect("GET").status(), 200);
    assert_eq!(get("/readyz").await.expect("GET").status(), 200);

    // Forget the newest migration, as if this binary were newer than the database.
    let newest: i64 = {
        let pending = node.store.migration_pending().await.expect("pending");
        assert!(pending.is_empty());
        let url = format!("sqlite://{}", node.dir.path().join("kairos.db").display());
        let pool = sqlx::SqlitePool::connect(&url).await.expect("connect");
        let v: i64 = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .expect("max");
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = ?1")
            .bind(v)
            .execute(&pool)
            .await
            .expect("delete");
        pool.close().await;
        v
    };
    let res = get("/readyz").await.expect("GET");
    assert_eq!(res.status(), 503);
    let body = res.text().await.expect("body");
    assert!(body.contains(&newest.to_string()), "{body}");
    assert_eq!(get("/healthz").await.expect("GET").status(), 200);
}

/// `/readyz` is 503 in maintenance mode while `/healthz` stays 200.
#[tokio::test]
async fn readyz_is_unavailable_in_maintenance_mode() {
    let node = start_with(kairos_engine::maintenance::Maintenance::new(true)).await;
    let get = |p: &str| node.http.get(format!("{}{p}", node.base)).send();
    let res = get("/readyz").await.expect("GET");
    assert_eq!(res.status(), 503);
    assert!(res.text().await.expect("body").contains("maintenance"));
    assert_eq!(get("/healthz").await.expect("GET").status(), 200);
}

/// Jobs put back because their concurrency key had no free slot show in
/// `kairos_jobs_waiting{reason="concurrency_key"}`, and the waiting imposed in the counter
/// `kairos_job_wait_seconds_total{reason}`; the other reasons are listed at zero.
#[tokio::test]
async fn metrics_count_jobs_waiting_for_a_concurrency_key() {
    let node = start().await;
    for n in 0..3 {
        node.kairos
            .job_enqueue(NewJob {
                kind: Some("webhook".into()),
                webhook: Some(WebhookTarget {
                    url: "http://127.0.0.1:9/hook".into(),
                    secret: SECRET.into(),
                }),
                payload: Some(serde_json::json!({"account": "a", "n": n})),
                // Jobs of one key asking for different limits: the claim takes all three
                // (each within its own `max`), the key's limit is the smallest, and two are
                // put back (a job of a key at its max is skipped, not put back).
                concurrency: Some(kairos_core::concurrency::ConcurrencySpec {
                    key: "account:{{ payload.account }}".into(),
                    max: if n == 0 { 1 } else { 3 },
                }),
                // In this order: the job asking for 1 first.
                run_at: Some((t0() - Duration::milliseconds(10 - n)).to_rfc3339()),
                ..Default::default()
            })
            .await
            .expect("enqueue");
    }
    let claimed = node
        .store
        .job_claim(kairos_store::JobClaim {
            now: t0(),
            limit: 10,
            node: "n1".into(),
            lease_token: "lease_1".into(),
            lease_until: t0() + Duration::seconds(30),
        })
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1, "one slot");
    let s = node.scrape().await;
    assert_eq!(
        one(&s, "kairos_jobs_waiting", &[("reason", "concurrency_key")]),
        2.0
    );
    assert_eq!(
        one(&s, "kairos_jobs_waiting", &[("reason", "rate_limit")]),
        0.0
    );
    assert_eq!(
        one(&s, "kairos_jobs_waiting", &[("reason", "in_flight")]),
        0.0
    );
    let waited = kairos_store::concurrency::WAIT_BASE.num_milliseconds() as f64 * 3.0 / 1e3;
    assert_eq!(
        one(
            &s,
            "kairos_job_wait_seconds_total",
            &[("reason", "concurrency_key")]
        ),
        waited
    );
}

/// Once counting the finished jobs is slow, a scrape reads the queue's states now and serves
/// the finished ones from the last count, with its age; a count runs in the background when
/// its turn comes, and the next scrapes show it. The policy here makes every count "slow" and
/// its turn come a minute (of the manual clock) after it began.
#[tokio::test]
async fn metrics_count_finished_jobs_in_the_background_once_the_count_is_slow() {
    let node = start_counting(
        kairos_engine::maintenance::Maintenance::default(),
        CountPolicy {
            inline_below: std::time::Duration::ZERO,
            spacing: u32::MAX,
            max_age: std::time::Duration::from_secs(60),
            // The first count lands in milliseconds; a loaded machine may take longer.
            first_wait: std::time::Duration::from_secs(30),
        },
    )
    .await;
    for _ in 0..2 {
        node.cancelled_job().await;
    }
    let kind = [("state", "cancelled"), ("kind", "webhook")];

    let m = node.scrape().await;
    assert_eq!(
        one(&m, "kairos_jobs", &kind),
        2.0,
        "the first scrape counts"
    );
    assert_eq!(one(&m, "kairos_jobs_retained_age_seconds", &[]), 0.0);

    node.cancelled_job().await;
    node.webhook_job(UNREACHED, t0() + Duration::hours(1)).await;
    node.clock.set(t0() + Duration::seconds(30));
    let m = node.scrape().await;
    assert_eq!(
        one(&m, "kairos_jobs", &kind),
        2.0,
        "finished jobs: the last count, not the table"
    );
    assert_eq!(
        one(
            &m,
            "kairos_jobs",
            &[("state", "available"), ("kind", "webhook")]
        ),
        1.0,
        "the queue is read at every scrape"
    );
    assert_eq!(one(&m, "kairos_jobs_retained_age_seconds", &[]), 30.0);

    // Its turn: this scrape starts a count and answers from the last one; a later scrape
    // shows the new count, taken at the clock's time.
    node.clock.set(t0() + Duration::seconds(61));
    let m = node.scrape().await;
    assert_eq!(one(&m, "kairos_jobs_retained_age_seconds", &[]), 61.0);
    let mut counted = None;
    for _ in 0..400 {
        let m = node.scrape().await;
        if one(&m, "kairos_jobs", &kind) == 3.0 {
            counted = Some(one(&m, "kairos_jobs_retained_age_seconds", &[]));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(counted, Some(0.0), "the background count landed, fresh");
}

/// The first count of the finished jobs runs in the background, and a scrape waits for it only
/// `first_wait`: on a large table the first scrape after a restart answers in time, with the
/// queue's states and without the finished ones (nor their age) until their count lands.
#[tokio::test]
async fn metrics_answer_before_the_first_count_of_finished_jobs_lands() {
    let node = start_counting(
        kairos_engine::maintenance::Maintenance::default(),
        CountPolicy {
            first_wait: std::time::Duration::ZERO,
            ..CountPolicy::default()
        },
    )
    .await;
    node.cancelled_job().await;
    node.webhook_job(UNREACHED, t0() + Duration::hours(1)).await;

    let m = node.scrape().await;
    assert_eq!(
        one(
            &m,
            "kairos_jobs",
            &[("state", "available"), ("kind", "webhook")]
        ),
        1.0
    );
    assert!(
        samples(&m, "kairos_jobs")
            .iter()
            .all(|s| s.labels.get("state") != Some("cancelled")),
        "not counted yet"
    );
    assert!(samples(&m, "kairos_jobs_retained_age_seconds").is_empty());
    let mut landed = false;
    for _ in 0..400 {
        let m = node.scrape().await;
        if !samples(&m, "kairos_jobs_retained_age_seconds").is_empty() {
            assert_eq!(
                one(
                    &m,
                    "kairos_jobs",
                    &[("state", "cancelled"), ("kind", "webhook")]
                ),
                1.0
            );
            landed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(landed, "the first count landed");
}

/// A background count of the finished jobs that fails is not tried again at every read: not
/// before its retry time (ten seconds after a count that failed at once), and then it is, and
/// lands. The failure is real: a finished job whose kind SQLite stores as a blob cannot be read
/// back as text, so the count of the finished states fails while the queue's still reads.
#[tokio::test]
async fn a_failed_background_count_is_tried_again_only_after_its_retry_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kairos.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("open store"));
    let clock = Arc::new(ManualClock::new(t0()));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let mut raw = unreadable::unreadable_finished_job(&path).await;
    let counts = Arc::new(JobCounts::new(CountPolicy {
        first_wait: std::time::Duration::ZERO,
        ..CountPolicy::default()
    }));
    let first = counts
        .read(&store, &dyn_clock)
        .await
        .expect("the queue reads");
    assert_eq!(first.retained_at, None);
    assert_eq!(
        unreadable::count_failure(&counts).await,
        t0() + Duration::seconds(10),
        "failed at once"
    );
    sqlx::query("DELETE FROM jobs WHERE id = 'unreadable'")
        .execute(&mut raw)
        .await
        .expect("the job removed");

    // Before the retry time no count runs: reads keep answering without the finished states.
    clock.set(t0() + Duration::seconds(5));
    for _ in 0..20 {
        let c = counts.read(&store, &dyn_clock).await.expect("read");
        assert_eq!(c.retained_at, None, "not counted again yet");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    // After it, the next read counts again, and the count lands.
    clock.set(t0() + Duration::seconds(11));
    let mut landed = None;
    for _ in 0..400 {
        landed = counts
            .read(&store, &dyn_clock)
            .await
            .expect("read")
            .retained_at;
        if landed.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(landed, Some(t0() + Duration::seconds(11)));
    assert_eq!(
        counts.retry_at(),
        None,
        "a count that succeeds clears the retry"
    );
}
