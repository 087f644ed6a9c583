//! Overlap policies: the open jobs of an occurrence, and the firing a `buffer_one` schedule
//! holds.

use crate::fixtures::{claim, job, schedule, t0};
use crate::jobs::complete;
use chrono::Duration;
use kairos_core::schedule::Overlap;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn occurrence_job(sch: &str, period: &str, run_at: chrono::DateTime<chrono::Utc>) -> JobInsert {
    let mut j = job(run_at);
    j.schedule_id = Some(sch.to_string());
    j.period_key = Some(period.to_string());
    j.dedupe_key = Some(format!("{sch}:{period}:{}", j.id));
    j
}

async fn open(s: &S, sch: &str, period: &str) -> Vec<String> {
    s.occurrence_open(OccurrenceOpen {
        schedule_id: sch.to_string(),
        period_key: period.to_string(),
        limit: 100,
    })
    .await
    .unwrap()
}

/// `occurrence_open` lists the jobs of that occurrence that have not finished (waiting for
/// their time or a retry, due, running), oldest first, and nothing of other occurrences or
/// schedules; finished jobs (succeeded, cancelled) are not open.
pub async fn occurrence_open_lists_only_unfinished_jobs_of_that_occurrence(s: S) {
    let sch = s.schedule_create(schedule("open", t0())).await.unwrap();
    let p = "2026-11-29";
    // Running (claimed first, the only due one), then a future one, then one cancelled.
    let running = occurrence_job(&sch.id, p, t0());
    let later = occurrence_job(&sch.id, p, t0() + Duration::hours(1));
    let cancelled = occurrence_job(&sch.id, p, t0() + Duration::hours(2));
    for j in [&running, &later, &cancelled] {
        s.job_insert(j.clone()).await.unwrap();
    }
    // Another period, another schedule: never listed.
    s.job_insert(occurrence_job(
        &sch.id,
        "2026-11-30",
        t0() + Duration::days(1),
    ))
    .await
    .unwrap();
    s.job_insert(occurrence_job("sch_other", p, t0() + Duration::days(1)))
        .await
        .unwrap();
    let claimed = s.job_claim(claim(t0(), 1, "n1")).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, running.id);
    s.job_cancel(JobCancel {
        id: cancelled.id.clone(),
        reason: "test".into(),
        now: t0(),
    })
    .await
    .unwrap();
    let mut want = vec![running.id.clone(), later.id.clone()];
    want.sort();
    assert_eq!(open(&s, &sch.id, p).await, want);
    // The limit holds.
    let one = s
        .occurrence_open(OccurrenceOpen {
            schedule_id: sch.id.clone(),
            period_key: p.into(),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(one, want[..1]);
    // The running job succeeds, the waiting one is cancelled: the occurrence is closed.
    s.job_complete_many(vec![complete(&claimed[0], Transition::Succeeded)])
        .await
        .unwrap();
    assert_eq!(open(&s, &sch.id, p).await, vec![later.id.clone()]);
    s.job_cancel(JobCancel {
        id: later.id.clone(),
        reason: "test".into(),
        now: t0(),
    })
    .await
    .unwrap();
    assert!(open(&s, &sch.id, p).await.is_empty());
    assert!(open(&s, &sch.id, "no-such-period").await.is_empty());
}

/// A schedule's overlap policy round-trips; a firing held by `schedule_fire` is listed by
/// `schedule_buffered` (active schedules only) and run once by `schedule_buffer_fire`, which
/// makes it the last firing; replacing the definition drops a held firing.
pub async fn schedule_buffer_holds_one_firing_and_runs_it_once(s: S) {
    let mut def = schedule("buffered", t0());
    def.overlap = Overlap::BufferOne;
    let sch = s.schedule_create(def).await.unwrap();
    assert_eq!(sch.overlap, Overlap::BufferOne);
    assert_eq!(sch.buffered_fire_at, None);
    assert!(
        s.schedule_buffered(ScheduleBuffered { limit: 10 })
            .await
            .unwrap()
            .is_empty()
    );
    // The firing at t0 is held: the schedule advances, its last firing stays unset.
    let next = t0() + Duration::days(1);
    let fired = s
        .schedule_fire(ScheduleFire {
            schedule_id: sch.id.clone(),
            expected_next_fire_at: Some(t0()),
            next_fire_at: Some(next),
            last_fire_at: None,
            jobs: vec![],
            gaps: vec![],
            on_time: false,
            buffer: Some(t0()),
            now: t0(),
        })
        .await
        .unwrap();
    assert!(fired.advanced);
    let got = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(got.buffered_fire_at, Some(t0()));
    assert_eq!(got.last_fire_at, None);
    assert_eq!(got.next_fire_at, Some(next));
    let held = s
        .schedule_buffered(ScheduleBuffered { limit: 10 })
        .await
        .unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].id, sch.id);
    // A paused schedule's held firing waits.
    s.schedule_pause(SchedulePause {
        id: sch.id.clone(),
        paused: true,
        next_fire_at: None,
        now: t0(),
    })
    .await
    .unwrap();
    assert!(
        s.schedule_buffered(ScheduleBuffered { limit: 10 })
            .await
            .unwrap()
            .is_empty()
    );
    s.schedule_pause(SchedulePause {
        id: sch.id.clone(),
        paused: false,
        next_fire_at: Some(next),
        now: t0(),
    })
    .await
    .unwrap();
    let release = |at| ScheduleBufferFire {
        schedule_id: sch.id.clone(),
        buffered_fire_at: at,
        jobs: vec![occurrence_job(&sch.id, "2026-11-29", t0())],
        now: t0() + Duration::minutes(5),
    };
    // Not the held firing: nothing happens.
    let wrong = s
        .schedule_buffer_fire(release(t0() + Duration::minutes(1)))
        .await
        .unwrap();
    assert!(!wrong.advanced && wrong.created.is_empty());
    let ran = s.schedule_buffer_fire(release(t0())).await.unwrap();
    assert!(ran.advanced);
    assert_eq!(ran.created.len(), 1);
    let got = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(got.buffered_fire_at, None);
    assert_eq!(got.last_fire_at, Some(t0()));
    assert_eq!(got.next_fire_at, Some(next), "the clock is not touched");
    assert_eq!(open(&s, &sch.id, "2026-11-29").await, ran.created);
    // A second release (another node) does nothing.
    let again = s.schedule_buffer_fire(release(t0())).await.unwrap();
    assert!(!again.advanced && again.created.is_empty());
    assert!(
        s.schedule_buffered(ScheduleBuffered { limit: 10 })
            .await
            .unwrap()
            .is_empty()
    );
    // Hold another, then replace the definition: the held firing goes with the old one.
    let fired = s
        .schedule_fire(ScheduleFire {
            schedule_id: sch.id.clone(),
            expected_next_fire_at: Some(next),
            next_fire_at: Some(next + Duration::days(1)),
            last_fire_at: None,
            jobs: vec![],
            gaps: vec![],
            on_time: false,
            buffer: Some(next),
            now: next,
        })
        .await
        .unwrap();
    assert!(fired.advanced);
    let mut def = schedule("buffered", next + Duration::days(1));
    def.overlap = Overlap::Skip;
    let up = s
        .schedule_update(ScheduleUpdate {
            id: sch.id.clone(),
            def,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(up.overlap, Overlap::Skip);
    assert_eq!(up.buffered_fire_at, None);
    assert_eq!(up.last_fire_at, Some(t0()));
}
