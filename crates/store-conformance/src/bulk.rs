//! Bulk cancel and retry: the state rules of the single-job actions, every filter, ids, and
//! batches bounded by `limit` that a caller drains by the cursor.

use crate::fixtures::{claim, job, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_core::{Job, JobKind, JobState};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

async fn get(s: &S, id: &str) -> Job {
    s.job_get(id).await.unwrap().expect("job exists")
}

/// Record the outcome of a claimed job.
async fn finish(s: &S, j: &Job, transition: Transition) {
    let outcome = crate::fixtures::outcome_of(&transition);
    let r = s
        .job_complete_many(vec![JobComplete {
            id: j.id.clone(),
            lease_token: j.lease_token.clone().unwrap_or_default(),
            attempt: Attempt {
                job_id: j.id.clone(),
                attempt: j.attempt,
                started_at: t0(),
                finished_at: t0(),
                outcome: outcome.parse().expect("outcome"),
                error_class: None,
                status_code: None,
                error: None,
                response: None,
                provider_id: None,
                node: Some("node-a".into()),
            },
            transition,
            record_exposure: false,
        }])
        .await
        .unwrap();
    assert_eq!(r.applied, 1);
}

/// Insert `p` and leave it in `state` (via a real claim and completion, or a cancel).
async fn job_in(s: &S, state: JobState, mut p: JobInsert) -> String {
    // Claimable only by the claim below: due far in the past, before every other job.
    p.run_at = t0() - Duration::days(365);
    let id = p.id.clone();
    s.job_insert(p).await.unwrap();
    if state == JobState::Cancelled {
        s.job_cancel(JobCancel {
            id: id.clone(),
            reason: "earlier".into(),
            now: t0(),
        })
        .await
        .unwrap();
        return id;
    }
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    assert_eq!(j.id, id);
    match state {
        JobState::Running => {}
        JobState::Succeeded => finish(s, &j, Transition::Succeeded).await,
        JobState::Skipped => finish(s, &j, Transition::Skipped("why".into())).await,
        JobState::Dead => finish(s, &j, Transition::Dead).await,
        other => panic!("no fixture for {other}"),
    }
    id
}

/// A waiting job (due tomorrow) created at `created`, on `channel`.
fn waiting(created: DateTime<Utc>, channel: Option<&str>) -> JobInsert {
    let mut p = job(t0() + Duration::days(1));
    p.now = created;
    p.channel = channel.map(str::to_string);
    p
}

/// Call a bulk action until the cursor ends: (jobs acted on, calls that found candidates).
async fn drain<F, Fut>(select: JobSelect, mut call: F) -> (u64, Vec<u64>)
where
    F: FnMut(JobSelect) -> Fut,
    Fut: std::future::Future<Output = kairos_store::Result<JobBulkDone>>,
{
    let mut sel = select;
    let mut per_call = Vec::new();
    loop {
        let done = call(sel.clone()).await.unwrap();
        let Some(last) = done.last_id else {
            assert_eq!(done.count, 0, "no candidate, nothing done");
            break;
        };
        per_call.push(done.count);
        sel.after_id = Some(last);
        assert!(per_call.len() < 100, "the cursor must end");
    }
    (per_call.iter().sum(), per_call)
}

fn cancel(s: &S, reason: &str) -> impl FnMut(JobSelect) -> BulkFut {
    let (s, reason) = (s.clone(), reason.to_string());
    move |select| {
        let (s, reason) = (s.clone(), reason.clone());
        Box::pin(async move {
            s.job_bulk_cancel(JobBulkCancel {
                select,
                reason,
                now: t0() + Duration::minutes(1),
            })
            .await
        })
    }
}

fn retry(s: &S) -> impl FnMut(JobSelect) -> BulkFut {
    let s = s.clone();
    move |select| {
        let s = s.clone();
        Box::pin(async move {
            s.job_bulk_retry(JobBulkRetry {
                select,
                now: t0() + Duration::hours(2),
            })
            .await
        })
    }
}

type BulkFut =
    std::pin::Pin<Box<dyn std::future::Future<Output = kairos_store::Result<JobBulkDone>> + Send>>;

fn filter(f: JobFilter, limit: i64) -> JobSelect {
    JobSelect {
        ids: None,
        filter: f,
        after_id: None,
        limit,
    }
}

/// A filtered cancel takes available and running jobs of the filter, never finished ones, in
/// calls of at most `limit` jobs each, and records the reason; a cancelled running job loses
/// its lease.
pub async fn job_bulk_cancel_filter_takes_unfinished_jobs_in_bounded_batches(s: S) {
    let succeeded = job_in(&s, JobState::Succeeded, waiting(t0(), Some("a"))).await;
    let dead = job_in(&s, JobState::Dead, waiting(t0(), Some("a"))).await;
    let running = job_in(&s, JobState::Running, waiting(t0(), Some("a"))).await;
    let mut mine = vec![running.clone()];
    for _ in 0..6 {
        let p = waiting(t0(), Some("a"));
        mine.push(p.id.clone());
        s.job_insert(p).await.unwrap();
    }
    let other = waiting(t0(), Some("b"));
    s.job_insert(other.clone()).await.unwrap();

    let f = JobFilter {
        channel: Some("a".into()),
        ..Default::default()
    };
    let (total, per_call) = drain(filter(f.clone(), 3), cancel(&s, "bulk")).await;
    assert_eq!(total, 7);
    assert_eq!(per_call, vec![3, 3, 1], "batches of at most the limit");
    for id in &mine {
        let j = get(&s, id).await;
        assert_eq!(j.state, JobState::Cancelled, "{id}");
        assert_eq!(j.reason.as_deref(), Some("bulk"));
        assert_eq!(j.finished_at, Some(t0() + Duration::minutes(1)));
        assert!(j.lease_token.is_none() && j.locked_by.is_none());
    }
    assert_eq!(get(&s, &succeeded).await.state, JobState::Succeeded);
    assert_eq!(get(&s, &dead).await.state, JobState::Dead);
    assert_eq!(get(&s, &other.id).await.state, JobState::Available);
    // Nothing is left to cancel: a second run finds no candidate at all.
    assert_eq!(drain(filter(f, 3), cancel(&s, "again")).await.0, 0);
    assert_eq!(get(&s, &running).await.reason.as_deref(), Some("bulk"));
}

/// Every filter field narrows the match, and they combine: state, kind, schedule, channel,
/// the creation window (after inclusive, before exclusive) and the payload's recipient.
pub async fn job_bulk_filters_each_narrow_and_combine(s: S) {
    let day = |d: i64| t0() + Duration::days(d);
    let plain = waiting(day(0), None);
    let mut other_kind = waiting(day(0), None);
    other_kind.kind = JobKind("http".into());
    let mut scheduled = waiting(day(0), None);
    scheduled.schedule_id = Some("sch_1".into());
    let on_b = waiting(day(0), Some("b"));
    let early = waiting(day(-2), None);
    let late = waiting(day(2), None);
    let mut of_alice = waiting(day(0), None);
    of_alice.payload = serde_json::json!({"recipient_id": "alice", "topic": "weekly"});
    of_alice.audience = kairos_core::JobAudience::of_payload(&of_alice.payload);
    for p in [
        &plain,
        &other_kind,
        &scheduled,
        &on_b,
        &early,
        &late,
        &of_alice,
    ] {
        s.job_insert(p.clone()).await.unwrap();
    }
    let running = job_in(&s, JobState::Running, waiting(day(0), None)).await;

    let count = async |f: JobFilter| {
        // Retry cannot touch these (none is dead or cancelled): counting candidates by a
        // cancel of each filter in turn would change them, so cancel and check ids instead.
        let (n, _) = drain(filter(f, 1000), cancel(&s, "f")).await;
        n
    };
    assert_eq!(
        count(JobFilter {
            kind: Some("http".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &other_kind.id).await.state, JobState::Cancelled);
    assert_eq!(
        count(JobFilter {
            schedule_id: Some("sch_1".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &scheduled.id).await.state, JobState::Cancelled);
    assert_eq!(
        count(JobFilter {
            channel: Some("b".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &on_b.id).await.state, JobState::Cancelled);
    assert_eq!(
        count(JobFilter {
            recipient_id: Some("alice".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &of_alice.id).await.state, JobState::Cancelled);
    assert_eq!(
        count(JobFilter {
            state: Some("running".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &running).await.state, JobState::Cancelled);
    // A state the action does not apply to matches nothing.
    assert_eq!(
        count(JobFilter {
            state: Some("succeeded".into()),
            ..Default::default()
        })
        .await,
        0
    );
    // The window [day 0, day 2): `plain` only (created_after is inclusive, created_before
    // exclusive); `early` and `late` stay.
    assert_eq!(
        count(JobFilter {
            created_after: Some(day(0)),
            created_before: Some(day(2)),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &plain.id).await.state, JobState::Cancelled);
    assert_eq!(get(&s, &early.id).await.state, JobState::Available);
    assert_eq!(get(&s, &late.id).await.state, JobState::Available);
    assert_eq!(
        count(JobFilter {
            created_before: Some(day(0)),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(get(&s, &early.id).await.state, JobState::Cancelled);
    assert_eq!(get(&s, &late.id).await.state, JobState::Available);
}

/// By ids: only the named jobs, unknown ids ignored, finished ones left alone; the filter is
/// not consulted.
pub async fn job_bulk_cancel_by_ids_ignores_unknown_and_finished(s: S) {
    let a = waiting(t0(), None);
    let b = waiting(t0(), None);
    let untouched = waiting(t0(), None);
    for p in [&a, &b, &untouched] {
        s.job_insert(p.clone()).await.unwrap();
    }
    let done = job_in(&s, JobState::Succeeded, waiting(t0(), None)).await;
    let select = JobSelect {
        ids: Some(vec![
            b.id.clone(),
            "job_nope".into(),
            done.clone(),
            a.id.clone(),
        ]),
        filter: JobFilter {
            channel: Some("no-such-channel".into()),
            ..Default::default()
        },
        after_id: None,
        limit: 1000,
    };
    let (n, per_call) = drain(select, cancel(&s, "picked")).await;
    assert_eq!((n, per_call), (2, vec![2]));
    assert_eq!(get(&s, &a.id).await.state, JobState::Cancelled);
    assert_eq!(get(&s, &b.id).await.reason.as_deref(), Some("picked"));
    assert_eq!(get(&s, &untouched.id).await.state, JobState::Available);
    assert_eq!(get(&s, &done).await.state, JobState::Succeeded);
}

/// Retry queues dead and cancelled jobs again — now, with a fresh set of attempts, reason
/// cleared — and leaves succeeded, skipped, running and waiting jobs alone.
pub async fn job_bulk_retry_requeues_dead_and_cancelled_only(s: S) {
    let dead = job_in(&s, JobState::Dead, waiting(t0(), None)).await;
    let cancelled = job_in(&s, JobState::Cancelled, waiting(t0(), None)).await;
    let skipped = job_in(&s, JobState::Skipped, waiting(t0(), None)).await;
    let succeeded = job_in(&s, JobState::Succeeded, waiting(t0(), None)).await;
    let running = job_in(&s, JobState::Running, waiting(t0(), None)).await;
    let available = waiting(t0(), None);
    s.job_insert(available.clone()).await.unwrap();
    let before = get(&s, &available.id).await;

    let (n, per_call) = drain(filter(JobFilter::default(), 1), retry(&s)).await;
    assert_eq!(n, 2);
    assert_eq!(per_call, vec![1, 1], "one job per call at limit 1");
    for id in [&dead, &cancelled] {
        let j = get(&s, id).await;
        assert_eq!(j.state, JobState::Available);
        assert_eq!(j.attempt, 0);
        assert_eq!(j.run_at, t0() + Duration::hours(2));
        assert!(j.finished_at.is_none() && j.reason.is_none());
    }
    assert_eq!(get(&s, &skipped).await.state, JobState::Skipped);
    assert_eq!(get(&s, &succeeded).await.state, JobState::Succeeded);
    assert_eq!(get(&s, &running).await.state, JobState::Running);
    assert_eq!(get(&s, &available.id).await, before);
    // The retried jobs are due and claimable.
    let claimed = s
        .job_claim(claim(t0() + Duration::hours(2), 10, "b"))
        .await
        .unwrap();
    let ids: Vec<_> = claimed.iter().map(|j| j.id.clone()).collect();
    assert!(ids.contains(&dead) && ids.contains(&cancelled), "{ids:?}");
    // By ids, a state filter is not needed: only dead/cancelled ids are retried.
    let (n, _) = drain(
        JobSelect {
            ids: Some(vec![skipped.clone(), succeeded.clone()]),
            filter: JobFilter::default(),
            after_id: None,
            limit: 10,
        },
        retry(&s),
    )
    .await;
    assert_eq!(n, 0);
}
