//! The queue over time and the nodes' heartbeats (issue 36): a minute's sample is measured
//! and stored once, with the lateness p99 of the jobs started in it; nodes are upserted by
//! their heartbeats, one leader at a time, listed with the jobs running on them, and pruned
//! when long silent.

use crate::fixtures::{claim, job, t0};
use crate::jobs::complete;
use chrono::{DateTime, Duration, Utc};
use kairos_core::Job;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// A success of `j` whose attempt ran from its claim to `at`.
fn succeeded_at(j: &Job, started: DateTime<Utc>, at: DateTime<Utc>) -> JobComplete {
    let mut c = complete(j, Transition::Succeeded);
    c.attempt.started_at = started;
    c.attempt.finished_at = at;
    c
}

/// A sample counts the jobs due, available and running at its instant, and takes the p99
/// (nearest rank) of the lateness of the jobs whose attempt started in its minute, finished
/// or still running; a job started before the minute is not among them. A minute is stored
/// once; an empty minute has no lateness; pruning deletes the minutes before a cut-off.
pub async fn queue_sample_record_measures_depth_running_and_lateness_once_per_minute(s: S) {
    let m = t0() + Duration::hours(1);
    let sec = |n: i64| m + Duration::seconds(n);
    // Started (and finished) before the minute: not among its lateness.
    let early = job(sec(-40));
    s.job_insert(early.clone()).await.unwrap();
    let got = s.job_claim(claim(sec(-30), 10, "n1")).await.unwrap();
    assert_eq!(got.len(), 1);
    s.job_complete_many(vec![succeeded_at(&got[0], sec(-30), sec(-20))])
        .await
        .unwrap();
    // 100 jobs started at m+10s, late by 10 ms, 20 ms, … 1,000 ms.
    let batch: Vec<JobInsert> = (1..=100)
        .map(|i| job(sec(10) - Duration::milliseconds(i * 10)))
        .collect();
    s.job_insert_many(batch).await.unwrap();
    let claimed = s.job_claim(claim(sec(10), 1000, "n1")).await.unwrap();
    assert_eq!(claimed.len(), 100);
    // 60 finish within the minute, 40 still run.
    let done: Vec<JobComplete> = claimed[..60]
        .iter()
        .map(|j| succeeded_at(j, sec(10), sec(20)))
        .collect();
    s.job_complete_many(done).await.unwrap();
    // Three due, two not yet.
    for run_at in [sec(30), sec(31), sec(32), sec(3600), sec(7200)] {
        s.job_insert(job(run_at)).await.unwrap();
    }

    let got = s
        .queue_sample_record(QueueSampleRecord {
            minute: sec(59),
            now: sec(65),
        })
        .await
        .unwrap()
        .expect("the minute's first sample is stored");
    assert_eq!(got.minute, m, "rounded down to its minute");
    assert_eq!((got.due, got.available, got.running), (3, 5, 40));
    assert_eq!(got.started, 100);
    // The 99th of 100 sorted lateness values: 990 ms.
    assert_eq!(got.lateness_p99_ms, Some(990));
    assert_eq!(got.recorded_at, sec(65));

    // A second writer (another node, a second run) changes nothing.
    let again = s
        .queue_sample_record(QueueSampleRecord {
            minute: m,
            now: sec(70),
        })
        .await
        .unwrap();
    assert_eq!(again, None);
    // An empty minute: counts, no lateness.
    let next = s
        .queue_sample_record(QueueSampleRecord {
            minute: sec(60),
            now: sec(125),
        })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!((next.started, next.lateness_p99_ms), (0, None));
    assert_eq!(next.running, 40);

    let all = s
        .queue_sample_list(QueueSampleList {
            since: m,
            until: sec(120),
        })
        .await
        .unwrap();
    assert_eq!(all, vec![got.clone(), next.clone()], "oldest first");
    let pruned = s
        .queue_sample_prune(QueueSamplePrune { before: sec(60) })
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    let left = s
        .queue_sample_list(QueueSampleList {
            since: t0(),
            until: sec(3600),
        })
        .await
        .unwrap();
    assert_eq!(left, vec![next]);
}

/// A sample counts the jobs that succeeded and ended dead in its minute (by `finished_at`),
/// not those of the minutes around it, and its list returns them (the overview's throughput
/// charts sum them).
pub async fn queue_sample_counts_the_jobs_finished_in_its_minute(s: S) {
    let m = t0() + Duration::hours(1);
    let sec = |n: i64| m + Duration::seconds(n);
    let batch: Vec<JobInsert> = (0..6)
        .map(|i| job(sec(-60) + Duration::milliseconds(i)))
        .collect();
    s.job_insert_many(batch).await.unwrap();
    let mut claimed = s.job_claim(claim(sec(-50), 10, "n1")).await.unwrap();
    assert_eq!(claimed.len(), 6);
    claimed.sort_by(|a, b| a.id.cmp(&b.id));
    let at = |j: &Job, t: DateTime<Utc>, transition: Transition| {
        let mut c = complete(j, transition);
        c.attempt.started_at = sec(-50);
        c.attempt.finished_at = t;
        c
    };
    s.job_complete_many(vec![
        at(&claimed[0], sec(-1), Transition::Succeeded),
        at(&claimed[1], sec(0), Transition::Succeeded),
        at(&claimed[2], sec(30), Transition::Succeeded),
        at(&claimed[3], sec(59), Transition::Succeeded),
        at(&claimed[4], sec(45), Transition::Dead),
        at(&claimed[5], sec(60), Transition::Dead),
    ])
    .await
    .unwrap();
    let got = s
        .queue_sample_record(QueueSampleRecord {
            minute: m,
            now: sec(65),
        })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!((got.succeeded, got.dead), (Some(3), Some(1)));
    let listed = s
        .queue_sample_list(QueueSampleList {
            since: m,
            until: sec(60),
        })
        .await
        .unwrap();
    assert_eq!(listed, vec![got]);
}

/// After migrations 0036 and 0037, on a store whose database held, before them, a sample of
/// `t0()` (due 3, available 5, running 2, started 7, lateness p99 120 ms) and a monitor pass at
/// `t0() + 30 s`: both are kept, and what they lack reads as unknown; a new sample has its
/// minute's finished jobs. Each store's migration test writes the rows its own way, then calls
/// this (not part of the suite: it needs a database of the release before).
pub async fn samples_and_pass_of_the_release_before_after_0037(store: &dyn Store) {
    let later = t0() + Duration::minutes(1);
    store
        .queue_sample_record(QueueSampleRecord {
            minute: later,
            now: later + Duration::seconds(65),
        })
        .await
        .expect("record")
        .expect("a new minute");
    let samples = store
        .queue_sample_list(QueueSampleList {
            since: t0(),
            until: t0() + Duration::minutes(2),
        })
        .await
        .expect("list");
    assert_eq!(samples.len(), 2);
    let old = &samples[0];
    assert_eq!(
        (
            old.due,
            old.available,
            old.running,
            old.started,
            old.lateness_p99_ms
        ),
        (3, 5, 2, 7, Some(120))
    );
    assert_eq!((old.succeeded, old.dead), (None, None));
    assert_eq!((samples[1].succeeded, samples[1].dead), (Some(0), Some(0)));
    let pass = store.monitor_pass_get().await.expect("pass").expect("kept");
    assert_eq!(pass.at, t0() + Duration::seconds(30));
    assert_eq!(pass.report, None);
}

fn beat(id: &str, started: DateTime<Utc>, at: DateTime<Utc>, leader: bool) -> NodeHeartbeat {
    NodeHeartbeat {
        id: id.into(),
        started_at: started,
        at,
        leader,
    }
}

/// A heartbeat inserts then updates its node's row; a leader's heartbeat clears the others'
/// leader mark; the list counts each node's running jobs (and names a node holding jobs
/// without a row); pruning forgets nodes silent since before the cut-off.
pub async fn node_heartbeat_upserts_one_leader_and_lists_running_jobs(s: S) {
    let at = |n: i64| t0() + Duration::seconds(n);
    s.node_heartbeat(beat("node-a", at(0), at(0), true))
        .await
        .unwrap();
    s.node_heartbeat(beat("node-b", at(1), at(1), false))
        .await
        .unwrap();
    // Two jobs run on node-b, one on a node without a heartbeat row.
    s.job_insert_many(vec![job(at(0)), job(at(0))])
        .await
        .unwrap();
    assert_eq!(
        s.job_claim(claim(at(2), 2, "node-b")).await.unwrap().len(),
        2
    );
    s.job_insert(job(at(0))).await.unwrap();
    assert_eq!(
        s.job_claim(claim(at(2), 1, "node-old"))
            .await
            .unwrap()
            .len(),
        1
    );
    // node-b takes over the lead; node-a's next heartbeat says it follows.
    s.node_heartbeat(beat("node-b", at(1), at(6), true))
        .await
        .unwrap();
    let list = s.node_list(NodeList::default()).await.unwrap();
    let ids: Vec<&str> = list.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["node-a", "node-b", "node-old"]);
    assert!(!list[0].leader, "a new leader clears the old one's mark");
    assert!(list[1].leader);
    assert_eq!(list[1].last_heartbeat_at, Some(at(6)));
    assert_eq!(list[1].started_at, Some(at(1)));
    assert_eq!(
        (list[0].running, list[1].running, list[2].running),
        (0, 2, 1)
    );
    assert_eq!(list[2].last_heartbeat_at, None, "no heartbeat row");

    let pruned = s
        .node_prune(NodePrune {
            silent_before: at(5),
        })
        .await
        .unwrap();
    assert_eq!(pruned, 1, "node-a was silent since 0 s");
    let ids: Vec<String> = s
        .node_list(NodeList::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.last_heartbeat_at.is_some())
        .map(|n| n.id)
        .collect();
    assert_eq!(ids, ["node-b"]);
}
