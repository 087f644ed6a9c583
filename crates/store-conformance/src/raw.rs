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

pub use crate::audience_targets::audience_keys_of_an_older_version_are_rewritten_by_migration_0024;

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

/// A database the former migration runner migrated (`kairos_migrations`, no
/// `_sqlx_migrations`) is adopted: `migrate` records every version applied, with the files'
/// checksums, without running any of them again (running 0001 again would fail: its tables
/// exist), and `migration_list` shows them applied.
pub async fn migrations_adopt_the_former_runners_record(s: S, raw: RawSql) {
    raw("DELETE FROM _sqlx_migrations".into()).await;
    raw("CREATE TABLE kairos_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL)".into())
        .await;
    for m in kairos_store::sql::migrate::MIGRATIONS {
        raw(format!(
            "INSERT INTO kairos_migrations (version, name) VALUES ({}, '{}')",
            m.version, m.name
        ))
        .await;
    }
    let before = s.migration_list().await.unwrap();
    assert!(
        before.iter().all(|m| m.applied_at.is_none()),
        "nothing recorded by sqlx yet: {before:?}"
    );
    s.migrate().await.expect("adopted, not re-run");
    let after = s.migration_list().await.unwrap();
    assert_eq!(after.len(), kairos_store::sql::migrate::MIGRATIONS.len());
    assert!(after.iter().all(|m| m.applied_at.is_some()), "{after:?}");
    assert!(s.migration_pending().await.unwrap().is_empty());
    // Recorded as skipped (sqlx's mark for "not executed"), each once.
    let skipped =
        raw("SELECT CAST(COUNT(*) AS TEXT) FROM _sqlx_migrations WHERE execution_time = -1".into())
            .await;
    assert_eq!(
        skipped,
        Some(kairos_store::sql::migrate::MIGRATIONS.len().to_string())
    );
    // Adopting is once: a second start changes nothing.
    s.migrate().await.expect("migrate again");
    let n = raw("SELECT CAST(COUNT(*) AS TEXT) FROM _sqlx_migrations".into()).await;
    assert_eq!(
        n,
        Some(kairos_store::sql::migrate::MIGRATIONS.len().to_string())
    );
}

/// A migration changed after it was applied (its recorded checksum no longer matches the
/// file) stops `migrate` with a `Corrupt` error that says so, instead of running on a schema
/// this build does not expect.
pub async fn migrations_refuse_a_file_changed_after_it_was_applied(s: S, raw: RawSql) {
    s.migrate().await.expect("current");
    raw("UPDATE _sqlx_migrations SET checksum = (SELECT checksum FROM _sqlx_migrations WHERE version = 2) WHERE version = 1".into())
        .await;
    let e = s
        .migrate()
        .await
        .expect_err("a changed migration is refused");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("modified"), "{e}");
}

/// A plain success — succeeded with nothing but its times and node — is held by the job row
/// and writes no attempt row; `attempt_list` still lists it, after the job's earlier attempt
/// rows, and pruning counts it. A success with a status code keeps its row; a plain success
/// under a stale lease changes nothing.
pub async fn plain_success_is_held_by_the_job_row_and_listed_as_its_attempt(s: S, raw: RawSql) {
    use chrono::Duration;
    let plain = |j: &kairos_core::Job, started: i64, node: &str| JobComplete {
        id: j.id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: Attempt {
            job_id: j.id.clone(),
            attempt: j.attempt,
            started_at: t0() + Duration::milliseconds(started),
            finished_at: t0() + Duration::milliseconds(started + 7),
            outcome: kairos_core::AttemptOutcome::Succeeded,
            error_class: None,
            status_code: None,
            error: None,
            response: None,
            provider_id: None,
            node: Some(node.into()),
        },
        transition: Transition::Succeeded,
        record_exposure: false,
    };
    let rows = |id: String| {
        let raw = raw.clone();
        async move {
            raw(format!(
                "SELECT CAST(COUNT(*) AS TEXT) FROM job_attempts WHERE job_id = '{id}'"
            ))
            .await
        }
    };

    // A first-try plain success: no row, one listed attempt.
    let first = job(t0());
    s.job_insert(first.clone()).await.unwrap();
    let j = s
        .job_claim(claim(t0(), 1, "node-a"))
        .await
        .unwrap()
        .remove(0);
    assert!(plain(&j, 3, "node-a").attempt_is_implicit());
    let r = s
        .job_complete_many(vec![plain(&j, 3, "node-a")])
        .await
        .unwrap();
    assert_eq!((r.applied, r.stale.len()), (1, 0));
    assert_eq!(
        rows(j.id.clone()).await.as_deref(),
        Some("0"),
        "no attempt row"
    );
    let done = s.job_get(&j.id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    assert!(done.lease_token.is_none());
    assert_eq!(done.finished_at, Some(t0() + Duration::milliseconds(10)));
    let listed = s.attempt_list(&j.id).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let a = &listed[0];
    assert_eq!(a.attempt, 1);
    assert_eq!(a.outcome, kairos_core::AttemptOutcome::Succeeded);
    assert_eq!(a.started_at, t0() + Duration::milliseconds(3));
    assert_eq!(a.finished_at, t0() + Duration::milliseconds(10));
    assert_eq!(a.node.as_deref(), Some("node-a"));
    assert!(a.status_code.is_none() && a.error.is_none() && a.response.is_none());

    // A failure first (a row), then a plain success: both listed, the failure first.
    let second = job(t0());
    s.job_insert(second.clone()).await.unwrap();
    let j = s
        .job_claim(claim(t0(), 1, "node-b"))
        .await
        .unwrap()
        .remove(0);
    let mut failed = plain(&j, 0, "node-b");
    failed.attempt.outcome = kairos_core::AttemptOutcome::Failed;
    failed.attempt.error_class = Some(kairos_core::ErrorClass::Transient);
    failed.attempt.error = Some("HTTP 503".into());
    failed.transition = Transition::Retry {
        run_at: t0() + Duration::seconds(1),
        refund_attempt: false,
    };
    assert!(!failed.attempt_is_implicit());
    s.job_complete_many(vec![failed]).await.unwrap();
    let later = t0() + Duration::seconds(2);
    let j = s
        .job_claim(claim(later, 1, "node-c"))
        .await
        .unwrap()
        .remove(0);
    // The same completion under a lease that is no longer live: stale, nothing written.
    let mut stale = plain(&j, 2000, "node-c");
    stale.lease_token = "lease_not_live".into();
    let r = s.job_complete_many(vec![stale]).await.unwrap();
    assert_eq!((r.applied, r.stale.len()), (0, 1));
    assert_eq!(
        s.job_get(&j.id).await.unwrap().unwrap().state,
        JobState::Running
    );
    s.job_complete_many(vec![plain(&j, 2000, "node-c")])
        .await
        .unwrap();
    assert_eq!(
        rows(j.id.clone()).await.as_deref(),
        Some("1"),
        "only the failure's row"
    );
    let listed = s.attempt_list(&j.id).await.unwrap();
    let seen: Vec<_> = listed
        .iter()
        .map(|a| (a.attempt, a.outcome, a.node.clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                1,
                kairos_core::AttemptOutcome::Failed,
                Some("node-b".into())
            ),
            (
                2,
                kairos_core::AttemptOutcome::Succeeded,
                Some("node-c".into())
            ),
        ]
    );

    // A success that carries a status code keeps its row, listed once.
    let third = job(t0());
    s.job_insert(third.clone()).await.unwrap();
    let j = s
        .job_claim(claim(later, 1, "node-a"))
        .await
        .unwrap()
        .remove(0);
    let mut with_status = plain(&j, 0, "node-a");
    with_status.attempt.status_code = Some(204);
    assert!(!with_status.attempt_is_implicit());
    s.job_complete_many(vec![with_status]).await.unwrap();
    assert_eq!(rows(j.id.clone()).await.as_deref(), Some("1"));
    let listed = s.attempt_list(&j.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status_code, Some(204));

    // Pruning counts the attempts the job rows held: 1 + 2 + 1.
    let pruned = s
        .job_prune(JobPrune {
            states: vec![JobState::Succeeded],
            older_than: t0() + Duration::days(1),
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(
        pruned,
        JobPruned {
            jobs: 3,
            attempts: 4
        }
    );
    assert!(s.attempt_list(&first.id).await.unwrap().is_empty());
}
