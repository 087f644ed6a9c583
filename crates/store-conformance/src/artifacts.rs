//! Artifact and catch-up behaviours.

use crate::fixtures::{job, schedule, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn artifact(name: &str, period: &str, content: &str, at: DateTime<Utc>) -> Artifact {
    Artifact {
        name: name.into(),
        period_key: period.into(),
        content: content.into(),
        data: serde_json::json!({"items": [{"title": content}], "failed_feeds": []}),
        job_id: Some("job_x".into()),
        schedule_id: Some("sch_x".into()),
        created_at: at,
    }
}

fn key(name: &str, period: &str) -> ArtifactKey {
    ArtifactKey {
        name: name.into(),
        period_key: period.into(),
    }
}

/// The first artifact of a period stays: a second put creates nothing, overwrites nothing, and
/// its follow-up jobs are not inserted; the first put's follow-ups are.
pub async fn artifact_put_inserts_once_and_keeps_the_first(s: S) {
    let mut hook = job(t0());
    hook.dedupe_key = Some("digest.created:ai-news:2026-10-20".into());
    let first = s
        .artifact_put(ArtifactPut {
            artifact: artifact("ai-news", "2026-10-20", "first", t0()),
            then: vec![hook.clone()],
        })
        .await
        .unwrap();
    assert!(first.created);
    assert_eq!(first.jobs, vec![hook.id.clone()]);
    let mut hook2 = job(t0());
    hook2.dedupe_key = Some("digest.created:ai-news:2026-10-20:other".into());
    let second = s
        .artifact_put(ArtifactPut {
            artifact: artifact("ai-news", "2026-10-20", "second", t0() + Duration::hours(7)),
            then: vec![hook2.clone()],
        })
        .await
        .unwrap();
    assert!(!second.created);
    assert!(second.jobs.is_empty());
    assert!(
        s.job_get(&hook2.id).await.unwrap().is_none(),
        "a follow-up job of an artifact that was not created must not exist"
    );
    let got = s
        .artifact_get(key("ai-news", "2026-10-20"))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(got, artifact("ai-news", "2026-10-20", "first", t0()));
    assert!(s.job_get(&hook.id).await.unwrap().is_some());
    // Another period and another name are other artifacts.
    assert!(
        s.artifact_put(ArtifactPut {
            artifact: artifact("ai-news", "2026-10-21", "next day", t0()),
            then: vec![],
        })
        .await
        .unwrap()
        .created
    );
    assert!(
        s.artifact_put(ArtifactPut {
            artifact: artifact("other", "2026-10-20", "other name", t0()),
            then: vec![],
        })
        .await
        .unwrap()
        .created
    );
    assert_eq!(
        s.artifact_get(key("nope", "2026-10-20")).await.unwrap(),
        None
    );
}

/// Listing is newest period first, filtered by name, paged by period; pruning deletes only
/// artifacts older than the cut-off, at most `limit` per call.
pub async fn artifact_list_filters_and_prune_is_bounded(s: S) {
    for (i, day) in ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"]
        .iter()
        .enumerate()
    {
        let at = t0() + Duration::days(i as i64);
        for name in ["a", "b"] {
            s.artifact_put(ArtifactPut {
                artifact: artifact(name, day, day, at),
                then: vec![],
            })
            .await
            .unwrap();
        }
    }
    let a = s
        .artifact_list(ArtifactList {
            name: Some("a".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let periods: Vec<_> = a.iter().map(|x| x.period_key.as_str()).collect();
    assert_eq!(
        periods,
        ["2026-10-04", "2026-10-03", "2026-10-02", "2026-10-01"]
    );
    assert!(a.iter().all(|x| x.name == "a"));
    let page = s
        .artifact_list(ArtifactList {
            name: Some("a".into()),
            before_period: Some("2026-10-03".into()),
            limit: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].period_key, "2026-10-02");
    assert_eq!(
        s.artifact_list(ArtifactList::default())
            .await
            .unwrap()
            .len(),
        8
    );

    // Cut-off after the first two days: 4 artifacts are older; a batch of 3 takes 3.
    let cut = t0() + Duration::days(2);
    let n = s
        .artifact_prune(ArtifactPrune {
            before: cut,
            limit: 3,
        })
        .await
        .unwrap();
    assert_eq!(n, 3);
    let n = s
        .artifact_prune(ArtifactPrune {
            before: cut,
            limit: 3,
        })
        .await
        .unwrap();
    assert_eq!(n, 1, "only what is older than the cut-off");
    let left = s.artifact_list(ArtifactList::default()).await.unwrap();
    assert_eq!(left.len(), 4);
    assert!(left.iter().all(|x| x.created_at >= cut));
}

/// Catch-ups: set replaces, due only for active schedules once `next_at` has come, fire
/// advances once (a second fire with the same expectation applies nothing and creates no
/// job), jobs keep their dedupe keys, deleting the schedule deletes its catch-ups.
pub async fn catch_up_set_due_fire_once_and_cascade(s: S) {
    let sch = s.schedule_create(schedule("digest", t0())).await.unwrap();
    let at = t0() + Duration::hours(4);
    s.catch_up_set(CatchUpSet {
        schedule_id: sch.id.clone(),
        entries: vec![
            CatchUp {
                schedule_id: sch.id.clone(),
                at: "18:00".into(),
                next_at: Some(t0() + Duration::hours(9)),
            },
            CatchUp {
                schedule_id: sch.id.clone(),
                at: "13:00".into(),
                next_at: Some(at),
            },
        ],
    })
    .await
    .unwrap();
    let list = s.catch_up_list(&sch.id).await.unwrap();
    assert_eq!(
        list.iter().map(|c| c.at.as_str()).collect::<Vec<_>>(),
        ["13:00", "18:00"]
    );
    assert_eq!(s.catch_up_next_at().await.unwrap(), Some(at));
    let due = |now| CatchUpDue { now, limit: 10 };
    assert!(
        s.catch_up_due(due(at - Duration::seconds(1)))
            .await
            .unwrap()
            .is_empty()
    );
    let d = s.catch_up_due(due(at)).await.unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].at, "13:00");

    let mut j = job(at);
    j.schedule_id = Some(sch.id.clone());
    j.dedupe_key = Some(format!("{}:2026-11-29:catchup:13:00", sch.id));
    let fire = CatchUpFire {
        schedule_id: sch.id.clone(),
        at: "13:00".into(),
        expected_next_at: Some(at),
        next_at: Some(at + Duration::days(1)),
        jobs: vec![j.clone()],
    };
    let r = s.catch_up_fire(fire.clone()).await.unwrap();
    assert!(r.advanced);
    assert_eq!(r.created, vec![j.id.clone()]);
    let again = s.catch_up_fire(fire).await.unwrap();
    assert!(!again.advanced, "a second node's firing applies nothing");
    assert!(again.created.is_empty());
    assert!(s.catch_up_due(due(at)).await.unwrap().is_empty());
    assert_eq!(
        s.catch_up_list(&sch.id).await.unwrap()[0].next_at,
        Some(at + Duration::days(1))
    );

    // Paused: never due. Replacing the list drops the old entries.
    s.schedule_pause(SchedulePause {
        id: sch.id.clone(),
        paused: true,
        next_fire_at: None,
        now: t0(),
    })
    .await
    .unwrap();
    assert!(
        s.catch_up_due(due(at + Duration::days(9)))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.catch_up_next_at().await.unwrap(), None);
    s.catch_up_set(CatchUpSet {
        schedule_id: sch.id.clone(),
        entries: vec![],
    })
    .await
    .unwrap();
    assert!(s.catch_up_list(&sch.id).await.unwrap().is_empty());

    // Deleting the schedule deletes its catch-ups.
    s.catch_up_set(CatchUpSet {
        schedule_id: sch.id.clone(),
        entries: vec![CatchUp {
            schedule_id: sch.id.clone(),
            at: "13:00".into(),
            next_at: Some(at),
        }],
    })
    .await
    .unwrap();
    assert!(s.schedule_delete(&sch.id).await.unwrap());
    assert!(s.catch_up_list(&sch.id).await.unwrap().is_empty());
}
