//! Behaviours that need a row no store ever writes (a corrupt payload or retry policy): the
//! test file gives a back door that runs one SQL statement on the store's database directly.

use crate::fixtures::{claim, job, t0};
use kairos_core::JobState;
use kairos_store::*;
use std::sync::Arc;

/// Run one SQL statement on a store's database directly, bypassing the store, and return the
/// first column of its first row as text, if it returns one. The statement is written in the
/// SQL both databases accept.
pub type RawSql = Arc<
    dyn Fn(String) -> futures::future::BoxFuture<'static, Option<String>> + Send + Sync + 'static,
>;

type S = Arc<dyn Store>;

/// One undecodable row in a claimed batch dies alone: the claim returns its batch-mates under
/// the lease (they run and complete), and the bad row is dead-lettered at once with reason
/// `corrupt` and the decoding error, instead of failing the whole claim and leaving every
/// batch-mate `running` until the rescuer declares it lost.
pub async fn job_claim_isolates_an_undecodable_row(s: S, raw: RawSql) {
    let jobs: Vec<_> = (0..3).map(|_| job(t0())).collect();
    for j in &jobs {
        s.job_insert(j.clone()).await.unwrap();
    }
    let bad = jobs[1].id.clone();
    raw(format!(
        "UPDATE jobs SET retry = '\"not a policy\"' WHERE id = '{bad}'"
    ))
    .await;
    let c = claim(t0(), 10, "node-a");
    let token = c.lease_token.clone();
    let got = s
        .job_claim(c)
        .await
        .expect("the claim succeeds despite one bad row");
    let ids: Vec<_> = got.iter().map(|j| j.id.clone()).collect();
    assert_eq!(ids.len(), 2, "the two good rows are claimed: {ids:?}");
    assert!(!ids.contains(&bad), "the bad row is not handed out");
    for j in &got {
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.lease_token.as_deref(), Some(token.as_str()));
    }
    let dead = s.job_get(&jobs[0].id).await.unwrap().unwrap();
    assert_eq!(
        dead.state,
        JobState::Running,
        "a good batch-mate stays under its lease"
    );
    let state = raw(format!("SELECT state FROM jobs WHERE id = '{bad}'")).await;
    assert_eq!(
        state.as_deref(),
        Some("dead"),
        "the undecodable row is dead at once"
    );
    let reason = raw(format!("SELECT reason FROM jobs WHERE id = '{bad}'")).await;
    assert_eq!(reason.as_deref(), Some("corrupt"));
    let error = raw(format!("SELECT last_error FROM jobs WHERE id = '{bad}'"))
        .await
        .unwrap_or_default();
    assert!(
        error.contains("retry policy"),
        "the error names what is corrupt: {error}"
    );
    // Nothing is left to claim: the bad row is not re-offered.
    let again = s.job_claim(claim(t0(), 10, "node-b")).await.unwrap();
    assert!(again.is_empty(), "nothing left: {again:?}");
    // The good batch-mates stay under the first claim's lease.
    let counts = s.job_count_by_state().await.unwrap();
    let running = counts.iter().find(|(st, _)| st == "running").map(|c| c.1);
    assert_eq!(running, Some(2), "{counts:?}");
}
