//! Overlap policies (issue 34) through the scheduler on a real SQLite file and a manual clock:
//! an every-minute schedule whose 09:00 occurrence is still open (waiting, running or
//! waiting for a retry) when 09:01 comes.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Failure, JobState, Outcome};
use kairos_store::{JobClaim, Schedule};

async fn every_minute(h: &Harness, name: &str, overlap: Option<&str>) -> Schedule {
    let mut req = new_schedule(name, "noop");
    req.cron = Some("* * * * *".into());
    req.overlap = overlap.map(str::to_string);
    h.kairos.schedule_create(req).await.expect("create")
}

/// Claim every due job at `at` without running it: the jobs are `running`.
async fn claim_all(h: &Harness, at: DateTime<Utc>) -> usize {
    h.store
        .job_claim(JobClaim {
            now: at,
            limit: 100,
            node: "elsewhere".into(),
            lease_token: new_id(IdPrefix::Lease, at),
            lease_until: at + mins(10),
        })
        .await
        .expect("claim")
        .len()
}

async fn fire_times(h: &Harness, s: &Schedule) -> Vec<DateTime<Utc>> {
    h.schedule_jobs(&s.id)
        .await
        .iter()
        .filter_map(|j| j.fire_at)
        .collect()
}

/// `allow` (the default) runs the next firing beside an occurrence that is still running.
#[tokio::test]
async fn overlap_allow_runs_beside_a_running_occurrence() {
    let h = Harness::new(t("2026-06-01T08:59:30Z"), &[("noop", TestHandler::ok())]).await;
    let s = every_minute(&h, "allow", None).await;
    assert_eq!(s.overlap, kairos_core::schedule::Overlap::Allow);
    assert_eq!(h.sched(t("2026-06-01T09:00:00Z")).await.jobs_created, 1);
    assert_eq!(claim_all(&h, t("2026-06-01T09:00:01Z")).await, 1);
    let r = h.sched(t("2026-06-01T09:01:00Z")).await;
    assert_eq!((r.jobs_created, r.overlap_skipped), (1, 0), "{r:?}");
}

/// `skip`: a firing whose previous occurrence is waiting for a retry is not run and is
/// recorded as missed with reason `overlap`, once per firing; once the occurrence has ended,
/// the next firing runs. (A running occurrence is open too: see the `cancel_previous` test.)
#[tokio::test]
async fn overlap_skip_records_a_missed_firing_while_the_previous_is_open() {
    // Fails once (its retry is 5 minutes later), then succeeds.
    let handler = TestHandler::new(|_, calls| {
        if calls == 0 {
            Outcome::Failed(Failure::transient("HTTP 503"))
        } else {
            Outcome::ok()
        }
    });
    let h = Harness::new(t("2026-06-01T08:59:30Z"), &[("noop", handler)]).await;
    let mut req = new_schedule("skip", "noop");
    req.cron = Some("* * * * *".into());
    req.overlap = Some("skip".into());
    req.retry = Some(
        serde_json::from_value(serde_json::json!({"delays": ["5m"], "max_attempts": 3})).unwrap(),
    );
    let s = h.kairos.schedule_create(req).await.expect("create");
    assert_eq!(h.sched(t("2026-06-01T09:00:00Z")).await.jobs_created, 1);
    let job = h.schedule_jobs(&s.id).await[0].clone();
    h.exec(t("2026-06-01T09:00:05Z")).await;
    let waiting = h.job(&job.id).await;
    assert_eq!((waiting.state, waiting.attempt), (JobState::Available, 1));
    // Five minutes later, with jitter: waiting for its retry through 09:05.
    assert!(
        waiting.run_at > t("2026-06-01T09:05:00Z") && waiting.run_at < t("2026-06-01T09:06:00Z"),
        "{}",
        waiting.run_at
    );
    for minute in 1..=5 {
        let at = t("2026-06-01T09:00:00Z") + mins(minute);
        let r = h.sched(at).await;
        assert_eq!((r.jobs_created, r.overlap_skipped), (0, 1), "{at}: {r:?}");
    }
    // The retry succeeds: the occurrence has ended and the next firing runs.
    h.exec(waiting.run_at).await;
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);
    let r = h.sched(t("2026-06-01T09:06:00Z")).await;
    assert_eq!((r.jobs_created, r.overlap_skipped), (1, 0), "{r:?}");
    assert_eq!(
        fire_times(&h, &s).await,
        [t("2026-06-01T09:00:00Z"), t("2026-06-01T09:06:00Z")]
    );
    // Each skipped firing is a missed occurrence with reason `overlap`.
    let gaps = h.kairos.schedule_gap_list(&s.id, 100).await.unwrap();
    let mut skipped: Vec<_> = gaps
        .iter()
        .map(|g| (g.gap.reason.clone(), g.gap.first_fire_at, g.gap.count))
        .collect();
    skipped.sort();
    let want: Vec<_> = (1..=5)
        .map(|m| {
            (
                "overlap".to_string(),
                t("2026-06-01T09:00:00Z") + mins(m),
                1,
            )
        })
        .collect();
    assert_eq!(skipped, want);
}

/// `buffer_one`: the first firing while the previous occurrence is open is held and runs when
/// that occurrence ends; a second firing while one is held is skipped.
#[tokio::test]
async fn overlap_buffer_one_holds_one_firing_until_the_previous_ends() {
    let h = Harness::new(t("2026-06-01T08:59:30Z"), &[("noop", TestHandler::ok())]).await;
    let s = every_minute(&h, "buffer", Some("buffer_one")).await;
    assert_eq!(h.sched(t("2026-06-01T09:00:00Z")).await.jobs_created, 1);
    let r = h.sched(t("2026-06-01T09:01:00Z")).await;
    assert_eq!((r.jobs_created, r.buffered), (0, 1), "{r:?}");
    let held = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(held.buffered_fire_at, Some(t("2026-06-01T09:01:00Z")));
    assert_eq!(held.last_fire_at, Some(t("2026-06-01T09:00:00Z")));
    let r = h.sched(t("2026-06-01T09:02:00Z")).await;
    assert_eq!((r.jobs_created, r.overlap_skipped), (0, 1), "{r:?}");
    // Nothing ended yet: a tick between firings releases nothing.
    let r = h.sched(t("2026-06-01T09:02:10Z")).await;
    assert_eq!(r.buffers_released, 0, "{r:?}");
    // The 09:00 job runs and succeeds; the next tick runs the held 09:01 firing.
    h.exec(t("2026-06-01T09:02:20Z")).await;
    let r = h.sched(t("2026-06-01T09:02:30Z")).await;
    assert_eq!((r.jobs_created, r.buffers_released), (1, 1), "{r:?}");
    assert_eq!(
        fire_times(&h, &s).await,
        [t("2026-06-01T09:00:00Z"), t("2026-06-01T09:01:00Z")]
    );
    let after = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(after.buffered_fire_at, None);
    assert_eq!(after.last_fire_at, Some(t("2026-06-01T09:01:00Z")));
    // The held firing's job is due at once (its nominal time is past).
    let jobs = h.schedule_jobs(&s.id).await;
    assert_eq!(jobs[1].run_at, t("2026-06-01T09:01:00Z"));
    // 09:03: the released 09:01 occurrence is open now, so 09:03 is held in turn.
    let r = h.sched(t("2026-06-01T09:03:00Z")).await;
    assert_eq!((r.jobs_created, r.buffered), (0, 1), "{r:?}");
    let gaps = h.kairos.schedule_gap_list(&s.id, 10).await.unwrap();
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0].gap.reason, "overlap");
    assert_eq!(gaps[0].gap.first_fire_at, t("2026-06-01T09:02:00Z"));
}

/// `cancel_previous`: the previous occurrence's open jobs (here one running, one waiting) are
/// cancelled with a reason, then the new firing runs.
#[tokio::test]
async fn overlap_cancel_previous_cancels_the_open_occurrence_then_runs() {
    let h = Harness::new(t("2026-06-01T08:59:30Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("cancel", "noop");
    req.cron = Some("* * * * *".into());
    req.overlap = Some("cancel_previous".into());
    // Two channels: one occurrence, two jobs. Nothing is sent (the executor does not run).
    let target = serde_json::json!({"url": "http://127.0.0.1:9/hook", "secret": SECRET});
    req.channels = Some(
        serde_json::from_value(serde_json::json!([
            {"name": "a", "kind": "webhook", "webhook": target},
            {"name": "b", "kind": "webhook", "webhook": target},
        ]))
        .unwrap(),
    );
    req.kind = None;
    let s = h.kairos.schedule_create(req).await.expect("create");
    assert_eq!(h.sched(t("2026-06-01T09:00:00Z")).await.jobs_created, 2);
    let first: Vec<_> = h.schedule_jobs(&s.id).await;
    // One of the two runs (claimed), the other still waits.
    h.store
        .job_claim(JobClaim {
            now: t("2026-06-01T09:00:30Z"),
            limit: 1,
            node: "elsewhere".into(),
            lease_token: new_id(IdPrefix::Lease, t("2026-06-01T09:00:30Z")),
            lease_until: t("2026-06-01T09:10:00Z"),
        })
        .await
        .unwrap();
    let states: Vec<_> = {
        let mut v = Vec::new();
        for j in &first {
            v.push(h.job(&j.id).await.state);
        }
        v
    };
    assert!(states.contains(&JobState::Running) && states.contains(&JobState::Available));
    let r = h.sched(t("2026-06-01T09:01:00Z")).await;
    assert_eq!((r.jobs_created, r.overlap_cancelled), (2, 2), "{r:?}");
    for j in &first {
        let j = h.job(&j.id).await;
        assert_eq!(j.state, JobState::Cancelled);
        let reason = j.reason.unwrap_or_default();
        assert!(reason.contains("cancel_previous"), "{reason}");
    }
    let jobs = h.schedule_jobs(&s.id).await;
    let new: Vec<_> = jobs
        .iter()
        .filter(|j| j.fire_at == Some(t("2026-06-01T09:01:00Z")))
        .collect();
    assert_eq!(new.len(), 2);
    assert!(new.iter().all(|j| j.state == JobState::Available));
    // 09:02 cancels 09:01's two jobs; 09:00's, cancelled already, are not counted again.
    let r = h.sched(t("2026-06-01T09:02:00Z")).await;
    assert_eq!((r.jobs_created, r.overlap_cancelled), (2, 2), "{r:?}");
    let states: Vec<_> = h
        .schedule_jobs(&s.id)
        .await
        .iter()
        .map(|j| j.state.clone())
        .collect();
    assert_eq!(
        states,
        [
            JobState::Cancelled,
            JobState::Cancelled,
            JobState::Cancelled,
            JobState::Cancelled,
            JobState::Available,
            JobState::Available
        ]
    );
}

/// A bad policy is refused naming `overlap`, and nothing is created.
#[tokio::test]
async fn overlap_unknown_policy_is_refused_naming_the_field() {
    let h = Harness::new(t("2026-06-01T08:59:30Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("bad", "noop");
    req.cron = Some("* * * * *".into());
    req.overlap = Some("buffer_all".into());
    let e = h.kairos.schedule_create(req).await.unwrap_err();
    assert!(
        matches!(e.kind(), kairos_engine::OpsErrorKind::Invalid { field, .. } if field == "overlap"),
        "{e}"
    );
    assert!(h.kairos.schedule_list(None, None).await.unwrap().is_empty());
}
