//! The queue sampler and the heartbeat (issue 36) on a real SQLite file and a manual clock:
//! the sampler stores the minute that ended once, with the lateness of the jobs started in
//! it, and prunes after its retention; the heartbeat writes the node's row with its start,
//! its leadership and its running jobs; bad settings name their field.

mod common;

use chrono::Duration;
use common::{Harness, TestHandler, t};
use kairos_engine::EngineConfig;
use kairos_engine::heartbeat::HeartbeatConfig;
use kairos_engine::sampler::{Sampler, SamplerConfig};
use kairos_engine::service::Service;
use kairos_store::{
    Leader, NodeList, QuarterCountList, QuarterCountOf, QueueSampleList, TopicCount,
};

#[tokio::test]
async fn sampler_stores_the_minute_that_ended_once_and_prunes_after_its_retention() {
    let start = t("2026-12-01T08:00:00Z");
    let h = Harness::new(start, &[("test", TestHandler::ok())]).await;
    assert!(h.engine.sampler().leader_only(), "one writer: the leader");
    // Two jobs due at 08:00:00, run at 08:00:30: late by 30 s.
    for _ in 0..2 {
        h.enqueue("test", serde_json::json!({}), Some(start), None)
            .await;
    }
    h.exec(start + Duration::seconds(30)).await;
    let at = start + Duration::seconds(65);
    let r = h.engine.sampler().run_once(at).await.expect("run");
    let s = r.sample.expect("the minute 08:00 is sampled");
    assert_eq!(s.minute, start);
    assert_eq!(s.started, 2);
    assert_eq!(s.lateness_p99_ms, Some(30_000));
    assert_eq!(s.due, 0);
    // Runs later in the same minute store nothing more.
    let again = h
        .engine
        .sampler()
        .run_once(at + Duration::seconds(10))
        .await
        .expect("run");
    assert_eq!(again.sample, None);
    // Two days later the sample is pruned (the next minute's is stored instead).
    let later = start + Duration::days(2) + Duration::minutes(2);
    let r = h.engine.sampler().run_once(later).await.expect("run");
    assert_eq!(r.pruned, 1);
    let left = h
        .store
        .queue_sample_list(QueueSampleList {
            since: start,
            until: later,
        })
        .await
        .expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].minute, later - Duration::minutes(1));
}

/// The sampler counts the last quarter hour that ended two minutes ago once, counts the
/// quarters of the monitor's longer window (deliverability or skip rate) it has no count for
/// four at a time, newest first, and deletes the counts that left that window.
#[tokio::test]
async fn sampler_counts_topic_quarters_once_fills_gaps_and_keeps_the_deliverability_window() {
    let start = t("2026-12-01T08:00:00Z");
    let mut cfg = EngineConfig::default();
    cfg.monitor.deliverability_window = std::time::Duration::from_secs(3600);
    cfg.monitor.skip_window = std::time::Duration::from_secs(1800);
    let h = Harness::with_config(start, cfg, &[("test", TestHandler::ok())]).await;
    h.enqueue(
        "test",
        serde_json::json!({"topic": "weekly"}),
        Some(start + Duration::minutes(50)),
        None,
    )
    .await;
    h.exec(start + Duration::minutes(50)).await;
    let sampler = h.engine.sampler();
    let taken = |at| {
        let store = h.store.clone();
        async move {
            store
                .quarter_count_list(QuarterCountList {
                    since: start - Duration::days(1),
                    until: at,
                    of: QuarterCountOf::Topics,
                })
                .await
                .expect("list")
        }
    };
    // 09:01: 08:45 ended less than two minutes ago; 08:30 is the last settled quarter.
    let at = start + Duration::minutes(61);
    let r = sampler.run_once(at).await.expect("run");
    assert_eq!(
        r.quarters, 3,
        "08:30, then 08:15 and 08:00 (within the hour)"
    );
    let q = |m| start + Duration::minutes(m);
    assert_eq!(taken(at).await.taken, vec![q(0), q(15), q(30)]);
    let r = sampler
        .run_once(at + Duration::seconds(10))
        .await
        .expect("run");
    assert_eq!(r.quarters, 0, "nothing new, no gap");
    let at = start + Duration::minutes(62);
    let r = sampler.run_once(at).await.expect("run");
    assert_eq!(r.quarters, 1, "08:45 has settled");
    let listed = taken(at).await;
    assert_eq!(
        listed.topics,
        vec![(
            q(45),
            TopicCount {
                kind: "test".into(),
                topic: "weekly".into(),
                succeeded: 1,
                ..TopicCount::default()
            }
        )]
    );
    // Two hours later: the counts before 09:45 (the hour's first quarter, 10:47 - 1 h) are
    // deleted, and the gaps since are filled.
    let at = start + Duration::minutes(167);
    let r = sampler.run_once(at).await.expect("run");
    assert_eq!(r.quarters, 4, "10:30, then 10:15, 10:00 and 09:45");
    assert_eq!(taken(at).await.taken, vec![q(105), q(120), q(135), q(150)]);
}

/// The quarters marked counted in the day before `until`.
async fn counted(
    h: &Harness,
    until: chrono::DateTime<chrono::Utc>,
) -> Vec<chrono::DateTime<chrono::Utc>> {
    h.store
        .quarter_count_list(QuarterCountList {
            since: until - Duration::days(1),
            until,
            of: QuarterCountOf::Marks,
        })
        .await
        .expect("list")
        .taken
}

/// The counts are kept for the failure rate's window when it is the monitor's longest: its
/// hour of quarters is counted and kept, though the deliverability and skip windows are half
/// an hour.
#[tokio::test]
async fn sampler_keeps_the_counts_for_the_failure_rate_window_when_it_is_the_longest() {
    let start = t("2026-12-01T08:00:00Z");
    let mut cfg = EngineConfig::default();
    cfg.monitor.deliverability_window = std::time::Duration::from_secs(1800);
    cfg.monitor.skip_window = std::time::Duration::from_secs(1800);
    cfg.monitor.window = std::time::Duration::from_secs(3600);
    let h = Harness::with_config(start, cfg, &[("test", TestHandler::ok())]).await;
    let at = start + Duration::minutes(61);
    let r = h.engine.sampler().run_once(at).await.expect("run");
    assert_eq!(
        r.quarters, 3,
        "08:30, then 08:15 and 08:00 (within the hour)"
    );
    let q = |m| start + Duration::minutes(m);
    assert_eq!(counted(&h, at).await, vec![q(0), q(15), q(30)]);
}

/// A quarter the store leaves uncounted during a backfill (its jobs kept being retried while
/// they were read) is counted on the sampler's next run, not only when the next quarter
/// settles.
#[tokio::test]
async fn sampler_counts_a_quarter_left_uncounted_on_its_next_run() {
    let start = t("2026-12-01T08:00:00Z");
    let h = Harness::new(start, &[("test", TestHandler::ok())]).await;
    let counting = common::CountingStore::new(h.store.clone());
    let sampler = Sampler::new(SamplerConfig::default(), counting.clone())
        .expect("sampler")
        .keep_counts_for(std::time::Duration::from_secs(3600));
    let q = |m| start + Duration::minutes(m);
    counting.quarters_left.lock().unwrap().push(q(15));
    let at = start + Duration::minutes(61);
    let r = sampler.run_once(at).await.expect("run");
    assert_eq!(r.quarters, 2, "08:30 and 08:00; 08:15 left");
    let r = sampler
        .run_once(at + Duration::seconds(10))
        .await
        .expect("run");
    assert_eq!(r.quarters, 1, "08:15 on the next run");
    assert_eq!(counted(&h, at).await, vec![q(0), q(15), q(30)]);
}

#[tokio::test]
async fn heartbeat_writes_the_nodes_start_leadership_and_last_beat() {
    let start = t("2026-12-01T08:00:00Z");
    let h = Harness::new(start, &[("test", TestHandler::ok())]).await;
    let beat = h.engine.heartbeat().clone();
    assert!(!beat.leader_only(), "every node beats");
    let r = beat.run_once(start).await.expect("beat");
    assert!(r.leader);
    beat.run_once(start + Duration::seconds(5))
        .await
        .expect("beat");
    let nodes = h.store.node_list(NodeList::default()).await.expect("list");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id, beat.config().node);
    assert_eq!(nodes[0].started_at, Some(start), "the first beat's instant");
    assert_eq!(
        nodes[0].last_heartbeat_at,
        Some(start + Duration::seconds(5))
    );
    assert!(nodes[0].leader);

    // A follower says so.
    let follower = h.engine.clone().with_leader(Leader::follower());
    let r = follower
        .heartbeat()
        .run_once(start + Duration::seconds(10))
        .await
        .expect("beat");
    assert!(!r.leader);
    let nodes = h.store.node_list(NodeList::default()).await.expect("list");
    assert!(!nodes[0].leader);
}

#[test]
fn sampler_and_heartbeat_settings_name_the_wrong_field() {
    let bad = |cfg: EngineConfig| cfg.validate().expect_err("invalid").to_string();
    let c = EngineConfig {
        sampler: SamplerConfig {
            retention: std::time::Duration::from_secs(60),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(bad(c).contains("sampler.retention"));
    let c = EngineConfig {
        heartbeat: HeartbeatConfig {
            gone_after: std::time::Duration::from_secs(5),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(bad(c).contains("heartbeat.gone_after"));
    let mut c = EngineConfig::default();
    c.heartbeat.node = " ".into();
    assert!(bad(c).contains("heartbeat.node"));
    assert!(EngineConfig::default().validate().is_ok());
}
