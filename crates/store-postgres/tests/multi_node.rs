//! Several nodes on one schema: wake-ups through `LISTEN/NOTIFY` and leader election through
//! a session advisory lock. Skipped loudly when PostgreSQL is not reachable (see `common`).

mod common;

use async_trait::async_trait;
use common::{database_url, open};
use kairos_core::{Job, Outcome, SystemClock};
use kairos_engine::handler::{Handler, JobContext};
use kairos_engine::{Engine, EngineConfig};
use kairos_store::Leader;
use kairos_store::prelude::*;
use kairos_store_postgres::{LEADER_KEY_SQL, PostgresStore, listen_wakeups, run_leader_election};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Records the ids of the jobs it runs, and when.
#[derive(Default)]
struct Recorder {
    ran: Mutex<Vec<(String, Instant)>>,
}

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        self.ran
            .lock()
            .expect("lock")
            .push((job.id.clone(), Instant::now()));
        Outcome::Delivered {
            provider_id: None,
            status_code: None,
            response: None,
        }
    }
}

/// A job inserted through one node's store is started by another node well before that
/// node's poll interval (30 s): only the notification can explain it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_inserted_on_one_node_wakes_another() {
    let Some((inserter, _guard)) = open().await else {
        return;
    };
    let schema = inserter.schema().to_string();
    let runner = PostgresStore::connect(&database_url(), &schema)
        .await
        .expect("second store");
    let recorder = Arc::new(Recorder::default());
    let kinds = kairos_engine::Kinds::builtin().with_handler("webhook", recorder.clone());
    let mut cfg = EngineConfig::default().with_node("runner");
    cfg.executor.poll_interval = Duration::from_secs(30);
    cfg.scheduler.poll_interval = Duration::from_secs(30);
    let engine = Engine::new(
        cfg,
        Arc::new(runner.clone()),
        Arc::new(SystemClock),
        kinds.clone(),
    )
    .expect("engine");
    let cancel = CancellationToken::new();
    let listen = tokio::spawn(listen_wakeups(
        database_url(),
        schema.clone(),
        engine.wake(),
        cancel.clone(),
    ));
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    // Let the engine find nothing and go to sleep for its 30 s, and the listener connect.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let now = chrono::Utc::now();
    let mut job = kairos_store_conformance::fixtures::job(now - chrono::Duration::seconds(1));
    job.now = now;
    let id = job.id.clone();
    let inserted = Instant::now();
    assert!(inserter.job_insert(job).await.expect("insert").created);

    let deadline = inserted + Duration::from_secs(5);
    let started = loop {
        if let Some((_, at)) = recorder
            .ran
            .lock()
            .expect("lock")
            .iter()
            .find(|(j, _)| *j == id)
        {
            break *at;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not start within 5 s of its insert on another node (poll interval 30 s)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "started {:?} after the insert on the other node",
        started - inserted
    );
    cancel.cancel();
    let _ = run.await;
    let _ = listen.await;
    runner.close().await;
}

/// The backend pid holding `schema`'s leader lock, if any.
async fn lock_holder(store: &PostgresStore) -> Option<i32> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
           AND l.objsubid = 1
           AND ((l.classid::bigint << 32) | l.objid::bigint) = ({LEADER_KEY_SQL})"
    )))
    .bind(store.schema())
    .fetch_optional(store.pool())
    .await
    .expect("pg_locks")
}

async fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}

/// Two candidates on one schema: exactly one leads. When the leader's session dies (its
/// backend terminated, as when its node crashes or loses the network) the other takes over
/// within 5 s; when a leader stops cleanly, likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_leader_per_schema_and_takeover_when_it_dies() {
    let Some((store, _guard)) = open().await else {
        return;
    };
    let schema = store.schema().to_string();
    let retry = Duration::from_millis(500);
    let start = |leader: Leader, cancel: CancellationToken| {
        tokio::spawn(run_leader_election(
            database_url(),
            schema.clone(),
            leader,
            retry,
            cancel,
        ))
    };
    let (a, b) = (Leader::follower(), Leader::follower());
    let (ca, cb) = (CancellationToken::new(), CancellationToken::new());
    let ta = start(a.clone(), ca.clone());
    let tb = start(b.clone(), cb.clone());
    wait_until("a leader", Duration::from_secs(5), || {
        a.is_leader() || b.is_leader()
    })
    .await;
    // Several rounds of retries: still exactly one.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(
            a.is_leader() ^ b.is_leader(),
            "exactly one leader: a={} b={}",
            a.is_leader(),
            b.is_leader()
        );
    }
    // Another schema has its own leader.
    let (other_store, _other_guard) = open().await.expect("second schema");
    let c = Leader::follower();
    let cc = CancellationToken::new();
    let tc = tokio::spawn(run_leader_election(
        database_url(),
        other_store.schema().to_string(),
        c.clone(),
        retry,
        cc.clone(),
    ));
    wait_until("the other schema's leader", Duration::from_secs(5), || {
        c.is_leader()
    })
    .await;

    // Kill the leader's session.
    let (leader, follower) = if a.is_leader() { (&a, &b) } else { (&b, &a) };
    let pid = lock_holder(&store).await.expect("a lock holder");
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(store.pool())
        .await
        .expect("terminate");
    assert!(killed);
    let took = wait_until(
        "takeover after the leader died",
        Duration::from_secs(5),
        || follower.is_leader(),
    )
    .await;
    eprintln!("takeover {took:?} after the leader's session was terminated");
    wait_until("the old leader noticing", Duration::from_secs(5), || {
        !leader.is_leader()
    })
    .await;

    // And a clean stop hands over too.
    let (ct_leader, ct_follower) = if a.is_leader() {
        (&ca, &cb)
    } else {
        (&cb, &ca)
    };
    let (new_leader, new_follower) = if a.is_leader() { (&a, &b) } else { (&b, &a) };
    ct_leader.cancel();
    let took = wait_until(
        "takeover after a clean stop",
        Duration::from_secs(5),
        || new_follower.is_leader(),
    )
    .await;
    assert!(!new_leader.is_leader());
    eprintln!("takeover {took:?} after the leader stopped");
    ct_follower.cancel();
    cc.cancel();
    for t in [ta, tb, tc] {
        t.await.expect("election task");
    }
    assert!(!a.is_leader() && !b.is_leader() && !c.is_leader());
    other_store.close().await;
}

/// Two nodes' stores (each with its own claim turn) claiming at once, two claimers each, never
/// hold more than `max` jobs of one key running: the check after each claim puts back what a
/// racing claim on the other node already took. Other keys run beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_claiming_at_once_never_run_more_than_a_keys_max() {
    use kairos_store_conformance::fixtures::{claim, keyed, t0};
    let Some((a, guard)) = open().await else {
        return;
    };
    let b = common::second(&guard).await;
    // Rounds with keys of their own, so that a race missed once is likely caught in another.
    let now = t0() + chrono::Duration::seconds(1);
    let mut running = Vec::new();
    for round in 0..5 {
        let mut all = Vec::new();
        for i in 0..60 {
            all.push(keyed(&format!("hot-{round}"), 2, i));
            all.push(keyed(&format!("cold-{round}-{i}"), 1, i));
        }
        a.job_insert_many(all).await.expect("insert");
        let mut tasks = Vec::new();
        for (n, store) in [a.clone(), a.clone(), b.clone(), b.clone()]
            .into_iter()
            .enumerate()
        {
            tasks.push(tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..6 {
                    got.extend(
                        store
                            .job_claim(claim(now, 12, &format!("n{n}")))
                            .await
                            .expect("claim"),
                    );
                }
                got
            }));
        }
        for t in tasks {
            running.extend(t.await.expect("task"));
        }
    }
    // Nothing completes: every job claimed is still running.
    let mut per_key: std::collections::HashMap<String, usize> = Default::default();
    for j in &running {
        if let Some(c) = &j.concurrency {
            *per_key.entry(c.key.clone()).or_default() += 1;
        }
    }
    for round in 0..5 {
        let hot = per_key.get(&format!("hot-{round}")).copied().unwrap_or(0);
        assert!(
            (1..=2).contains(&hot),
            "{hot} jobs of key hot-{round} running at once"
        );
    }
    let cold = per_key.keys().filter(|k| k.starts_with("cold-")).count();
    assert_eq!(cold, 300, "every other key ran");
}
