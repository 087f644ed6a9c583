//! A claim finds every due job, wherever it became available: below the jobs already claimed
//! (an insert with a past `run_at`, a retry due earlier, an admin retry, a rescue) as well as
//! above them. PostgreSQL starts its claims past what it claimed (its claim cursor); these pin
//! that nothing made available behind the cursor is left behind. Likewise a rescue finds every
//! expired lease, also one set after the last rescue but ending before it (PostgreSQL starts
//! its rescues past the leases it read: its rescue floor).

use crate::fixtures::{claim, job, t0};
use crate::jobs::complete;
use chrono::Duration;
use kairos_core::JobState;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// A job inserted with a `run_at` older than every job claimed so far is claimed next.
pub async fn claim_finds_a_job_inserted_below_the_jobs_claimed(s: S) {
    for i in 0..3 {
        s.job_insert(job(t0() + Duration::seconds(i)))
            .await
            .unwrap();
    }
    let now = t0() + Duration::minutes(1);
    assert_eq!(s.job_claim(claim(now, 10, "a")).await.unwrap().len(), 3);
    assert!(s.job_claim(claim(now, 10, "a")).await.unwrap().is_empty());
    let old = job(t0() - Duration::hours(1));
    s.job_insert(old.clone()).await.unwrap();
    let got = s.job_claim(claim(now, 10, "a")).await.unwrap();
    assert_eq!(got.iter().map(|j| &j.id).collect::<Vec<_>>(), vec![&old.id]);
    let many = vec![
        job(t0() - Duration::hours(2)),
        job(t0() - Duration::hours(3)),
    ];
    s.job_insert_many(many).await.unwrap();
    assert_eq!(s.job_claim(claim(now, 10, "a")).await.unwrap().len(), 2);
}

/// A retry due before the jobs claimed after it is claimed when due, not after them.
pub async fn claim_finds_a_retry_due_below_the_jobs_claimed(s: S) {
    let first = job(t0());
    s.job_insert(first.clone()).await.unwrap();
    for i in 1..4 {
        s.job_insert(job(t0() + Duration::seconds(10 * i)))
            .await
            .unwrap();
    }
    let now = t0() + Duration::minutes(1);
    let a = s.job_claim(claim(now, 1, "a")).await.unwrap().remove(0);
    assert_eq!(a.id, first.id);
    assert_eq!(s.job_claim(claim(now, 3, "a")).await.unwrap().len(), 3);
    let retry = Transition::Retry {
        run_at: t0() + Duration::seconds(1),
        refund_attempt: false,
    };
    s.job_complete_many(vec![complete(&a, retry)])
        .await
        .unwrap();
    let again = s.job_claim(claim(now, 10, "a")).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, first.id);
    assert_eq!(again[0].attempt, 2);
}

/// A dead job retried by an operator with a `now` behind the claims is claimed at once.
pub async fn claim_finds_an_admin_retry_below_the_jobs_claimed(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    s.job_complete_many(vec![complete(&j, Transition::Dead)])
        .await
        .unwrap();
    let later = t0() + Duration::hours(1);
    s.job_insert(job(later)).await.unwrap();
    assert_eq!(s.job_claim(claim(later, 10, "a")).await.unwrap().len(), 1);
    let r = s
        .job_retry(JobRetry {
            id: j.id.clone(),
            now: t0() + Duration::minutes(5),
        })
        .await
        .unwrap()
        .expect("retried");
    assert_eq!(r.state, JobState::Available);
    let got = s.job_claim(claim(later, 10, "a")).await.unwrap();
    assert_eq!(got.iter().map(|j| &j.id).collect::<Vec<_>>(), vec![&j.id]);
}

/// A job rescued from a lost lease is claimed again even after later jobs were claimed.
pub async fn claim_finds_a_rescued_job_below_the_jobs_claimed(s: S) {
    let lost = job(t0());
    s.job_insert(lost.clone()).await.unwrap();
    s.job_claim(claim(t0(), 1, "a")).await.unwrap();
    let later = t0() + Duration::minutes(10);
    s.job_insert(job(later)).await.unwrap();
    assert_eq!(s.job_claim(claim(later, 10, "b")).await.unwrap().len(), 1);
    let rescued = s
        .job_rescue(JobRescue {
            now: t0() + Duration::minutes(1),
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap();
    assert_eq!(rescued, vec![lost.id.clone()]);
    let got = s.job_claim(claim(later, 10, "b")).await.unwrap();
    assert_eq!(
        got.iter().map(|j| &j.id).collect::<Vec<_>>(),
        vec![&lost.id]
    );
    assert!(s.job_next_run_at().await.unwrap().is_none());
}

/// The next due job is reported wherever it sits, as long as it is not claimed.
pub async fn next_run_at_reports_a_job_inserted_below_the_jobs_claimed(s: S) {
    s.job_insert(job(t0())).await.unwrap();
    let now = t0() + Duration::minutes(1);
    s.job_claim(claim(now, 10, "a")).await.unwrap();
    assert_eq!(s.job_next_run_at().await.unwrap(), None);
    let old = t0() - Duration::hours(1);
    s.job_insert(job(old)).await.unwrap();
    assert_eq!(s.job_next_run_at().await.unwrap(), Some(old));
}

/// A lease set after a rescue but ending before that rescue's `now` (a clock that went back,
/// as a test's manual clock may) is taken back by the next rescue.
pub async fn rescue_finds_a_lease_set_below_the_last_rescue(s: S) {
    let rescue = |now| JobRescue {
        now,
        limit: 10,
        restarted_node: None,
    };
    let late = t0() + Duration::hours(1);
    assert!(s.job_rescue(rescue(late)).await.unwrap().is_empty());
    let lost = job(t0());
    s.job_insert(lost.clone()).await.unwrap();
    assert_eq!(s.job_claim(claim(t0(), 1, "a")).await.unwrap().len(), 1);
    let rescued = s
        .job_rescue(rescue(late + Duration::seconds(5)))
        .await
        .unwrap();
    assert_eq!(rescued, vec![lost.id]);
}
