//! Limits of an `http` job's host end to end (issue 34): `"http": {…, "rate_limit":
//! {"per_second": 20, "burst": 20}, "max_in_flight": M}` on one job sets the limits of its
//! origin (scheme, host and port), and every `http` job calling that origin — jobs that name no
//! limit included — is held to them, on one node (SQLite) and on three nodes sharing
//! PostgreSQL: no more than 20 calls in any sliding second after the first, no more than M in
//! flight at once, all of them arriving. Bad limits are a 422 naming the field; nothing is
//! stored. The job view shows the origin's limits.

mod common;

use common::{Server, TOKEN, api};
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Calls enqueued in the rate test.
const CALLS: usize = 200;
/// Calls enqueued in the in-flight test.
const SLOW_CALLS: usize = 12;
/// The in-flight limit.
const MAX_IN_FLIGHT: usize = 2;
/// How long the slow receiver takes to answer each call.
const REPLY_DELAY: Duration = Duration::from_millis(300);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The most arrivals in any one-second window that starts at an arrival at least a second
/// after the first.
fn busiest_second_after_the_first(arrivals: &[Instant]) -> usize {
    let mut ats = arrivals.to_vec();
    ats.sort();
    let Some(first) = ats.first().copied() else {
        return 0;
    };
    ats.iter()
        .filter(|t| t.duration_since(first) >= Duration::from_secs(1))
        .map(|t| {
            ats.iter()
                .filter(|o| *o >= t && o.duration_since(*t) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// The most calls in flight at once: a call is in flight from its arrival until the receiver
/// answers, `REPLY_DELAY` later.
fn most_in_flight(arrivals: &[Instant]) -> usize {
    arrivals
        .iter()
        .map(|t| {
            arrivals
                .iter()
                .filter(|o| *o <= t && t.duration_since(**o) < REPLY_DELAY)
                .count()
        })
        .max()
        .unwrap_or(0)
}

async fn post(http: &reqwest::Client, base: &str, path: &str, body: Value) -> (u16, Value) {
    api(
        http,
        reqwest::Method::POST,
        format!("{base}/v1/{path}"),
        Some(body),
    )
    .await
}

/// Bad limits in a job's or a schedule's `http` object: a 422 naming the field; no job, no
/// schedule and no limit is stored.
async fn refuses_bad_limits(http: &reqwest::Client, base: &str, receiver: &TestReceiver) {
    let url = receiver.url("/bad");
    for (path, body, field) in [
        (
            "jobs",
            json!({"kind": "http", "http": {"url": url, "rate_limit": {"per_second": 0}}}),
            "http.rate_limit.per_second",
        ),
        (
            "jobs",
            json!({"kind": "http",
                   "http": {"url": url, "rate_limit": {"per_second": 20, "burst": 0}}}),
            "http.rate_limit.burst",
        ),
        (
            "jobs",
            json!({"kind": "http", "http": {"url": url, "max_in_flight": 0}}),
            "http.max_in_flight",
        ),
        (
            "schedules",
            json!({"name": "bad-host-limit", "cron": "0 9 * * *", "kind": "http",
                   "http": {"url": url, "max_in_flight": 10001}}),
            "http.max_in_flight",
        ),
        (
            "schedules",
            json!({"name": "bad-channel-host-limit", "cron": "0 9 * * *",
                   "channels": [{"name": "a", "kind": "http",
                                 "http": {"url": url, "rate_limit": {"per_second": -1}}}]}),
            "channels[0].http.rate_limit.per_second",
        ),
    ] {
        let (status, problem) = post(http, base, path, body).await;
        assert_eq!(status, 422, "{problem}");
        assert!(problem.to_string().contains(field), "{field}: {problem}");
    }
    for path in ["jobs?kind=http", "schedules"] {
        let (status, list) = api(
            http,
            reqwest::Method::GET,
            format!("{base}/v1/{path}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["data"], json!([]), "nothing stored: {list}");
    }
    // A job far ahead, naming no limit: its origin has none (the refused ones set nothing).
    let (status, job) = post(
        http,
        base,
        "jobs",
        json!({"kind": "http", "http": {"url": url}, "run_at": "2099-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().expect("id");
    let (_, shown) = api(
        http,
        reqwest::Method::GET,
        format!("{base}/v1/jobs/{id}"),
        None,
    )
    .await;
    assert_eq!(shown["http"]["rate_limit"], json!(null), "{shown}");
    assert_eq!(shown["http"]["max_in_flight"], json!(null), "{shown}");
}

/// One job far ahead sets the origin's rate limit (20/s, burst 20); then `CALLS` jobs that
/// name no limit, to two paths of the origin, spread over `bases`.
async fn rate_limit_holds(bases: &[String]) {
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok());
    let http = client();
    refuses_bad_limits(&http, &bases[0], &receiver).await;
    let (status, first) = post(
        &http,
        &bases[0],
        "jobs",
        json!({"kind": "http", "run_at": "2099-01-01T00:00:00Z",
               "http": {"url": receiver.url("/limits"),
                        "rate_limit": {"per_second": 20, "burst": 20}}}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let id = first["id"].as_str().expect("id");
    let (_, shown) = api(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/jobs/{id}", bases[0]),
        None,
    )
    .await;
    assert_eq!(
        shown["http"]["rate_limit"],
        json!({"per_second": 20, "burst": 20}),
        "{shown}"
    );
    let origin = format!("http://{}", receiver.addr());
    assert_eq!(shown["http"]["origin"], json!(origin), "{shown}");
    for n in 0..CALLS {
        let base = &bases[n % bases.len()];
        let path = if n % 2 == 0 { "/a" } else { "/b" };
        let (status, job) = post(
            &http,
            base,
            "jobs",
            json!({"kind": "http", "http": {"url": receiver.url(path), "body": {"n": n}}}),
        )
        .await;
        assert_eq!(status, 201, "{job}");
    }
    assert!(
        receiver.wait_for(CALLS, Duration::from_secs(60)).await,
        "only {} of {CALLS} calls within 60 s",
        receiver.count()
    );
    let got = receiver.received();
    let mut bodies: Vec<String> = got.iter().map(|r| r.body_text()).collect();
    bodies.sort();
    bodies.dedup();
    assert_eq!(bodies.len(), CALLS, "every call arrived once");
    let arrivals: Vec<Instant> = got.iter().map(|r| r.at).collect();
    let busiest = busiest_second_after_the_first(&arrivals);
    eprintln!("busiest second after the first: {busiest} calls");
    assert!(busiest <= 20, "{busiest} calls in one second (limit 20/s)");
}

/// A schedule's `http` object sets the origin's `max_in_flight`; `SLOW_CALLS` jobs calling
/// it (naming no limit) never overlap more than that at the slow receiver.
async fn max_in_flight_holds(bases: &[String]) {
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok().with_delay(REPLY_DELAY));
    let http = client();
    let (status, s) = post(
        &http,
        &bases[0],
        "schedules",
        json!({"name": "host-in-flight", "cron": "0 9 1 1 *", "kind": "http",
               "http": {"url": receiver.url("/nightly"),
                        "max_in_flight": MAX_IN_FLIGHT}}),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    let id = s["id"].as_str().expect("id");
    let (_, shown) = api(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/schedules/{id}", bases[0]),
        None,
    )
    .await;
    assert_eq!(
        shown["http"]["max_in_flight"],
        json!(MAX_IN_FLIGHT),
        "{shown}"
    );
    for n in 0..SLOW_CALLS {
        let base = &bases[n % bases.len()];
        let (status, job) = post(
            &http,
            base,
            "jobs",
            json!({"kind": "http", "http": {"url": receiver.url("/slow"), "body": {"n": n}}}),
        )
        .await;
        assert_eq!(status, 201, "{job}");
    }
    assert!(
        receiver.wait_for(SLOW_CALLS, Duration::from_secs(90)).await,
        "only {} of {SLOW_CALLS} calls arrived",
        receiver.count()
    );
    let arrivals: Vec<Instant> = receiver.received().iter().map(|r| r.at).collect();
    let most = most_in_flight(&arrivals);
    eprintln!("most calls in flight at once: {most}");
    assert!(
        most <= MAX_IN_FLIGHT,
        "{most} calls in flight at once (max {MAX_IN_FLIGHT})"
    );
    assert!(most >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_limits_hold_for_every_http_job_calling_the_origin_sqlite() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_CONCURRENCY", "32")]).await;
    let bases = vec![node.base.clone()];
    rate_limit_holds(&bases).await;
    max_in_flight_holds(&bases).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_limits_hold_across_three_postgres_nodes() {
    let url = database_url();
    if !reachable(&url, "The host limits multi-node test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_hl");
    let schema = guard.schema.clone();
    // Migrate once before the nodes start.
    kairos_store_postgres::PostgresStore::connect(&url, &schema)
        .await
        .expect("connect to PostgreSQL");
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let name = format!("node{i}");
        let env = [
            ("KAIROS_DATABASE_URL", url.as_str()),
            ("KAIROS_DATABASE_SCHEMA", schema.as_str()),
            ("KAIROS_CONCURRENCY", "32"),
            ("KAIROS_NODE", name.as_str()),
            (
                "KAIROS_SECRET_KEY",
                "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=",
            ),
        ];
        nodes.push(Server::start_with(dir.path(), Some(TOKEN), &env).await);
    }
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    rate_limit_holds(&bases).await;
    max_in_flight_holds(&bases).await;
    drop(nodes);
}
