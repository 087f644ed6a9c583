//! Artifact and inbound-event retention on the manual clock: the pruner deletes
//! artifacts stored (and events received) longer ago than their age, in bounded batches, and
//! keeps newer ones; `None` keeps them all.

mod common;

use common::*;
use kairos_engine::EngineConfig;
use kairos_engine::pruner::PrunerConfig;
use kairos_store::{Artifact, ArtifactKey, ArtifactPut};
use std::time::Duration;

async fn put(h: &Harness, period: &str, at: chrono::DateTime<chrono::Utc>) {
    let r = h
        .store
        .artifact_put(ArtifactPut {
            artifact: Artifact {
                name: "ai-news".into(),
                period_key: period.into(),
                content: period.into(),
                data: serde_json::json!({}),
                job_id: None,
                schedule_id: None,
                created_at: at,
            },
            then: vec![],
        })
        .await
        .unwrap();
    assert!(r.created);
}

async fn exists(h: &Harness, period: &str) -> bool {
    h.store
        .artifact_get(ArtifactKey {
            name: "ai-news".into(),
            period_key: period.into(),
        })
        .await
        .unwrap()
        .is_some()
}

#[tokio::test]
async fn pruner_deletes_old_artifacts_in_bounded_batches_s4_8() {
    let t0 = t("2026-10-01T00:00:00Z");
    let cfg = EngineConfig {
        pruner: PrunerConfig {
            artifacts: Some(Duration::from_secs(30 * 86_400)),
            batch: 2,
            max_batches: 2,
            ..PrunerConfig::default()
        },
        ..EngineConfig::default()
    };
    let h = Harness::with_config(t0, cfg, &[]).await;
    for d in 1..=6 {
        put(
            &h,
            &format!("2026-10-{d:02}"),
            t0 + chrono::Duration::days(d - 1),
        )
        .await;
    }
    // 34 days after t0: the artifacts of days 1–5 are older than 30 days, day 6 is not.
    let now = t0 + chrono::Duration::days(34) + chrono::Duration::hours(1);
    let r = h.engine.pruner().run_once(now).await.unwrap();
    assert_eq!(r.artifacts, 4, "two batches of two");
    assert!(r.more, "the run stopped at max_batches with more left");
    let r = h.engine.pruner().run_once(now).await.unwrap();
    assert_eq!(r.artifacts, 1);
    assert!(!r.more);
    for d in 1..=5 {
        assert!(!exists(&h, &format!("2026-10-{d:02}")).await, "day {d}");
    }
    assert!(exists(&h, "2026-10-06").await);
}

#[tokio::test]
async fn artifacts_are_kept_when_their_retention_is_off() {
    let t0 = t("2026-10-01T00:00:00Z");
    let cfg = EngineConfig {
        pruner: PrunerConfig {
            artifacts: None,
            ..PrunerConfig::default()
        },
        ..EngineConfig::default()
    };
    let h = Harness::with_config(t0, cfg, &[]).await;
    put(&h, "2026-10-01", t0).await;
    let r = h
        .engine
        .pruner()
        .run_once(t0 + chrono::Duration::days(5000))
        .await
        .unwrap();
    assert_eq!(r.artifacts, 0);
    assert!(exists(&h, "2026-10-01").await);
    // The default keeps a year.
    assert_eq!(
        PrunerConfig::default().artifacts,
        Some(Duration::from_secs(365 * 86_400))
    );
}

/// S4-8 for inbound provider events: their raw payloads (addresses included) go after their
/// age from receipt (30 days by default), in the pruner's run; newer events stay.
#[tokio::test]
async fn pruner_deletes_inbound_events_older_than_their_age_s4_8() {
    let t0 = t("2026-10-01T00:00:00Z");
    let h = Harness::with_config(t0, EngineConfig::default(), &[]).await;
    for (id, day) in [("evt_old", 0), ("evt_new", 20)] {
        let r = h
            .store
            .inbound_event_record(kairos_store::InboundEventRecord {
                source: "resend".into(),
                id: id.into(),
                event_type: "email.delivery_delayed".into(),
                provider_message_id: None,
                action: kairos_store::action::RECORDED.into(),
                payload: serde_json::json!({"type": "email.delivery_delayed"}),
                suppress: vec![],
                reason: String::new(),
                now: t0 + chrono::Duration::days(day),
            })
            .await
            .unwrap();
        assert!(r.created);
    }
    assert_eq!(
        PrunerConfig::default().events,
        Some(Duration::from_secs(30 * 86_400))
    );
    let r = h
        .engine
        .pruner()
        .run_once(t0 + chrono::Duration::days(31))
        .await
        .unwrap();
    assert_eq!(r.events, 1);
    let get = |id: &'static str| h.store.inbound_event_get("resend", id);
    assert!(get("evt_old").await.unwrap().is_none());
    assert!(get("evt_new").await.unwrap().is_some());
}
