//! Retention beyond jobs: dedupe tombstones of pruned jobs, and the age limits of exposures,
//! expansions, the suppression log and SLO alerts (never their active rows).

use crate::fixtures::{claim, job, schedule, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_core::JobState;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// Claim the one due job and complete it as succeeded at `finished`.
async fn succeed_one(s: &S, finished: DateTime<Utc>, record_exposure: bool) -> String {
    let claimed = s.job_claim(claim(t0(), 1, "node-a")).await.unwrap();
    assert_eq!(claimed.len(), 1, "one job is due");
    let j = &claimed[0];
    let r = s
        .job_complete_many(vec![JobComplete {
            id: j.id.clone(),
            lease_token: j.lease_token.clone().unwrap_or_default(),
            attempt: Attempt {
                job_id: j.id.clone(),
                attempt: j.attempt,
                started_at: finished - Duration::seconds(1),
                finished_at: finished,
                outcome: "succeeded".parse().expect("outcome"),
                error_class: None,
                status_code: Some(200),
                error: None,
                response: None,
                provider_id: None,
                node: None,
            },
            transition: Transition::Succeeded,
            record_exposure,
        }])
        .await
        .unwrap();
    assert_eq!(r.applied, 1);
    j.id.clone()
}

fn keyed(key: &str, schedule_id: Option<&str>) -> JobInsert {
    let mut j = job(t0());
    j.dedupe_key = Some(key.into());
    j.schedule_id = schedule_id.map(str::to_string);
    j.period_key = Some("2026-11-29".into());
    j
}

fn prune_done(older_than: DateTime<Utc>) -> JobPrune {
    JobPrune {
        states: vec![JobState::Succeeded],
        older_than,
        limit: 100,
    }
}

fn retention(table: RetentionTable, before: DateTime<Utc>, limit: i64) -> RetentionPrune {
    RetentionPrune {
        table,
        before,
        limit,
    }
}

/// A scheduled job that succeeded and was pruned leaves its dedupe key behind: firing the
/// same period again (a re-run, a catch-up, a second node), inserting the key in a batch, or
/// retrying with it as an idempotency key creates nothing. Other keys are unaffected.
pub async fn pruned_dedupe_key_is_never_created_again(s: S) {
    let sch = s.schedule_create(schedule("daily", t0())).await.unwrap();
    let fire = |sch: &Schedule| ScheduleFire {
        schedule_id: sch.id.clone(),
        expected_next_fire_at: sch.next_fire_at,
        next_fire_at: sch.next_fire_at,
        last_fire_at: sch.next_fire_at,
        jobs: vec![keyed("daily:2026-11-29", Some(&sch.id))],
        gaps: Vec::new(),
        on_time: false,
        buffer: None,
        now: t0(),
    };
    let first = s.schedule_fire(fire(&sch)).await.unwrap();
    assert_eq!(first.created.len(), 1);
    let finished = t0() + Duration::hours(1);
    let id = succeed_one(&s, finished, false).await;
    let pruned = s
        .job_prune(prune_done(t0() + Duration::days(8)))
        .await
        .unwrap();
    assert_eq!(pruned.jobs, 1);
    assert!(s.job_get(&id).await.unwrap().is_none(), "the job is gone");

    let sch = s.schedule_get(&sch.id).await.unwrap().unwrap();
    let again = s.schedule_fire(fire(&sch)).await.unwrap();
    assert!(
        again.created.is_empty(),
        "re-firing the period creates nothing"
    );
    let many = s
        .job_insert_many(vec![keyed("daily:2026-11-29", Some(&sch.id))])
        .await
        .unwrap();
    assert!(many.is_empty(), "a batch insert creates nothing");
    let one = s.job_insert(keyed("daily:2026-11-29", None)).await;
    let err = one.expect_err("an idempotent insert of a pruned key answers an error");
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("pruned"), "{err}");
    let jobs = s
        .job_list(JobList {
            schedule_id: Some(sch.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(jobs.is_empty(), "no job came back: {jobs:?}");
    // Another period is new.
    assert!(
        s.job_insert(keyed("daily:2026-11-30", None))
            .await
            .unwrap()
            .created
    );
}

/// Tombstones go after their own age, counted from when their job finished, oldest first in
/// bounded batches; then the key can be created again.
pub async fn dedupe_tombstones_are_pruned_after_their_retention(s: S) {
    for (key, h) in [("k1", 1), ("k2", 2), ("k3", 5)] {
        s.job_insert(keyed(key, None)).await.unwrap();
        succeed_one(&s, t0() + Duration::hours(h), false).await;
    }
    let pruned = s
        .job_prune(prune_done(t0() + Duration::days(1)))
        .await
        .unwrap();
    assert_eq!(pruned.jobs, 3);
    let t = RetentionTable::DedupeTombstones;
    let cut = t0() + Duration::hours(3);
    assert_eq!(s.retention_prune(retention(t, cut, 1)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 0);
    assert!(s.job_insert(keyed("k1", None)).await.unwrap().created);
    assert!(s.job_insert(keyed("k2", None)).await.unwrap().created);
    let k3 = s.job_insert(keyed("k3", None)).await;
    assert!(k3.is_err(), "the newer tombstone still holds its key");
}

/// A batch enqueue with a key held only by a pruned job's tombstone fails whole: the
/// `Conflict` of `job_insert`, naming the entry, and none of the batch's other jobs is
/// created.
pub async fn job_insert_batch_with_a_pruned_key_inserts_nothing(s: S) {
    s.job_insert(keyed("gone", None)).await.unwrap();
    succeed_one(&s, t0() + Duration::hours(1), false).await;
    let pruned = s
        .job_prune(prune_done(t0() + Duration::days(1)))
        .await
        .unwrap();
    assert_eq!(pruned.jobs, 1);
    let fresh = keyed("fresh", None);
    let plain = job(t0());
    let err = s
        .job_insert_batch(vec![fresh.clone(), keyed("gone", None), plain.clone()])
        .await
        .expect_err("a pruned key fails the batch");
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("pruned"), "{err}");
    assert_eq!(
        err.entry(),
        Some(1),
        "the error names the entry with the key"
    );
    assert!(s.job_get(&fresh.id).await.unwrap().is_none(), "rolled back");
    assert!(s.job_get(&plain.id).await.unwrap().is_none(), "rolled back");
    let again = s.job_insert_batch(vec![fresh.clone()]).await.unwrap();
    assert!(again[0].created, "the key is free: nothing held it");
}

/// Exposures go after their age; newer ones (and the counts they make) stay.
pub async fn exposures_are_pruned_by_age(s: S) {
    for (h, variant) in [(1, "a"), (5, "b")] {
        let mut j = job(t0());
        j.payload =
            serde_json::json!({"topic": "weekly", "variant": variant, "recipient_id": "rcp_1"});
        j.audience = kairos_core::JobAudience::of_payload(&j.payload);
        s.job_insert(j).await.unwrap();
        succeed_one(&s, t0() + Duration::hours(h), true).await;
    }
    assert_eq!(s.exposure_counts("weekly").await.unwrap().len(), 2);
    let t = RetentionTable::Exposures;
    let cut = t0() + Duration::hours(3);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 0);
    let left = s.exposure_counts("weekly").await.unwrap();
    assert_eq!(
        left,
        vec![ExposureCount {
            variant: "b".into(),
            count: 1
        }]
    );
}

/// Finished expansions go after their age; an unfinished one never does.
pub async fn finished_expansions_are_pruned_and_unfinished_ones_kept(s: S) {
    for period in ["2026-W47", "2026-W48"] {
        let begin = ExpansionBegin {
            schedule_id: "sch_a".into(),
            period_key: period.into(),
            fire_at: t0(),
            now: t0(),
        };
        assert!(s.expansion_begin(begin).await.unwrap());
    }
    s.expansion_advance(ExpansionAdvance {
        schedule_id: "sch_a".into(),
        period_key: "2026-W47".into(),
        expected_cursor: None,
        cursor: None,
        done: true,
        jobs: vec![],
        now: t0(),
    })
    .await
    .unwrap()
    .expect("the expansion advances");
    let t = RetentionTable::Expansions;
    let cut = t0() + Duration::days(40);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 0);
    assert!(
        s.expansion_get("sch_a", "2026-W47")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.expansion_get("sch_a", "2026-W48")
            .await
            .unwrap()
            .is_some()
    );
}

/// Suppression log entries go after their age, but the newest entry of an address that is
/// still suppressed stays (it says why); the suppression itself is never touched.
pub async fn suppression_log_is_pruned_but_keeps_why_an_address_is_suppressed(s: S) {
    for address in ["gone@example.com", "kept@example.com"] {
        s.suppression_apply(SuppressionApply {
            address: address.into(),
            reason: "hard_bounce".into(),
            source_event_id: None,
            now: t0(),
        })
        .await
        .unwrap();
    }
    s.suppression_remove(SuppressionRemove {
        address: "gone@example.com".into(),
        reason: "operator".into(),
        now: t0() + Duration::minutes(1),
    })
    .await
    .unwrap();
    let t = RetentionTable::SuppressionLog;
    let cut = t0() + Duration::days(500);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 2);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 0);
    assert!(
        s.suppression_get("kept@example.com")
            .await
            .unwrap()
            .is_some()
    );
}

/// Resolved SLO alerts whose recovery was notified go after their age; a firing alert, or a
/// recovery still to notify, stays.
pub async fn resolved_slo_alerts_are_pruned_and_firing_ones_kept(s: S) {
    let alert = |key: &str, active: bool, seq: i64, notified_seq: i64| SloAlertPut {
        alert: SloAlert {
            key: key.into(),
            check: "failure_rate".into(),
            active,
            since: t0(),
            message: "m".into(),
            seq,
            notified_seq,
            updated_at: t0(),
            acked_at: None,
        },
    };
    s.slo_alert_put(alert("firing", true, 1, 1)).await.unwrap();
    s.slo_alert_put(alert("resolved", false, 2, 2))
        .await
        .unwrap();
    s.slo_alert_put(alert("pending", false, 2, 1))
        .await
        .unwrap();
    let t = RetentionTable::SloAlerts;
    let cut = t0() + Duration::days(40);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(retention(t, cut, 10)).await.unwrap(), 0);
    let mut keys: Vec<String> = s
        .slo_alert_list()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.key)
        .collect();
    keys.sort();
    assert_eq!(keys, vec!["firing".to_string(), "pending".to_string()]);
}
