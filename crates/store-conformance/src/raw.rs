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
