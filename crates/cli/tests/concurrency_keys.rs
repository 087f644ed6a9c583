//! Concurrency keys end to end (issue 34): real `kairos serve` processes post webhooks to a
//! receiver that answers slowly; the jobs of one key (`"account:{{ payload.account }}"`,
//! `max`) never overlap more than `max` at the receiver, while another key's jobs run beside
//! them; every job arrives. On one node (SQLite) and on three nodes sharing PostgreSQL.
//!
//! A request holds its key's slot at least from its arrival until the receiver answers
//! (`REPLY_DELAY` later): the next job of the key is claimed only after the completion is
//! recorded. So the requests in flight at once are those whose `[arrival, arrival + delay)`
//! intervals overlap, counted per key.

mod common;

use common::{SECRET, Server, TOKEN, api};
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use kairos_testkit::{Received, Reply, TestReceiver, init_crypto};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long the receiver takes to answer each request.
const REPLY_DELAY: Duration = Duration::from_millis(300);
/// Jobs per key.
const PER_KEY: usize = 12;
/// The limit of the busy key.
const MAX: usize = 2;

/// The most requests of each account in flight at once (see the module docs).
fn max_overlap(received: &[Received]) -> HashMap<String, usize> {
    let mut by_key: HashMap<String, Vec<Instant>> = HashMap::new();
    for r in received {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let account = body["data"]["account"]
            .as_str()
            .or_else(|| body["account"].as_str())
            .unwrap_or("?")
            .to_string();
        by_key.entry(account).or_default().push(r.at);
    }
    by_key
        .into_iter()
        .map(|(k, mut ats)| {
            ats.sort();
            let most = ats
                .iter()
                .map(|t| {
                    ats.iter()
                        .filter(|o| *o <= t && t.duration_since(**o) < REPLY_DELAY)
                        .count()
                })
                .max()
                .unwrap_or(0);
            (k, most)
        })
        .collect()
}

/// Enqueue `PER_KEY` jobs of account `busy` (limit `MAX`) and as many of account `other`
/// (limit `PER_KEY`: no limit in effect), spread over `bases`.
async fn enqueue(http: &reqwest::Client, bases: &[String], receiver: &TestReceiver) {
    for n in 0..PER_KEY {
        for (account, max) in [("busy", MAX), ("other", PER_KEY)] {
            let base = &bases[n % bases.len()];
            let (status, job) = api(
                http,
                reqwest::Method::POST,
                format!("{base}/v1/jobs"),
                Some(json!({
                    "kind": "webhook",
                    "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
                    "payload": {"account": account, "n": n},
                    "concurrency": {"key": "account:{{ payload.account }}", "max": max},
                })),
            )
            .await;
            assert_eq!(status, 201, "{job}");
            assert_eq!(
                job["concurrency"]["key"],
                json!(format!("account:{account}")),
                "{job}"
            );
        }
    }
}

/// Wait (bounded) until the receiver has every job, then check the overlap per key.
async fn check(receiver: &TestReceiver) {
    let total = 2 * PER_KEY;
    assert!(
        receiver.wait_for(total, Duration::from_secs(90)).await,
        "only {} of {total} requests arrived",
        receiver.count()
    );
    let got = receiver.received();
    let ids = receiver.ids_seen();
    assert_eq!(ids.len(), total, "every job arrived");
    let overlap = max_overlap(&got);
    eprintln!("most requests in flight per account: {overlap:?}");
    assert!(
        overlap["busy"] <= MAX,
        "account busy had {} requests in flight at once (max {MAX})",
        overlap["busy"]
    );
    // The other key was not held back by the busy one: it ran more than the busy key's limit
    // at once (its own limit is PER_KEY).
    assert!(
        overlap["other"] > MAX,
        "account other ran beside busy: {overlap:?}"
    );
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_node_never_runs_more_than_max_jobs_of_a_key() {
    init_crypto();
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok().with_delay(REPLY_DELAY));
    let dir = tempfile::tempdir().expect("tempdir");
    let node = Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_CONCURRENCY", "32")]).await;
    let http = client();
    refuses_bad_keys_and_fails_a_key_that_renders_badly(&http, &node.base, &receiver).await;
    enqueue(&http, std::slice::from_ref(&node.base), &receiver).await;
    check(&receiver).await;
}

/// A bad key template or `max` is a 422 naming the field, and nothing is stored; a key that
/// renders empty fails its job permanently (dead, not sent), saying why.
async fn refuses_bad_keys_and_fails_a_key_that_renders_badly(
    http: &reqwest::Client,
    base: &str,
    receiver: &TestReceiver,
) {
    let webhook = json!({"url": receiver.url("/hook"), "secret": SECRET});
    for (path, body, field) in [
        (
            "jobs",
            json!({"webhook": webhook, "concurrency": {"key": "{{ payload.a ", "max": 1}}),
            "concurrency.key",
        ),
        (
            "jobs",
            json!({"webhook": webhook, "concurrency": {"key": "k", "max": 0}}),
            "concurrency.max",
        ),
        (
            "schedules",
            json!({"name": "bad-key", "cron": "0 9 * * *", "webhook": webhook,
                   "concurrency": {"key": "{{ recipent.id }}", "max": 1}}),
            "concurrency.key",
        ),
        (
            "schedules",
            json!({"name": "bad-channel-key", "cron": "0 9 * * *",
                   "channels": [{"name": "a", "kind": "webhook", "webhook": webhook,
                                 "concurrency": {"key": "k", "max": 100000}}]}),
            "channels[0].concurrency.max",
        ),
    ] {
        let (status, problem) = api(
            http,
            reqwest::Method::POST,
            format!("{base}/v1/{path}"),
            Some(body),
        )
        .await;
        assert_eq!(status, 422, "{problem}");
        assert!(problem.to_string().contains(field), "{field}: {problem}");
    }
    let (status, list) = api(
        http,
        reqwest::Method::GET,
        format!("{base}/v1/schedules"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(list["data"], json!([]), "no schedule stored: {list}");
    let (status, job) = api(
        http,
        reqwest::Method::POST,
        format!("{base}/v1/jobs"),
        Some(json!({"webhook": webhook, "payload": {"a": ""},
                    "concurrency": {"key": "{{ payload.a }}", "max": 1}})),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().expect("id").to_string();
    let mut dead = json!(null);
    for _ in 0..100 {
        let (_, j) = api(
            http,
            reqwest::Method::GET,
            format!("{base}/v1/jobs/{id}"),
            None,
        )
        .await;
        if j["state"] == "dead" {
            dead = j;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(dead["state"], "dead", "{dead}");
    assert!(
        dead.to_string().contains("rendered empty"),
        "the job says why: {dead}"
    );
    assert_eq!(receiver.count(), 0, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_postgres_nodes_never_run_more_than_max_jobs_of_a_key() {
    let url = database_url();
    if !reachable(&url, "The concurrency keys multi-node test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_ck");
    let schema = guard.schema.clone();
    // Migrate once before the nodes start.
    kairos_store_postgres::PostgresStore::connect(&url, &schema)
        .await
        .expect("connect to PostgreSQL");
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok().with_delay(REPLY_DELAY));
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
    let http = client();
    enqueue(&http, &bases, &receiver).await;
    check(&receiver).await;
    drop(nodes);
}
