//! Outcomes and retries through the engine: the default backoff, dead letters and replay,
//! recurring schedules past a dead occurrence, rate limits — on a real SQLite file and a
//! manual clock.

mod common;

use chrono::Duration;
use common::*;
use kairos_core::{ErrorClass, Failure, JobState, Outcome};
use kairos_engine::{Handler, OpsErrorKind};
use kairos_store::ScheduleState;
use std::sync::Arc;

/// The largest jitter the policy adds after `delay`: 10 % of it, at most 30 s.
fn max_jitter(delay: Duration) -> Duration {
    std::cmp::min(delay / 10, secs(30))
}

/// the default notification policy against a handler that always fails transiently:
/// attempts at t, t+1m, t+6m, as seed 000 counts them (each delay counted from the previous
/// attempt, plus at most 10 % jitter, never less), nothing runs a millisecond before each, and
/// after the 3rd failure the job is `dead` with 3 failed attempts recorded.
#[tokio::test]
async fn default_policy_s0_4_retries_after_1m_5m_then_dead_after_3_attempts() {
    let handler = TestHandler::new(|_, _| Outcome::Failed(Failure::transient("smtp down")));
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("notify", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h.enqueue("notify", serde_json::json!({}), None, None).await;

    let delays = [mins(1), mins(5), mins(30)];
    let mut nominal = t0; // t, t+1m, t+6m, t+36m without jitter
    let mut ran_at = vec![];
    let mut prev = None;
    for attempt in 1..=3 {
        let due = h.job(&job.id).await.run_at;
        if let Some((prev_at, delay)) = prev {
            nominal += delay;
            // Never earlier than the policy's delay, at most its jitter later.
            assert!(due >= prev_at + delay, "attempt {attempt}: due {due}");
            assert!(
                due <= prev_at + delay + max_jitter(delay),
                "attempt {attempt}: due {due}"
            );
            assert!(due >= nominal);
            assert_eq!(h.exec(prev_at + delay - ms(1)).await.claimed, 0);
        }
        assert_eq!(
            h.exec(due - ms(1)).await.claimed,
            0,
            "attempt {attempt} early"
        );
        let r = h.exec(due).await;
        assert_eq!(r.claimed, 1, "attempt {attempt}");
        ran_at.push(due);
        if attempt < 3 {
            assert_eq!(r.retried, 1, "attempt {attempt}: {r:?}");
            assert_eq!(h.job(&job.id).await.state, JobState::Available);
            prev = Some((due, delays[attempt - 1]));
        } else {
            assert_eq!(r.dead, 1, "attempt {attempt}: {r:?}");
        }
    }
    // Cumulatively: t, t+1m, t+6m (plus jitter).
    // Jitter adds up: at most 6 s, then 30 s.
    let offsets = [mins(0), mins(1), mins(6)];
    let jitter_sum = [secs(0), secs(6), secs(36)];
    for ((at, offset), jitter) in ran_at.iter().zip(offsets).zip(jitter_sum) {
        assert!(*at >= t0 + offset && *at <= t0 + offset + jitter, "{at}");
    }

    let dead = h.job(&job.id).await;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.attempt, 3);
    assert!(dead.finished_at.is_some());
    let attempts = h.attempts(&job.id).await;
    assert_eq!(attempts.len(), 3);
    for (i, a) in attempts.iter().enumerate() {
        assert_eq!(a.attempt, i as i32 + 1);
        assert_eq!(a.outcome, "failed");
        assert_eq!(a.error_class.map(|c| c.as_str()), Some("transient"));
        assert_eq!(a.error.as_deref(), Some("smtp down"));
        assert_eq!(a.started_at, ran_at[i]);
    }
    assert_eq!(h.exec(t0 + Duration::days(7)).await.claimed, 0);
    assert_eq!(handler.calls_for(&job.id), 3);
}

/// A permanent failure of a notification (a 400, say) is final at once: no retry in a minute,
/// none in 36 minutes; one attempt, dead.
#[tokio::test]
async fn permanent_notification_failure_is_dead_after_one_attempt() {
    let handler = TestHandler::new(|_, _| Outcome::Failed(Failure::permanent("HTTP 400")));
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("notify", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h.enqueue("notify", serde_json::json!({}), None, None).await;
    let r = h.exec(t0).await;
    assert_eq!((r.claimed, r.dead, r.retried), (1, 1, 0), "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Dead);
    assert_eq!(h.exec(t0 + Duration::days(1)).await.claimed, 0);
    assert_eq!(handler.calls_for(&job.id), 1);
}

/// a one-shot job that went dead is parked (stays dead, never claimed), can be
/// replayed with `Kairos::job_retry`, and then succeeds; a succeeded job cannot be replayed.
#[tokio::test]
async fn dead_one_shot_job_is_parked_then_replayed_and_succeeds() {
    // Fails the first time it sees a job, succeeds after.
    let handler = TestHandler::new(|_, n| {
        if n == 0 {
            Outcome::Failed(Failure::transient("provider down"))
        } else {
            Outcome::ok()
        }
    });
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("notify", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h
        .enqueue("notify", serde_json::json!({}), None, Some(max_attempts(1)))
        .await;

    assert_eq!(h.exec(t0).await.dead, 1);
    // Parked: nothing picks it up, however long we wait.
    assert_eq!(h.exec(t0 + Duration::days(3)).await.claimed, 0);
    let parked = h.job(&job.id).await;
    assert_eq!(parked.state, JobState::Dead);
    assert_eq!(parked.last_error.as_deref(), Some("provider down"));

    let t1 = t0 + Duration::days(3) + mins(5);
    h.clock.set(t1);
    let replayed = h.kairos.job_retry(&job.id).await.unwrap();
    assert_eq!(replayed.state, JobState::Available);
    assert_eq!(replayed.attempt, 0, "a replay gets a fresh set of attempts");
    assert_eq!(replayed.run_at, t1);

    let r = h.exec(t1).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);
    let outcomes: Vec<_> = h
        .attempts(&job.id)
        .await
        .into_iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(outcomes, vec!["failed", "succeeded"]);

    let again = h.kairos.job_retry(&job.id).await.unwrap_err();
    assert_eq!(
        again.kind(),
        &OpsErrorKind::Conflict,
        "a succeeded job is never re-sent"
    );
    assert_eq!(handler.calls_for(&job.id), 2);
}

/// a recurring schedule whose occurrence went dead keeps firing at its next regular
/// time: the next period's job is created and runs.
#[tokio::test]
async fn recurring_schedule_keeps_firing_after_an_occurrence_went_dead() {
    // The 2026-05-01 occurrence always fails; later ones succeed.
    let handler = TestHandler::new(|job, _| {
        if job.period_key.as_deref() == Some("2026-05-01") {
            Outcome::Failed(Failure::permanent("bad template"))
        } else {
            Outcome::ok()
        }
    });
    let h = Harness::new(
        t("2026-05-01T08:00:00Z"),
        &[("notify", handler.clone() as Arc<dyn Handler>)],
    )
    .await;
    let mut req = new_schedule("daily", "notify");
    req.cron = Some("0 9 * * *".into());
    req.period = Some("day".into());
    req.retry = Some(max_attempts(1));
    let s = h.kairos.schedule_create(req).await.unwrap();

    let day1 = t("2026-05-01T09:00:00Z");
    assert_eq!(h.sched(day1).await.jobs_created, 1);
    assert_eq!(h.exec(day1).await.dead, 1);
    let s_after = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s_after.state, ScheduleState::Active);
    assert_eq!(s_after.next_fire_at, Some(t("2026-05-02T09:00:00Z")));

    let day2 = t("2026-05-02T09:00:00Z");
    assert_eq!(h.sched(day2 - ms(1)).await.jobs_created, 0);
    assert_eq!(
        h.exec(day2 - ms(1)).await.claimed,
        0,
        "the dead occurrence is not retried"
    );
    assert_eq!(h.sched(day2).await.jobs_created, 1);
    let r = h.exec(day2).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");

    let jobs = h.schedule_jobs(&s.id).await;
    let got: Vec<_> = jobs
        .iter()
        .map(|j| (j.period_key.clone().unwrap(), j.state.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("2026-05-01".to_string(), JobState::Dead),
            ("2026-05-02".to_string(), JobState::Succeeded),
        ]
    );
    assert_eq!(
        h.kairos.schedule_get(&s.id).await.unwrap().next_fire_at,
        Some(t("2026-05-03T09:00:00Z"))
    );
}

/// DESIGN "Outcomes and retries" (rate-limited) with S0-4: a rate-limited failure waits as
/// asked and does not spend an attempt — six of them in a row (more than the policy's 3
/// attempts) never make the job dead, and it then succeeds.
#[tokio::test]
async fn rate_limited_failure_does_not_spend_an_attempt() {
    let handler = TestHandler::new(|_, n| {
        if n < 6 {
            let mut f = Failure::new(ErrorClass::RateLimited, "quota exceeded");
            f.retry_after = Some(std::time::Duration::from_secs(30));
            Outcome::Failed(f)
        } else {
            Outcome::ok()
        }
    });
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[("mail", handler.clone() as Arc<dyn Handler>)]).await;
    let job = h.enqueue("mail", serde_json::json!({}), None, None).await;
    assert_eq!(h.kairos.kinds().retry_of(&job).max_attempts(), 3);

    let mut at = t0;
    for i in 0..6 {
        let r = h.exec(at).await;
        assert_eq!(
            (r.claimed, r.retried, r.dead),
            (1, 1, 0),
            "round {i}: {r:?}"
        );
        let j = h.job(&job.id).await;
        assert_eq!(j.state, JobState::Available);
        assert_eq!(j.attempt, 0, "round {i}: the attempt was given back");
        assert_eq!(j.run_at, at + secs(30), "waits as asked");
        assert_eq!(h.exec(j.run_at - ms(1)).await.claimed, 0);
        at = j.run_at;
    }
    let r = h.exec(at).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1), "{r:?}");
    let done = h.job(&job.id).await;
    assert_eq!(done.state, JobState::Succeeded);
    assert_eq!(done.attempt, 1);
    let attempts = h.attempts(&job.id).await;
    assert_eq!(attempts.len(), 7);
    assert!(attempts[..6].iter().all(
        |a| a.outcome == "failed" && a.error_class.map(|c| c.as_str()) == Some("rate_limited")
    ));
    assert_eq!(attempts[6].outcome, "succeeded");
}
