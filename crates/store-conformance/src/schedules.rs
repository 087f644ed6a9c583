//! Schedule and endpoint behaviours.

use crate::fixtures::{job, schedule, t0};
use chrono::Duration;
use kairos_core::JobState;
use kairos_store::*;
use std::sync::Arc;

pub use crate::schedule_gaps::*;
pub use crate::schedule_overlap::*;

type S = Arc<dyn Store>;

fn fire(
    sch: &Schedule,
    next: Option<chrono::DateTime<chrono::Utc>>,
    keys: &[&str],
) -> ScheduleFire {
    ScheduleFire {
        schedule_id: sch.id.clone(),
        expected_next_fire_at: sch.next_fire_at,
        next_fire_at: next,
        last_fire_at: sch.next_fire_at,
        jobs: keys
            .iter()
            .map(|k| {
                let mut j = job(t0());
                j.schedule_id = Some(sch.id.clone());
                j.dedupe_key = Some(k.to_string());
                j.period_key = Some("2026-11-29".into());
                j
            })
            .collect(),
        gaps: Vec::new(),
        on_time: false,
        buffer: None,
        now: t0(),
    }
}

/// Create, read, list, update, delete.
pub async fn schedule_create_get_list_update_delete(s: S) {
    let a = s.schedule_create(schedule("a", t0())).await.unwrap();
    assert_eq!(a.state, ScheduleState::Active);
    assert_eq!(a.next_fire_at, Some(t0()));
    assert_eq!(s.schedule_get(&a.id).await.unwrap().as_ref(), Some(&a));
    // Names are unique.
    let dup = s.schedule_create(schedule("a", t0())).await.unwrap_err();
    assert_eq!(dup.kind(), ErrorKind::Conflict);
    let b = s.schedule_create(schedule("b", t0())).await.unwrap();
    let list = s.schedule_list(ScheduleList::default()).await.unwrap();
    assert_eq!(list.len(), 2);
    let mut def = schedule("a-renamed", t0() + Duration::days(1));
    def.payload = serde_json::json!({"v": 2});
    let up = s
        .schedule_update(ScheduleUpdate {
            id: a.id.clone(),
            def,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(up.name, "a-renamed");
    assert_eq!(up.payload["v"], 2);
    assert_eq!(up.next_fire_at, Some(t0() + Duration::days(1)));
    assert!(
        s.schedule_update(ScheduleUpdate {
            id: "sch_nope".into(),
            def: schedule("z", t0())
        })
        .await
        .unwrap()
        .is_none()
    );
    assert!(s.schedule_delete(&b.id).await.unwrap());
    assert!(!s.schedule_delete(&b.id).await.unwrap());
    assert!(s.schedule_get(&b.id).await.unwrap().is_none());
}

/// A paused schedule is not due; resuming sets its next firing.
pub async fn schedule_pause_and_resume(s: S) {
    let a = s.schedule_create(schedule("a", t0())).await.unwrap();
    let p = s
        .schedule_pause(SchedulePause {
            id: a.id.clone(),
            paused: true,
            next_fire_at: None,
            now: t0(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.state, ScheduleState::Paused);
    let due = ScheduleDue {
        now: t0() + Duration::days(9),
        limit: 10,
        lock_until: t0() + Duration::days(10),
        node: "n".into(),
    };
    assert!(s.schedule_due(due.clone()).await.unwrap().is_empty());
    let next = t0() + Duration::days(2);
    let r = s
        .schedule_pause(SchedulePause {
            id: a.id.clone(),
            paused: false,
            next_fire_at: Some(next),
            now: t0(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.state, ScheduleState::Active);
    assert_eq!(r.next_fire_at, Some(next));
    assert_eq!(s.schedule_due(due).await.unwrap().len(), 1);
}

/// due schedules are claimed oldest first, bounded, and locked against a second
/// scheduler until released.
pub async fn schedule_due_claims_oldest_first_and_locks(s: S) {
    for i in 0..5 {
        s.schedule_create(schedule(&format!("s{i}"), t0() - Duration::minutes(i)))
            .await
            .unwrap();
    }
    s.schedule_create(schedule("future", t0() + Duration::minutes(1)))
        .await
        .unwrap();
    let due = |node: &str| ScheduleDue {
        now: t0(),
        limit: 3,
        lock_until: t0() + Duration::seconds(30),
        node: node.into(),
    };
    let first = s.schedule_due(due("a")).await.unwrap();
    assert_eq!(
        first.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        vec!["s4", "s3", "s2"]
    );
    let second = s.schedule_due(due("b")).await.unwrap();
    assert_eq!(
        second.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        vec!["s1", "s0"]
    );
    assert!(
        s.schedule_due(due("c")).await.unwrap().is_empty(),
        "all locked"
    );
    // The lock ends: they are due again (a node that died while expanding is replaced).
    let later = ScheduleDue {
        now: t0() + Duration::seconds(31),
        limit: 10,
        lock_until: t0() + Duration::seconds(60),
        node: "d".into(),
    };
    assert_eq!(s.schedule_due(later).await.unwrap().len(), 5);
}

/// A restarted node releases the claims its previous process held (it died between claiming
/// and firing): they are due again at once, not after the lock; other nodes' claims and
/// expired claims are left alone.
pub async fn schedule_release_frees_a_restarted_nodes_claims_at_once(s: S) {
    for name in ["one", "two"] {
        s.schedule_create(schedule(name, t0() - Duration::minutes(1)))
            .await
            .unwrap();
    }
    let due = |node: &str, limit: i64| ScheduleDue {
        now: t0(),
        limit,
        lock_until: t0() + Duration::seconds(60),
        node: node.into(),
    };
    let held_by_a = s.schedule_due(due("a", 1)).await.unwrap();
    assert_eq!(held_by_a.len(), 1);
    assert_eq!(s.schedule_due(due("b", 1)).await.unwrap().len(), 1);
    assert!(s.schedule_due(due("c", 10)).await.unwrap().is_empty());
    let released = s
        .schedule_release(ScheduleRelease {
            node: "a".into(),
            now: t0() + Duration::seconds(1),
        })
        .await
        .unwrap();
    assert_eq!(released, 1);
    let again = s.schedule_due(due("a", 10)).await.unwrap();
    assert_eq!(again.len(), 1, "a's claim is free at once, b's still held");
    assert_eq!(again[0].id, held_by_a[0].id);
    // An expired claim is not touched (and counted) again.
    let none = s
        .schedule_release(ScheduleRelease {
            node: "b".into(),
            now: t0() + Duration::seconds(61),
        })
        .await
        .unwrap();
    assert_eq!(none, 0);
}

/// Firing creates the jobs and advances `next_fire_at` in one step; a second firing of the
/// same occurrence (a double-fired clock, a second node) changes nothing.
pub async fn schedule_fire_creates_jobs_and_advances_once(s: S) {
    let sch = s.schedule_create(schedule("a", t0())).await.unwrap();
    let next = t0() + Duration::days(1);
    let r = s
        .schedule_fire(fire(&sch, Some(next), &["a:2026-11-29"]))
        .await
        .unwrap();
    assert!(r.advanced);
    assert_eq!(r.created.len(), 1);
    let after = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(after.next_fire_at, Some(next));
    assert_eq!(after.last_fire_at, Some(t0()));
    let again = s
        .schedule_fire(fire(&sch, Some(next), &["a:2026-11-29"]))
        .await
        .unwrap();
    assert!(!again.advanced);
    assert!(again.created.is_empty());
    let jobs = s
        .job_list(JobList {
            schedule_id: Some(sch.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, JobState::Available);
    assert_eq!(jobs[0].period_key.as_deref(), Some("2026-11-29"));
}

/// even when the schedule check passes twice (a manual re-run), the dedupe key makes
/// each job once.
pub async fn schedule_fire_dedupe_key_prevents_duplicate_jobs(s: S) {
    let sch = s.schedule_create(schedule("a", t0())).await.unwrap();
    let r = s
        .schedule_fire(fire(&sch, Some(t0()), &["k1", "k2"]))
        .await
        .unwrap();
    assert_eq!(r.created.len(), 2);
    // next_fire_at unchanged (t0), so the optimistic check passes again: only keys decide.
    let sch = s.schedule_get(&sch.id).await.unwrap().unwrap();
    let r = s
        .schedule_fire(fire(&sch, Some(t0()), &["k1", "k2", "k3"]))
        .await
        .unwrap();
    assert!(r.advanced);
    assert_eq!(r.created.len(), 1, "only k3 is new");
}

/// A one-shot without a next firing is finished and never due again.
pub async fn schedule_fire_finishes_one_shot(s: S) {
    let sch = s.schedule_create(schedule("once", t0())).await.unwrap();
    s.schedule_fire(fire(&sch, None, &["once"])).await.unwrap();
    let after = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(after.state, ScheduleState::Finished);
    assert_eq!(after.next_fire_at, None);
    let due = ScheduleDue {
        now: t0() + Duration::days(400),
        limit: 10,
        lock_until: t0(),
        node: "n".into(),
    };
    assert!(s.schedule_due(due).await.unwrap().is_empty());
}

/// The scheduler's wake-up time ignores paused schedules.
pub async fn schedule_next_fire_at_ignores_paused(s: S) {
    assert_eq!(s.schedule_next_fire_at().await.unwrap(), None);
    let a = s.schedule_create(schedule("a", t0())).await.unwrap();
    s.schedule_create(schedule("b", t0() + Duration::hours(1)))
        .await
        .unwrap();
    assert_eq!(s.schedule_next_fire_at().await.unwrap(), Some(t0()));
    s.schedule_pause(SchedulePause {
        id: a.id,
        paused: true,
        next_fire_at: None,
        now: t0(),
    })
    .await
    .unwrap();
    assert_eq!(
        s.schedule_next_fire_at().await.unwrap(),
        Some(t0() + Duration::hours(1))
    );
}

/// The same URL and secret reuse one endpoint; disabling records when and why.
pub async fn endpoint_upsert_reuses_and_disable_records(s: S) {
    let up = |id: &str, secret: &str| EndpointUpsert {
        id: id.into(),
        url: "http://127.0.0.1:9/hook".into(),
        secret: secret.into(),
        now: t0(),
    };
    let a = s.endpoint_upsert(up("ep_1", "whsec_a")).await.unwrap();
    let b = s.endpoint_upsert(up("ep_2", "whsec_a")).await.unwrap();
    let c = s.endpoint_upsert(up("ep_3", "whsec_b")).await.unwrap();
    assert_eq!(a.id, "ep_1");
    assert_eq!(b.id, "ep_1");
    assert_eq!(c.id, "ep_3");
    s.endpoint_disable(EndpointDisable {
        id: a.id.clone(),
        reason: "HTTP 410 Gone".into(),
        now: t0(),
    })
    .await
    .unwrap();
    let d = s.endpoint_get(&a.id).await.unwrap().unwrap();
    assert_eq!(d.disabled_at, Some(t0()));
    assert_eq!(d.disabled_reason.as_deref(), Some("HTTP 410 Gone"));
    assert!(s.endpoint_get("ep_none").await.unwrap().is_none());
}

/// Endpoints are listed by id (keyset, disabled or enabled only on request) with their last
/// failure; enabling clears the disabled state (an unknown id is `None`); the same URL and
/// secret added again reuse the row still disabled.
pub async fn endpoint_list_enable_and_last_failure(s: S) {
    let up = |id: &str, secret: &str| EndpointUpsert {
        id: id.into(),
        url: "http://127.0.0.1:9/hook".into(),
        secret: secret.into(),
        now: t0(),
    };
    for (id, secret) in [
        ("ep_1", "whsec_a"),
        ("ep_2", "whsec_b"),
        ("ep_3", "whsec_c"),
    ] {
        s.endpoint_upsert(up(id, secret)).await.unwrap();
    }
    let fresh = s.endpoint_get("ep_2").await.unwrap().unwrap();
    assert_eq!((fresh.last_failure_at, fresh.last_failure), (None, None));
    s.endpoint_failure_record(EndpointFailureRecord {
        id: "ep_2".into(),
        error: "HTTP 500".into(),
        now: t0() + chrono::Duration::seconds(1),
    })
    .await
    .unwrap();
    s.endpoint_failure_record(EndpointFailureRecord {
        id: "ep_2".into(),
        error: "endpoint answered 410 Gone; disabling it".into(),
        now: t0() + chrono::Duration::seconds(2),
    })
    .await
    .unwrap();
    s.endpoint_failure_record(EndpointFailureRecord {
        id: "ep_none".into(),
        error: "x".into(),
        now: t0(),
    })
    .await
    .unwrap();
    s.endpoint_disable(EndpointDisable {
        id: "ep_2".into(),
        reason: "HTTP 410 Gone".into(),
        now: t0() + chrono::Duration::seconds(2),
    })
    .await
    .unwrap();

    let ids = |v: Vec<Endpoint>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    let all = s.endpoint_list(EndpointList::default()).await.unwrap();
    assert_eq!(ids(all.clone()), vec!["ep_1", "ep_2", "ep_3"]);
    let two = &all[1];
    assert_eq!(two.disabled_at, Some(t0() + chrono::Duration::seconds(2)));
    assert_eq!(
        two.last_failure_at,
        Some(t0() + chrono::Duration::seconds(2))
    );
    assert_eq!(
        two.last_failure.as_deref(),
        Some("endpoint answered 410 Gone; disabling it"),
        "the latest failure wins"
    );
    let page = s
        .endpoint_list(EndpointList {
            after: Some("ep_1".into()),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(page), vec!["ep_2"]);
    let disabled = s
        .endpoint_list(EndpointList {
            disabled: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(disabled), vec!["ep_2"]);
    let enabled = s
        .endpoint_list(EndpointList {
            disabled: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(enabled), vec!["ep_1", "ep_3"]);

    // The same URL and secret again: the disabled row, still disabled.
    let again = s.endpoint_upsert(up("ep_9", "whsec_b")).await.unwrap();
    assert_eq!(again.id, "ep_2");
    assert!(again.disabled_at.is_some());

    let on = s
        .endpoint_enable(EndpointEnable { id: "ep_2".into() })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((on.disabled_at, on.disabled_reason), (None, None));
    assert_eq!(
        on.last_failure.as_deref(),
        Some("endpoint answered 410 Gone; disabling it")
    );
    assert!(
        s.endpoint_get("ep_2")
            .await
            .unwrap()
            .unwrap()
            .disabled_at
            .is_none()
    );
    assert!(
        s.endpoint_enable(EndpointEnable {
            id: "ep_none".into()
        })
        .await
        .unwrap()
        .is_none()
    );
}
