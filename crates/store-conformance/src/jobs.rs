//! Job behaviours.

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_core::{Job, JobState};
use kairos_store::*;
use std::collections::HashSet;
use std::sync::Arc;

type S = Arc<dyn Store>;

pub(crate) fn attempt(j: &Job, outcome: &str, error: Option<&str>) -> Attempt {
    Attempt {
        job_id: j.id.clone(),
        attempt: j.attempt,
        started_at: t0(),
        finished_at: t0() + Duration::milliseconds(5),
        outcome: outcome.parse().expect("outcome"),
        error_class: error.map(|_| kairos_core::ErrorClass::Transient),
        status_code: Some(if error.is_some() { 503 } else { 200 }),
        error: error.map(str::to_string),
        response: Some("{\"ok\":true}".into()),
        provider_id: None,
        node: Some("node-a".into()),
    }
}

/// The completion of `j` (claimed) by `transition`, with an attempt that fits it.
pub fn complete(j: &Job, transition: Transition) -> JobComplete {
    let (outcome, error) = match &transition {
        Transition::Succeeded => ("succeeded", None),
        Transition::Skipped(_) => ("skipped", None),
        _ => ("failed", Some("HTTP 503")),
    };
    JobComplete {
        id: j.id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: attempt(j, outcome, error),
        transition,
        record_exposure: false,
    }
}

async fn get(s: &S, id: &str) -> Job {
    s.job_get(id).await.unwrap().expect("job exists")
}

/// Every field survives a round trip; instants keep millisecond precision.
pub async fn job_insert_and_get_roundtrips_fields(s: S) {
    let run_at = t0() + Duration::milliseconds(1234);
    let mut p = job(run_at);
    p.schedule_id = Some("sch_x".into());
    p.period_key = Some("2026-W48".into());
    p.fire_at = Some(t0());
    p.dedupe_key = Some("k1".into());
    let r = s.job_insert(p.clone()).await.unwrap();
    assert!(r.created);
    let j = get(&s, &p.id).await;
    assert_eq!(j.state, JobState::Available);
    assert_eq!(j.run_at, run_at, "run_at keeps milliseconds");
    assert_eq!(j.payload, p.payload);
    assert_eq!(j.retry, Some(p.retry.clone()));
    assert_eq!(j.period_key.as_deref(), Some("2026-W48"));
    assert_eq!(j.fire_at, Some(t0()));
    assert_eq!(j.attempt, 0);
    assert_eq!(r.job, j);
    assert!(s.job_get("job_missing").await.unwrap().is_none());
}

/// A policy marked as its kind's default is stored as NULL and read back (and claimed) as
/// `None`: the engine's kind layer resolves it, the store does not know kinds.
pub async fn job_retry_kind_default_reads_back_as_none(s: S) {
    let mut d = job(t0());
    d.retry_is_kind_default = true;
    s.job_insert(d.clone()).await.unwrap();
    assert_eq!(get(&s, &d.id).await.retry, None);
    let claimed = s.job_claim(crate::fixtures::claim(t0(), 1, "n1")).await;
    assert_eq!(claimed.unwrap()[0].retry, None);
}

/// an existing idempotency key returns the existing job and creates nothing.
pub async fn job_idempotency_key_returns_existing_job(s: S) {
    let mut a = job(t0());
    a.dedupe_key = Some("order-42".into());
    let mut b = job(t0());
    b.dedupe_key = Some("order-42".into());
    let ra = s.job_insert(a.clone()).await.unwrap();
    let rb = s.job_insert(b.clone()).await.unwrap();
    assert!(ra.created && !rb.created);
    assert_eq!(rb.job.id, a.id);
    assert!(s.job_get(&b.id).await.unwrap().is_none());
}

/// bulk insert creates each dedupe key once, also within one batch.
pub async fn job_insert_many_skips_existing_dedupe_keys(s: S) {
    let mut first = job(t0());
    first.dedupe_key = Some("d1".into());
    s.job_insert(first).await.unwrap();
    let mut batch = Vec::new();
    for k in ["d1", "d2", "d2", "d3"] {
        let mut j = job(t0());
        j.dedupe_key = Some(k.into());
        batch.push(j);
    }
    batch.push(job(t0())); // no key: always created
    let created = s.job_insert_many(batch).await.unwrap();
    assert_eq!(created.len(), 3, "d2, d3 and the keyless job");
}

/// a batch enqueue answers for each job in order: the new ones created, an existing key with
/// its job, and a key repeated in the batch with the job of its first entry.
pub async fn job_insert_batch_answers_each_job_in_order(s: S) {
    let mut old = job(t0());
    old.dedupe_key = Some("b1".into());
    s.job_insert(old.clone()).await.unwrap();
    let keyed = |k: &str| {
        let mut j = job(t0());
        j.dedupe_key = Some(k.into());
        j
    };
    let batch = vec![job(t0()), keyed("b1"), keyed("b2"), keyed("b2"), job(t0())];
    let got = s.job_insert_batch(batch.clone()).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|r| r.job.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            batch[0].id.as_str(),
            old.id.as_str(),
            batch[2].id.as_str(),
            batch[2].id.as_str(),
            batch[4].id.as_str()
        ]
    );
    let created: Vec<bool> = got.iter().map(|r| r.created).collect();
    assert_eq!(created, [true, false, true, false, true]);
    for r in &got {
        assert_eq!(
            r.job,
            get(&s, &r.job.id).await,
            "the answer is the stored job"
        );
    }
    assert_eq!(got[0].job.state, JobState::Available);
    assert_eq!(got[0].job.payload, batch[0].payload);
    assert!(s.job_get(&batch[1].id).await.unwrap().is_none());
    assert!(s.job_get(&batch[3].id).await.unwrap().is_none());
    assert!(s.job_insert_batch(Vec::new()).await.unwrap().is_empty());
    let due = s.job_claim(claim(t0(), 10, "a")).await.unwrap();
    assert_eq!(
        due.len(),
        4,
        "the three created and the one before: each once"
    );
}

/// a backlog of 250 due jobs with batch 100 drains oldest first over three claims.
pub async fn job_claim_drains_backlog_oldest_first_in_batches(s: S) {
    let mut all = Vec::new();
    for i in 0..250 {
        // Inserted newest first, so insertion order is not what makes the order.
        all.push(job(t0() - Duration::seconds(i)));
    }
    s.job_insert_many(all.clone()).await.unwrap();
    let now = t0();
    let mut seen = Vec::new();
    for (n, expect) in [(1, 100), (2, 100), (3, 50)] {
        let got = s.job_claim(claim(now, 100, "a")).await.unwrap();
        assert_eq!(got.len(), expect, "claim {n}");
        assert!(
            got.windows(2).all(|w| w[0].run_at <= w[1].run_at),
            "oldest first within claim {n}"
        );
        if let (Some(prev), Some(first)) = (seen.last(), got.first()) {
            let prev: &Job = prev;
            assert!(prev.run_at <= first.run_at, "oldest first across claims");
        }
        assert!(
            got.iter()
                .all(|j| j.state == JobState::Running && j.attempt == 1)
        );
        seen.extend(got);
    }
    assert!(s.job_claim(claim(now, 100, "a")).await.unwrap().is_empty());
    let ids: HashSet<_> = seen.iter().map(|j| j.id.clone()).collect();
    assert_eq!(ids.len(), 250);
}

/// A job never starts before its `run_at`, to the millisecond.
pub async fn job_claim_never_takes_a_job_before_its_run_at(s: S) {
    let run_at = t0() + Duration::milliseconds(500);
    let p = job(run_at);
    s.job_insert(p.clone()).await.unwrap();
    let early = s
        .job_claim(claim(run_at - Duration::milliseconds(1), 10, "a"))
        .await
        .unwrap();
    assert!(early.is_empty(), "claimed 1 ms early");
    let on_time = s.job_claim(claim(run_at, 10, "a")).await.unwrap();
    assert_eq!(on_time.len(), 1);
    assert_eq!(on_time[0].id, p.id);
}

/// concurrent claimers never get the same job.
pub async fn job_claim_is_exclusive_under_concurrency(s: S) {
    let jobs: Vec<_> = (0..400)
        .map(|i| job(t0() - Duration::milliseconds(i)))
        .collect();
    s.job_insert_many(jobs).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..20 {
                let got = s
                    .job_claim(claim(t0(), 25, &format!("w{w}")))
                    .await
                    .unwrap();
                if got.is_empty() {
                    break;
                }
                mine.extend(got.into_iter().map(|j| j.id));
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), 400, "every job claimed");
    assert_eq!(unique.len(), 400, "no job claimed twice");
}

/// Completion records the attempt and the final state.
pub async fn job_complete_success_records_attempt(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    let r = s
        .job_complete_many(vec![complete(&j, Transition::Succeeded)])
        .await
        .unwrap();
    assert_eq!(r.applied, 1);
    assert!(r.stale.is_empty());
    let done = get(&s, &j.id).await;
    assert_eq!(done.state, JobState::Succeeded);
    assert!(done.finished_at.is_some() && done.lease_token.is_none());
    let atts = s.attempt_list(&j.id).await.unwrap();
    assert_eq!(atts.len(), 1);
    assert_eq!(atts[0].outcome, "succeeded");
    assert_eq!(atts[0].attempt, 1);
    assert_eq!(atts[0].status_code, Some(200));
    // A succeeded job is not claimable again.
    assert!(
        s.job_claim(claim(t0() + Duration::hours(1), 10, "a"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// One batch of every kind of completion — plain successes, a failure to retry, a success
/// with a status code, a plain success under a lease no longer held — applies each as it
/// would alone: the plain ones held by their rows (listed, no status), the others' attempts
/// recorded with their fields, the stale one refused and its job left running.
pub async fn job_complete_mixed_batch_applies_each_completion(s: S) {
    for _ in 0..5 {
        s.job_insert(job(t0())).await.unwrap();
    }
    let js = s.job_claim(claim(t0(), 5, "a")).await.unwrap();
    assert_eq!(js.len(), 5);
    let plain = |j: &Job| {
        let mut c = complete(j, Transition::Succeeded);
        c.attempt.status_code = None;
        c.attempt.response = None;
        assert!(c.attempt_is_implicit());
        c
    };
    let later = t0() + Duration::minutes(1);
    let mut stale = plain(&js[4]);
    stale.lease_token = "lease_not_live".into();
    let batch = vec![
        plain(&js[0]),
        complete(
            &js[1],
            Transition::Retry {
                run_at: later,
                refund_attempt: false,
            },
        ),
        plain(&js[2]),
        complete(&js[3], Transition::Succeeded),
        stale,
    ];
    let r = s.job_complete_many(batch).await.unwrap();
    assert_eq!(r.applied, 4);
    assert_eq!(r.stale, vec![js[4].id.clone()]);
    for j in [&js[0], &js[2]] {
        let done = get(&s, &j.id).await;
        assert_eq!(done.state, JobState::Succeeded);
        assert!(done.lease_token.is_none() && done.last_error.is_none());
        assert_eq!(done.finished_at, Some(t0() + Duration::milliseconds(5)));
        let atts = s.attempt_list(&j.id).await.unwrap();
        assert_eq!(atts.len(), 1, "{atts:?}");
        assert_eq!(atts[0].outcome, "succeeded");
        assert_eq!(atts[0].status_code, None);
        assert_eq!(atts[0].node.as_deref(), Some("node-a"));
        assert_eq!(atts[0].started_at, t0());
    }
    let retried = get(&s, &js[1].id).await;
    assert_eq!(retried.state, JobState::Available);
    assert_eq!(retried.run_at, later);
    assert_eq!(retried.last_error.as_deref(), Some("HTTP 503"));
    let atts = s.attempt_list(&js[1].id).await.unwrap();
    assert_eq!(atts.len(), 1);
    assert_eq!(
        (atts[0].outcome.as_str(), atts[0].status_code),
        ("failed", Some(503))
    );
    let with_status = s.attempt_list(&js[3].id).await.unwrap();
    assert_eq!(with_status.len(), 1);
    assert_eq!(with_status[0].status_code, Some(200));
    assert_eq!(get(&s, &js[3].id).await.state, JobState::Succeeded);
    let held = get(&s, &js[4].id).await;
    assert_eq!(held.state, JobState::Running);
    assert!(s.attempt_list(&js[4].id).await.unwrap().is_empty());
}

/// A failed attempt goes back to available at the retry time; then to dead.
pub async fn job_complete_retry_then_dead(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    let later = t0() + Duration::minutes(1);
    s.job_complete_many(vec![complete(
        &j,
        Transition::Retry {
            run_at: later,
            refund_attempt: false,
        },
    )])
    .await
    .unwrap();
    let waiting = get(&s, &j.id).await;
    assert_eq!(waiting.state, JobState::Available);
    assert_eq!(waiting.run_at, later);
    assert_eq!(waiting.last_error.as_deref(), Some("HTTP 503"));
    assert!(
        s.job_claim(claim(later - Duration::milliseconds(1), 1, "a"))
            .await
            .unwrap()
            .is_empty()
    );
    let j2 = s.job_claim(claim(later, 1, "a")).await.unwrap().remove(0);
    assert_eq!(j2.attempt, 2);
    s.job_complete_many(vec![complete(&j2, Transition::Dead)])
        .await
        .unwrap();
    let dead = get(&s, &j.id).await;
    assert_eq!(dead.state, JobState::Dead);
    let atts = s.attempt_list(&j.id).await.unwrap();
    assert_eq!(
        atts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(atts.iter().all(|a| a.outcome == "failed"));
}

/// A rate-limited attempt is recorded but gives the attempt back.
pub async fn job_complete_refund_does_not_spend_an_attempt(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    let later = t0() + Duration::seconds(1);
    s.job_complete_many(vec![complete(
        &j,
        Transition::Retry {
            run_at: later,
            refund_attempt: true,
        },
    )])
    .await
    .unwrap();
    assert_eq!(get(&s, &j.id).await.attempt, 0);
    assert_eq!(s.attempt_list(&j.id).await.unwrap().len(), 1);
}

/// Fencing: after a lease was lost and the job re-claimed, the old holder cannot complete it.
pub async fn job_complete_with_stale_lease_token_is_rejected(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let old = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    let after = t0() + Duration::seconds(31);
    assert_eq!(
        s.job_rescue(JobRescue {
            now: after,
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap(),
        vec![old.id.clone()]
    );
    let new = s.job_claim(claim(after, 1, "b")).await.unwrap().remove(0);
    assert_eq!(new.id, old.id);
    let r = s
        .job_complete_many(vec![complete(&old, Transition::Dead)])
        .await
        .unwrap();
    assert_eq!(r.applied, 0);
    assert_eq!(r.stale, vec![old.id.clone()]);
    assert_eq!(
        get(&s, &old.id).await.state,
        JobState::Running,
        "the new holder keeps it"
    );
    let r = s
        .job_complete_many(vec![complete(&new, Transition::Succeeded)])
        .await
        .unwrap();
    assert_eq!(r.applied, 1);
    assert_eq!(get(&s, &old.id).await.state, JobState::Succeeded);
}

/// Renewal extends only leases still held with the given token.
pub async fn job_lease_renew_extends_only_held_leases(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    let until = t0() + Duration::seconds(90);
    let n = s
        .job_lease_renew(JobLeaseRenew {
            jobs: vec![
                (j.id.clone(), j.lease_token.clone().unwrap()),
                (j.id.clone(), "lease_wrong".into()),
            ],
            lease_until: until,
        })
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(get(&s, &j.id).await.lease_expires_at, Some(until));
    // Not expired at +60 s any more.
    assert!(
        s.job_rescue(JobRescue {
            now: t0() + Duration::seconds(60),
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap()
        .is_empty()
    );
}

/// A restarted node gets its own in-flight jobs back at once, before their lease ends; other
/// nodes' live leases are untouched.
pub async fn job_rescue_returns_a_restarted_nodes_jobs_at_once(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    s.job_insert(job(t0())).await.unwrap();
    let mine = s
        .job_claim(claim(t0(), 1, "node-a"))
        .await
        .unwrap()
        .remove(0);
    let theirs = s
        .job_claim(claim(t0(), 1, "node-b"))
        .await
        .unwrap()
        .remove(0);
    let now = t0() + Duration::seconds(1);
    let back = s
        .job_rescue(JobRescue {
            now,
            limit: 10,
            restarted_node: Some("node-a".into()),
        })
        .await
        .unwrap();
    assert_eq!(back, vec![mine.id.clone()], "only the restarted node's job");
    let j = get(&s, &mine.id).await;
    assert_eq!(j.state, JobState::Available);
    assert_eq!(j.last_error.as_deref(), Some("node restarted"));
    let attempts = s.attempt_list(&mine.id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, "lost");
    assert!(
        attempts[0]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("restarted"),
        "{:?}",
        attempts[0].error
    );
    assert_eq!(get(&s, &theirs.id).await.state, JobState::Running);
    // Without the restart, a live lease is left alone.
    let none = s
        .job_rescue(JobRescue {
            now,
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// a job whose lease expired returns to available, with a `lost` attempt recorded.
pub async fn job_rescue_returns_expired_leases(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    assert!(
        s.job_rescue(JobRescue {
            now: t0() + Duration::seconds(29),
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap()
        .is_empty()
    );
    let now = t0() + Duration::seconds(31);
    assert_eq!(
        s.job_rescue(JobRescue {
            now,
            limit: 10,
            restarted_node: None
        })
        .await
        .unwrap(),
        vec![j.id.clone()]
    );
    let back = get(&s, &j.id).await;
    assert_eq!(back.state, JobState::Available);
    assert!(back.lease_token.is_none());
    let atts = s.attempt_list(&j.id).await.unwrap();
    assert_eq!(atts.len(), 1);
    assert_eq!(atts[0].outcome, "lost");
    assert_eq!(s.job_claim(claim(now, 1, "b")).await.unwrap().len(), 1);
}

/// A rescued job whose attempts are spent is dead, not retried forever.
pub async fn job_rescue_dead_letters_spent_jobs(s: S) {
    let mut p = job(t0());
    p.retry = kairos_core::RetryPolicy::uniform(vec![], 1);
    s.job_insert(p.clone()).await.unwrap();
    s.job_claim(claim(t0(), 1, "a")).await.unwrap();
    s.job_rescue(JobRescue {
        now: t0() + Duration::minutes(5),
        limit: 10,
        restarted_node: None,
    })
    .await
    .unwrap();
    assert_eq!(get(&s, &p.id).await.state, JobState::Dead);
}

/// a dead job is never claimed; replay revives it with fresh attempts.
pub async fn job_dead_is_never_claimed_and_replay_revives_it(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    s.job_complete_many(vec![complete(&j, Transition::Dead)])
        .await
        .unwrap();
    assert!(
        s.job_claim(claim(t0() + Duration::days(30), 10, "a"))
            .await
            .unwrap()
            .is_empty()
    );
    let later = t0() + Duration::hours(2);
    let r = s
        .job_retry(JobRetry {
            id: j.id.clone(),
            now: later,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.state, JobState::Available);
    assert_eq!(r.attempt, 0);
    assert_eq!(r.run_at, later);
    let again = s.job_claim(claim(later, 1, "a")).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt, 1);
}

/// Cancel stops a job that has not run; it is never claimed after.
pub async fn job_cancel_stops_available_job(s: S) {
    let p = job(t0());
    s.job_insert(p.clone()).await.unwrap();
    let c = s
        .job_cancel(JobCancel {
            id: p.id.clone(),
            reason: "operator".into(),
            now: t0(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.state, JobState::Cancelled);
    assert_eq!(c.reason.as_deref(), Some("operator"));
    assert!(s.job_claim(claim(t0(), 10, "a")).await.unwrap().is_empty());
    assert!(
        s.job_cancel(JobCancel {
            id: "job_nope".into(),
            reason: "x".into(),
            now: t0()
        })
        .await
        .unwrap()
        .is_none()
    );
}

/// Retrying a succeeded job would send twice: it is left alone.
pub async fn job_retry_refuses_succeeded_job(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    s.job_complete_many(vec![complete(&j, Transition::Succeeded)])
        .await
        .unwrap();
    let r = s
        .job_retry(JobRetry {
            id: j.id.clone(),
            now: t0(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.state, JobState::Succeeded);
    assert!(
        s.job_claim(claim(t0() + Duration::hours(1), 10, "a"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Listing filters on state, kind and schedule, newest first.
pub async fn job_list_filters_by_state_kind_and_schedule(s: S) {
    let mut a = job(t0());
    a.schedule_id = Some("sch_a".into());
    let mut b = job(t0() + Duration::hours(1));
    b.kind = kairos_core::JobKind("http".into());
    s.job_insert(a.clone()).await.unwrap();
    s.job_insert(b.clone()).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    s.job_complete_many(vec![complete(&j, Transition::Dead)])
        .await
        .unwrap();
    let dead = s
        .job_list(JobList {
            state: Some(JobState::Dead),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(dead.iter().map(|j| &j.id).collect::<Vec<_>>(), vec![&a.id]);
    let http = s
        .job_list(JobList {
            kind: Some("http".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(http.len(), 1);
    assert_eq!(http[0].id, b.id);
    let none = s
        .job_list(JobList {
            state: Some(JobState::Dead),
            kind: Some("http".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty());
    let by_sched = s
        .job_list(JobList {
            schedule_id: Some("sch_a".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(by_sched.len(), 1);
    let all = s.job_list(JobList::default()).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].id > all[1].id, "newest first");
    let page = s
        .job_list(JobList {
            before_id: Some(all[0].id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
}

/// The wake-up time is the earliest available `run_at`; counts per state.
pub async fn job_next_run_at_and_counts(s: S) {
    assert_eq!(s.job_next_run_at().await.unwrap(), None);
    let soon = t0() + Duration::milliseconds(250);
    s.job_insert(job(t0() + Duration::hours(1))).await.unwrap();
    s.job_insert(job(soon)).await.unwrap();
    assert_eq!(s.job_next_run_at().await.unwrap(), Some(soon));
    let counts = s.job_count_by_state().await.unwrap();
    assert_eq!(counts, vec![("available".to_string(), 2)]);
}
