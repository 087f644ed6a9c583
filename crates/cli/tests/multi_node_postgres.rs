//! Three real `kairos serve` processes on one PostgreSQL schema: 5,000 one-shot webhook jobs
//! and a schedule firing every second for 30 s, while one node (the leader) is killed with
//! SIGKILL in the middle. Every job succeeds and reaches the receiver, no firing creates two
//! jobs, and only what the killed node had in flight is delivered twice.
//!
//! The server is `KAIROS_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/
//! postgres`). If it cannot be reached the test is skipped with a loud message on stderr,
//! unless `KAIROS_TEST_POSTGRES=required`, which makes it a failure.

mod common;

use common::{SECRET, Server, TOKEN, api};
use kairos_store::prelude::*;
use kairos_store_postgres::PostgresStore;
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The secret key every node is given (`kairos key generate`).
const SECRET_KEY: &str = "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=";
/// One-shot jobs enqueued.
const JOBS: usize = 5000;
/// Nodes started.
const NODES: usize = 3;
/// `KAIROS_CONCURRENCY` of each node: at most this many deliveries in flight on the killed one.
const CONCURRENCY: usize = 40;
/// Kill once the receiver has seen this many requests.
const KILL_AFTER: usize = 1500;
/// Enqueue requests in flight at once (spread over the nodes).
const ENQUEUE_PARALLEL: usize = 24;
/// How long the schedule fires before it is paused.
const SCHEDULE_FOR: Duration = Duration::from_secs(30);
/// The receiver's reply delay, so that deliveries overlap.
const REPLY_DELAY: Duration = Duration::from_millis(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_5000_jobs_and_a_schedule_survive_a_sigkill() {
    let url = database_url();
    if !reachable(&url, "The multi-node test").await {
        return;
    }
    init_crypto();
    let test_started = Instant::now();
    let guard = SchemaGuard::new(url.clone(), "kairos_mn");
    let schema = guard.schema.clone();
    // Migrate once before the nodes start (they would also do it, serialized by a lock).
    let store = PostgresStore::connect(&url, &schema)
        .await
        .expect("connect to PostgreSQL");

    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok().with_delay(REPLY_DELAY));
    let concurrency = CONCURRENCY.to_string();
    let dirs: Vec<_> = (0..NODES)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let name = format!("node{i}");
        let env = [
            ("KAIROS_DATABASE_URL", url.as_str()),
            ("KAIROS_DATABASE_SCHEMA", schema.as_str()),
            ("KAIROS_LEASE_SECS", "10"),
            ("KAIROS_CONCURRENCY", concurrency.as_str()),
            ("KAIROS_NODE", name.as_str()),
            ("KAIROS_SECRET_KEY", SECRET_KEY),
        ];
        nodes.push(Some(
            Server::start_with(dir.path(), Some(TOKEN), &env).await,
        ));
    }
    let bases: Vec<String> = nodes.iter().flatten().map(|n| n.base.clone()).collect();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");

    // The schedule: every second, one job per firing (period key per occurrence).
    let (status, schedule) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/schedules", bases[1]),
        Some(json!({
            "name": "every-second",
            "cron": "* * * * * *",
            "period": "occurrence",
            "webhook": {"url": receiver.url("/tick"), "secret": SECRET},
            "payload": {"tick": true},
        })),
    )
    .await;
    assert_eq!(status, 201, "{schedule}");
    let schedule_id = schedule["id"].as_str().expect("schedule id").to_string();
    let schedule_started = Instant::now();

    // The leader runs the rescuer: killing it means the survivors must elect another one to
    // return its jobs. Enqueue only through the other nodes, so that no request is lost to
    // the kill.
    let elected = Instant::now();
    let victim = loop {
        let leader = nodes.iter().position(|n| {
            n.as_ref()
                .is_some_and(|n| n.stderr().contains("this node is now the leader"))
        });
        if let Some(v) = leader {
            break v;
        }
        assert!(
            elected.elapsed() < Duration::from_secs(15),
            "no node became the leader within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let targets: Vec<String> = (0..NODES)
        .filter(|i| *i != victim)
        .map(|i| bases[i].clone())
        .collect();

    // 5,000 one-shot jobs, due at once, enqueued round-robin over the other nodes while all
    // three deliver them.
    let enqueue_started = Instant::now();
    let gate = Arc::new(Semaphore::new(ENQUEUE_PARALLEL));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..JOBS {
        let (http, gate) = (http.clone(), gate.clone());
        let url = format!("{}/v1/jobs", targets[n % targets.len()]);
        let body = json!({
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {"n": n},
            "idempotency_key": format!("mn-{n}"),
        });
        tasks.spawn(async move {
            let _slot = gate.acquire_owned().await.expect("semaphore");
            let (status, job) = api(&http, reqwest::Method::POST, url, Some(body)).await;
            assert_eq!(status, 201, "{job}");
            job["id"].as_str().expect("job id").to_string()
        });
    }

    // Kill the leader with SIGKILL in the middle of the deliveries.
    assert!(
        receiver.wait_for(KILL_AFTER, Duration::from_secs(60)).await,
        "only {} of {KILL_AFTER} requests within 60 s",
        receiver.count()
    );
    let killed = nodes[victim].take().expect("victim");
    let status = killed.kill(Duration::from_secs(10)).await;
    assert_eq!(status.signal(), Some(9), "died of SIGKILL: {status:?}");
    let at_kill = receiver.count();
    eprintln!(
        "killed node{victim} (the leader) with SIGKILL after {at_kill} requests, {:?} after the first enqueue",
        enqueue_started.elapsed()
    );
    assert!(
        at_kill < JOBS,
        "the kill came after all {JOBS} deliveries ({at_kill} requests): the test proves nothing"
    );

    let mut ids = HashSet::new();
    while let Some(id) = tasks.join_next().await {
        ids.insert(id.expect("enqueue task"));
    }
    assert_eq!(ids.len(), JOBS, "every enqueue created a distinct job");
    eprintln!(
        "enqueued {JOBS} jobs in {:?} over {} nodes",
        enqueue_started.elapsed(),
        targets.len()
    );
    let survivor = nodes
        .iter()
        .flatten()
        .next()
        .expect("a survivor")
        .base
        .clone();

    // Stop the schedule after its 30 s.
    tokio::time::sleep(SCHEDULE_FOR.saturating_sub(schedule_started.elapsed())).await;
    let (status, paused) = api(
        &http,
        reqwest::Method::POST,
        format!("{survivor}/v1/schedules/{schedule_id}/pause"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{paused}");

    // Wait (at most 120 s in all) until every job has succeeded.
    let deadline = test_started + Duration::from_secs(120);
    let all_jobs = loop {
        let rows: Vec<(String, String, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT id, state, schedule_id, period_key FROM jobs")
                .fetch_all(store.pool())
                .await
                .expect("jobs");
        let open = rows.iter().filter(|r| r.1 != "succeeded").count();
        if open == 0 && rows.len() > JOBS {
            break rows;
        }
        if Instant::now() > deadline {
            let states = store.job_count_by_state().await.expect("counts");
            let logs: Vec<String> = nodes.iter().flatten().map(|n| n.stderr()).collect();
            panic!(
                "not every job succeeded within 120 s: {states:?}; survivors' stderr:\n{}",
                logs.join("\n----\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!(
        "all {} jobs succeeded {:?} after the start",
        all_jobs.len(),
        test_started.elapsed()
    );

    // Every one-shot job is there and succeeded; the rest are the schedule's.
    let one_shot: HashSet<String> = all_jobs
        .iter()
        .filter(|r| r.2.is_none())
        .map(|r| r.0.clone())
        .collect();
    assert_eq!(one_shot, ids, "exactly the enqueued one-shot jobs");
    let mut per_period: HashMap<String, usize> = HashMap::new();
    for r in all_jobs.iter().filter(|r| r.2.is_some()) {
        assert_eq!(r.2.as_deref(), Some(schedule_id.as_str()));
        *per_period
            .entry(r.3.clone().expect("a schedule's job has a period key"))
            .or_insert(0) += 1;
    }
    let twice: Vec<_> = per_period.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "a firing created two jobs: {twice:?}");
    let firings = per_period.len();
    eprintln!("the schedule fired {firings} times in about {SCHEDULE_FOR:?}");
    // One per second; a firing may be lost to the kill (a schedule claimed by the killed node
    // stays locked for the scheduler's lock time, then the missed firings are skipped).
    assert!(
        (15..=33).contains(&firings),
        "{firings} firings in about 30 s"
    );

    // Every job reached the receiver; nothing else did.
    let seen = receiver.ids_seen();
    for (id, ..) in &all_jobs {
        assert!(seen.contains_key(id), "job {id} never reached the receiver");
    }
    let known: HashSet<&String> = all_jobs.iter().map(|r| &r.0).collect();
    for id in seen.keys() {
        assert!(known.contains(id), "a delivery of an unknown job {id}");
    }
    // Repeats only across the kill: delivered before it (by the killed node, in flight), and
    // again after its lease expired.
    let received = receiver.received();
    let id_of = |r: &kairos_testkit::Received| r.header("webhook-id").expect("id").to_string();
    let before: HashSet<String> = received[..at_kill].iter().map(id_of).collect();
    let repeated: Vec<&String> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    for id in &repeated {
        assert!(
            before.contains(*id),
            "{id} was delivered twice, but not across the kill"
        );
        assert_eq!(seen[*id], 2, "{id} was delivered {} times", seen[*id]);
    }
    eprintln!(
        "delivered twice: {} (the killed node had at most {CONCURRENCY} in flight)",
        repeated.len()
    );
    assert!(
        repeated.len() <= CONCURRENCY,
        "{} jobs were delivered twice, more than the {CONCURRENCY} the killed node could have in flight",
        repeated.len()
    );

    // The killed node's claimed jobs came back through the rescuer of a new leader.
    let lost: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM job_attempts WHERE outcome = 'lost'")
        .fetch_one(store.pool())
        .await
        .expect("lost attempts");
    let new_leaders = nodes
        .iter()
        .flatten()
        .filter(|n| n.stderr().contains("this node is now the leader"))
        .count();
    eprintln!("jobs returned by the rescuer after the kill: {lost}");
    assert_eq!(
        new_leaders, 1,
        "exactly one survivor took over the leadership"
    );

    for node in nodes.into_iter().flatten() {
        let stderr = node.stderr();
        let status = node.terminate(Duration::from_secs(15)).await;
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    store.close().await;
    eprintln!("whole test: {:?}", test_started.elapsed());
}
