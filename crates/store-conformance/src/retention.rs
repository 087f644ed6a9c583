//! Retention and HTTP call targets .

use crate::fixtures::{claim, job, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_core::JobState;
use kairos_store::*;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::retention_tables::*;

type S = Arc<dyn Store>;

/// Insert a job, claim it, and complete it with `transition` at `finished`.
async fn finish(s: &S, transition: Transition, finished: DateTime<Utc>) -> String {
    let p = job(t0());
    let id = p.id.clone();
    assert!(s.job_insert(p).await.unwrap().created);
    let claimed = s.job_claim(claim(t0(), 1, "node-a")).await.unwrap();
    assert_eq!(claimed.len(), 1, "claim the job just inserted");
    let j = &claimed[0];
    let outcome = crate::fixtures::outcome_of(&transition);
    let attempt = Attempt {
        job_id: j.id.clone(),
        attempt: j.attempt,
        started_at: finished - Duration::seconds(1),
        finished_at: finished,
        outcome: outcome.parse().expect("outcome"),
        error_class: None,
        status_code: Some(200),
        error: None,
        response: Some("{}".into()),
        provider_id: None,
        node: Some("node-a".into()),
    };
    let r = s
        .job_complete_many(vec![JobComplete {
            id: j.id.clone(),
            lease_token: j.lease_token.clone().unwrap_or_default(),
            attempt,
            transition,
            record_exposure: false,
        }])
        .await
        .unwrap();
    assert_eq!(r.applied, 1);
    id
}

async fn exists(s: &S, id: &str) -> bool {
    s.job_get(id).await.unwrap().is_some()
}

fn prune(states: &[JobState], older_than: DateTime<Utc>, limit: i64) -> JobPrune {
    JobPrune {
        states: states.to_vec(),
        older_than,
        limit,
    }
}

/// `job_prune` deletes jobs in the given final states that finished before the cut-off,
/// with their attempts, oldest first, at most `limit` per call; newer jobs, other states and
/// unfinished jobs stay. Non-final states in the list delete nothing.
pub async fn job_prune_deletes_old_finished_jobs_and_attempts_in_bounded_batches(s: S) {
    let h = |n| t0() + Duration::hours(n);
    let old_ok = finish(&s, Transition::Succeeded, h(1)).await;
    let old_skip = finish(
        &s,
        Transition::Skipped("suppressed".into()),
        h(1) + Duration::minutes(1),
    )
    .await;
    let new_ok = finish(&s, Transition::Succeeded, h(3)).await;
    let old_dead = finish(&s, Transition::Dead, h(1)).await;
    let waiting = job(t0() + Duration::days(30));
    let waiting_id = waiting.id.clone();
    s.job_insert(waiting).await.unwrap();
    let cancelled = job(t0() + Duration::days(30));
    let cancelled_id = cancelled.id.clone();
    s.job_insert(cancelled).await.unwrap();
    s.job_cancel(JobCancel {
        id: cancelled_id.clone(),
        reason: "test".into(),
        now: h(1) + Duration::minutes(2),
    })
    .await
    .unwrap();
    assert_eq!(s.attempt_list(&old_ok).await.unwrap().len(), 1);

    let done = [JobState::Succeeded, JobState::Skipped, JobState::Cancelled];
    // A batch of one: the oldest (finished at 01:00).
    let r = s.job_prune(prune(&done, h(2), 1)).await.unwrap();
    assert_eq!(
        r,
        JobPruned {
            jobs: 1,
            attempts: 1
        }
    );
    assert!(!exists(&s, &old_ok).await, "the oldest goes first");
    assert!(
        s.attempt_list(&old_ok).await.unwrap().is_empty(),
        "its attempts too"
    );
    assert!(exists(&s, &old_skip).await);
    // The rest of the old ones (a cancelled job has no attempt).
    let r = s.job_prune(prune(&done, h(2), 100)).await.unwrap();
    assert_eq!(
        r,
        JobPruned {
            jobs: 2,
            attempts: 1
        }
    );
    assert!(!exists(&s, &old_skip).await && !exists(&s, &cancelled_id).await);
    // Nothing more is older than the cut-off.
    assert_eq!(
        s.job_prune(prune(&done, h(2), 100)).await.unwrap(),
        JobPruned::default()
    );
    assert!(exists(&s, &new_ok).await, "newer than the cut-off");
    assert_eq!(s.attempt_list(&new_ok).await.unwrap().len(), 1);
    assert!(
        exists(&s, &old_dead).await,
        "dead is not in the states asked"
    );
    assert!(exists(&s, &waiting_id).await);

    // Unfinished states are never pruned, even when asked for.
    let r = s
        .job_prune(prune(
            &[JobState::Available, JobState::Running],
            h(1000),
            100,
        ))
        .await
        .unwrap();
    assert_eq!(r, JobPruned::default());
    assert!(exists(&s, &waiting_id).await);
    // A limit of 0 deletes nothing.
    let dead = [JobState::Dead];
    assert_eq!(
        s.job_prune(prune(&dead, h(2), 0)).await.unwrap(),
        JobPruned::default()
    );
    // Dead letters on their own clock.
    let r = s.job_prune(prune(&dead, h(2), 100)).await.unwrap();
    assert_eq!(
        r,
        JobPruned {
            jobs: 1,
            attempts: 1
        }
    );
    assert!(!exists(&s, &old_dead).await);
}

/// A replayed dead job is unfinished again (`finished_at` cleared): the pruner does not take
/// it from under the replay.
pub async fn job_prune_skips_replayed_jobs(s: S) {
    let dead = finish(&s, Transition::Dead, t0() + Duration::hours(1)).await;
    s.job_retry(JobRetry {
        id: dead.clone(),
        now: t0() + Duration::hours(5),
    })
    .await
    .unwrap();
    let r = s
        .job_prune(prune(&[JobState::Dead], t0() + Duration::days(1), 100))
        .await
        .unwrap();
    assert_eq!(r.jobs, 0);
    assert_eq!(
        s.job_get(&dead).await.unwrap().unwrap().state,
        JobState::Available
    );
}

fn target(id: &str, fingerprint: &str) -> HttpTargetUpsert {
    let mut headers = BTreeMap::new();
    headers.insert("content-type".to_string(), "application/json".to_string());
    headers.insert("x-trace".to_string(), "abc".to_string());
    HttpTargetUpsert {
        id: id.into(),
        fingerprint: fingerprint.into(),
        url: "https://example.com/run?x=1".into(),
        method: "POST".into(),
        headers,
        body: Some("{\"a\":1}".into()),
        timeout_ms: 120_000,
        auth: HttpAuth::Bearer,
        secret: Some("tok_123".into()),
        now: t0(),
    }
}

/// an HTTP target round-trips every field; the same fingerprint returns the stored row
/// (one row per definition), another fingerprint stores another.
pub async fn http_target_upsert_reuses_by_fingerprint_and_roundtrips(s: S) {
    let a = s.http_target_upsert(target("ht_a", "fp1")).await.unwrap();
    assert_eq!(a.id, "ht_a");
    assert_eq!(a.url, "https://example.com/run?x=1");
    assert_eq!(a.method, "POST");
    assert_eq!(a.headers.get("x-trace").map(String::as_str), Some("abc"));
    assert_eq!(a.body.as_deref(), Some("{\"a\":1}"));
    assert_eq!(a.timeout_ms, 120_000);
    assert_eq!(a.auth, HttpAuth::Bearer);
    assert_eq!(a.secret.as_deref(), Some("tok_123"));
    assert_eq!(a.created_at, t0());
    let again = s.http_target_upsert(target("ht_b", "fp1")).await.unwrap();
    assert_eq!(again, a, "same fingerprint: the stored target");
    let mut other = target("ht_c", "fp2");
    other.auth = HttpAuth::None;
    other.secret = None;
    other.body = None;
    let c = s.http_target_upsert(other).await.unwrap();
    assert_eq!(
        (c.id.as_str(), c.auth, c.body),
        ("ht_c", HttpAuth::None, None)
    );
    assert_eq!(s.http_target_get("ht_a").await.unwrap(), Some(a));
    assert_eq!(s.http_target_get("ht_b").await.unwrap(), None);
}

/// A `limit` of hundreds (the pruner's batch is 1,000) deletes exactly `limit` jobs, with their
/// attempts, and the next call the rest.
pub async fn job_prune_deletes_exactly_a_limit_of_hundreds(s: S) {
    s.job_insert_many((0..450).map(|_| job(t0())).collect())
        .await
        .unwrap();
    let claimed = s.job_claim(claim(t0(), 500, "node-a")).await.unwrap();
    assert_eq!(claimed.len(), 450);
    let done: Vec<JobComplete> = claimed
        .iter()
        .map(|j| crate::jobs::complete(j, Transition::Succeeded))
        .collect();
    assert_eq!(s.job_complete_many(done).await.unwrap().applied, 450);
    let later = t0() + Duration::hours(1);
    let first = s
        .job_prune(prune(&[JobState::Succeeded], later, 300))
        .await
        .unwrap();
    assert_eq!(
        first,
        JobPruned {
            jobs: 300,
            attempts: 300
        }
    );
    let rest = s
        .job_prune(prune(&[JobState::Succeeded], later, 300))
        .await
        .unwrap();
    assert_eq!(rest.jobs, 150);
    assert!(
        s.job_list(JobList {
            limit: Some(10),
            ..JobList::default()
        })
        .await
        .unwrap()
        .is_empty()
    );
}
