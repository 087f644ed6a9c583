//! Crash recovery of the real binary: `kairos serve` is killed with SIGKILL while it delivers
//! 1,000 webhook jobs, then restarted on the same data directory with the default 30 s lease.
//! Every job ends `succeeded` within a minute of the restart, none is lost, every delivery is
//! signed, and the receiver sees a second delivery only of jobs that were in flight at the kill
//! (their attempts show `lost`, then `succeeded`).

mod common;

use common::{SECRET, Server, TOKEN, api, now_unix};
use kairos_testkit::{Reply, TestReceiver, init_crypto, verify_standard_webhook};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Jobs enqueued.
const JOBS: usize = 1000;
/// `KAIROS_CONCURRENCY` of both processes: at most this many deliveries run at once.
const CONCURRENCY: usize = 50;
/// `KAIROS_MAX_UNRECORDED`: at most this many finished deliveries wait for their commit while
/// their slot runs the next.
const MAX_UNRECORDED: usize = 50;
/// Kill once the receiver has seen this many requests.
const KILL_AFTER: usize = 300;
/// Enqueue requests in flight at once.
const ENQUEUE_PARALLEL: usize = 16;
/// How long the receiver takes to answer, so that many deliveries are in flight at any moment.
const REPLY_DELAY: Duration = Duration::from_millis(30);

/// Every job id of a state, following `next_before` pages of 1,000.
async fn ids_in_state(http: &reqwest::Client, base: &str, state: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut before: Option<String> = None;
    loop {
        let mut url = format!("{base}/v1/jobs?state={state}&limit=1000");
        if let Some(b) = &before {
            url.push_str(&format!("&before={b}"));
        }
        let (status, page) = api(http, reqwest::Method::GET, url, None).await;
        assert_eq!(status, 200, "{page}");
        for job in page["data"].as_array().expect("data") {
            ids.insert(job["id"].as_str().expect("job id").to_string());
        }
        match page["next_before"].as_str() {
            Some(b) => before = Some(b.to_string()),
            None => return ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_1000_webhooks_then_restart_loses_none_and_recovers_within_a_minute() {
    init_crypto();
    let test_started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok().with_delay(REPLY_DELAY));
    let concurrency = CONCURRENCY.to_string();
    // The default lease (30 s) on purpose: the point is that the default recovers in a minute.
    let unrecorded = MAX_UNRECORDED.to_string();
    let env = [
        ("KAIROS_CONCURRENCY", concurrency.as_str()),
        ("KAIROS_MAX_UNRECORDED", unrecorded.as_str()),
    ];
    let first = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");

    // Enqueue all jobs due a few seconds from now, so that they are all stored before the
    // first delivery and start together (the enqueue takes 1.5 s, up to 5 s on a busy machine;
    // should it take longer, deliveries start meanwhile, which is fine as long as the kill
    // still comes before the last one: checked below).
    let run_at = chrono::Utc::now() + chrono::Duration::seconds(5);
    let run_at = run_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let enqueue_started = Instant::now();
    let gate = Arc::new(Semaphore::new(ENQUEUE_PARALLEL));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..JOBS {
        let (http, gate, url, run_at) = (
            http.clone(),
            gate.clone(),
            format!("{}/v1/jobs", first.base),
            run_at.clone(),
        );
        let body = json!({
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {"n": n},
            "run_at": run_at,
            "idempotency_key": format!("crash-{n}"),
        });
        tasks.spawn(async move {
            let _slot = gate.acquire_owned().await.expect("semaphore");
            let (status, job) = api(&http, reqwest::Method::POST, url, Some(body)).await;
            assert_eq!(status, 201, "{job}");
            job["id"].as_str().expect("job id").to_string()
        });
    }
    let mut ids = HashSet::new();
    while let Some(id) = tasks.join_next().await {
        ids.insert(id.expect("enqueue task"));
    }
    assert_eq!(ids.len(), JOBS, "every enqueue created a distinct job");
    eprintln!(
        "enqueued {JOBS} jobs in {:?} ({} requests received meanwhile)",
        enqueue_started.elapsed(),
        receiver.count()
    );

    // Kill the server in the middle of the deliveries.
    assert!(
        receiver.wait_for(KILL_AFTER, Duration::from_secs(30)).await,
        "only {} of {KILL_AFTER} requests within 30 s; stderr:\n{}",
        receiver.count(),
        first.stderr()
    );
    let first_log = first.log.clone();
    let status = first.kill(Duration::from_secs(10)).await;
    let killed_at = Instant::now();
    assert_eq!(status.signal(), Some(9), "died of SIGKILL: {status:?}");
    // Nothing more can come from the dead process: what was received so far is its work.
    let at_kill = receiver.count();
    assert!(
        at_kill < JOBS,
        "the kill came after all {JOBS} deliveries ({at_kill} requests): the test proves nothing"
    );
    eprintln!("killed with SIGKILL after {at_kill} requests");

    // Restart on the same data directory (a new port) and wait for every job to succeed.
    let second = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    let restarted = Instant::now();
    let deadline = restarted + Duration::from_secs(90);
    let succeeded = loop {
        let succeeded = ids_in_state(&http, &second.base, "succeeded").await;
        if succeeded.len() >= JOBS {
            break succeeded;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {JOBS} jobs succeeded within 90 s of the restart; stderr of the first \
             process:\n{}\nstderr of the second:\n{}",
            succeeded.len(),
            first_log.lock().expect("log").join("\n"),
            second.stderr()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let recovery = restarted.elapsed();
    eprintln!(
        "all {JOBS} jobs succeeded {recovery:?} after the restart ({:?} after the kill)",
        killed_at.elapsed()
    );
    assert_eq!(
        succeeded, ids,
        "exactly the enqueued jobs, all succeeded: none lost"
    );
    assert!(
        recovery < Duration::from_secs(60),
        "recovery took {recovery:?}, not under a minute"
    );

    // Every delivery is signed; every job reached the receiver; only known jobs did.
    let received = receiver.received();
    let now = now_unix();
    for r in &received {
        assert!(
            verify_standard_webhook(SECRET, r, now),
            "a delivery failed signature verification: {:?}",
            r.headers
        );
    }
    let seen = receiver.ids_seen();
    assert_eq!(
        seen.values().sum::<usize>(),
        received.len(),
        "every request has a webhook-id"
    );
    for id in &ids {
        assert!(seen.contains_key(id), "job {id} never reached the receiver");
    }
    for id in seen.keys() {
        assert!(ids.contains(id), "a delivery of an unknown job {id}");
    }

    // A repeat only for what was in flight at the kill: no process delivered a job twice, so a
    // repeat is a job the first process sent (in flight, its success not yet recorded) and the
    // second one sent again after its lease expired.
    let id_of = |r: &kairos_testkit::Received| r.header("webhook-id").expect("id").to_string();
    let mut before_kill: HashMap<String, usize> = HashMap::new();
    for r in &received[..at_kill] {
        *before_kill.entry(id_of(r)).or_insert(0) += 1;
    }
    let mut after_restart: HashMap<String, usize> = HashMap::new();
    for r in &received[at_kill..] {
        *after_restart.entry(id_of(r)).or_insert(0) += 1;
    }
    for (phase, counts) in [
        ("before the kill", &before_kill),
        ("after the restart", &after_restart),
    ] {
        let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "delivered twice {phase}: {twice:?}");
    }
    let repeated: Vec<&String> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    for id in &repeated {
        assert!(
            before_kill.contains_key(*id) && after_restart.contains_key(*id),
            "{id} was repeated, but not across the crash"
        );
    }
    let n = repeated.len();
    eprintln!("repeats: {n} (in flight at the kill)");
    let bound = CONCURRENCY + MAX_UNRECORDED;
    assert!(
        n <= bound,
        "{n} jobs were delivered again, more than the {bound} that can be sent and unrecorded"
    );

    // A repeated job's attempts: the one the crash cut short is `lost`, then `succeeded`.
    for id in &repeated {
        let (status, job) = api(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/jobs/{id}", second.base),
            None,
        )
        .await;
        assert_eq!(status, 200, "{job}");
        assert_eq!(job["state"], "succeeded", "{job}");
        let outcomes: Vec<&str> = job["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["outcome"].as_str().expect("outcome"))
            .collect();
        assert_eq!(outcomes, ["lost", "succeeded"], "{job}");
    }
    // And a job delivered once, after the restart, succeeded on its first attempt or after a
    // lost one (claimed but not yet sent at the kill) — never with a failure.
    if let Some(id) = after_restart
        .keys()
        .find(|id| !before_kill.contains_key(*id))
    {
        let (_, job) = api(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/jobs/{id}", second.base),
            None,
        )
        .await;
        let attempts: Vec<Value> = job["attempts"].as_array().expect("attempts").clone();
        let last = attempts.last().expect("an attempt");
        assert_eq!(last["outcome"], "succeeded", "{job}");
        assert!(
            attempts[..attempts.len() - 1]
                .iter()
                .all(|a| a["outcome"] == "lost"),
            "{job}"
        );
    }

    let stderr = second.stderr();
    let status = second.terminate(Duration::from_secs(15)).await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    eprintln!("whole test: {:?}", test_started.elapsed());
}

/// A node restarted on the same data directory keeps its id (`<data_dir>/node-id`) and takes
/// back the jobs its killed process left running at once: with a 10-minute lease, the jobs
/// that were in flight at the kill are delivered again within seconds of the restart, not
/// after their lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_node_takes_back_its_own_jobs_without_waiting_for_the_lease() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    // The first process's deliveries hang: the jobs are in flight when it is killed.
    receiver.set_default(Reply::ok().with_delay(Duration::from_secs(60)));
    let env = [
        ("KAIROS_LEASE_SECS", "600"),
        ("KAIROS_WEBHOOK_TIMEOUT_SECS", "120"),
    ];
    let first = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut ids = HashSet::new();
    for n in 0..3 {
        let body = json!({
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {"n": n},
        });
        let (status, job) = api(
            &http,
            reqwest::Method::POST,
            format!("{}/v1/jobs", first.base),
            Some(body),
        )
        .await;
        assert_eq!(status, 201, "{job}");
        ids.insert(job["id"].as_str().expect("id").to_string());
    }
    assert!(
        receiver.wait_for(3, Duration::from_secs(30)).await,
        "the 3 deliveries did not start; stderr:\n{}",
        first.stderr()
    );
    let node_id = std::fs::read_to_string(dir.path().join("node-id")).expect("node-id kept");
    let status = first.kill(Duration::from_secs(10)).await;
    assert_eq!(status.signal(), Some(9), "died of SIGKILL: {status:?}");

    receiver.set_default(Reply::ok());
    let second = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("node-id")).expect("node-id"),
        node_id,
        "the same node id after the restart"
    );
    // Far less than the 600 s lease: only taking the jobs back at start can make it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let succeeded = ids_in_state(&http, &second.base, "succeeded").await;
        if succeeded == ids {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of 3 jobs succeeded within 60 s of the restart (lease 600 s); stderr:\n{}",
            succeeded.len(),
            second.stderr()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &ids {
        let (_, job) = api(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/jobs/{id}", second.base),
            None,
        )
        .await;
        let outcomes: Vec<&str> = job["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["outcome"].as_str().expect("outcome"))
            .collect();
        assert_eq!(outcomes, ["lost", "succeeded"], "{job}");
        let lost = &job["attempts"][0];
        assert!(
            lost["error"].as_str().unwrap_or("").contains("restarted"),
            "{job}"
        );
    }
}
