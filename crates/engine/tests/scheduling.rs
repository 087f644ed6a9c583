//! The scheduler through the engine: due times, bounded oldest-first batches, one-shots,
//! DST, double firing and misfire policies — on a real SQLite file and a manual clock.

mod common;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::America::New_York;
use common::*;
use kairos_core::JobState;
use kairos_engine::{Engine, EngineConfig};
use kairos_store::ScheduleState;
use std::collections::{HashMap, HashSet};

async fn create_cron(
    h: &Harness,
    name: &str,
    cron: &str,
    tz: Option<&str>,
) -> kairos_store::Schedule {
    let mut req = new_schedule(name, "noop");
    req.cron = Some(cron.into());
    req.timezone = tz.map(str::to_string);
    h.kairos
        .schedule_create(req)
        .await
        .expect("schedule create")
}

/// Tick the scheduler every `step` from `from` to `to` (inclusive); returns the ticks that
/// created jobs and how many.
async fn drive(
    h: &Harness,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    step: Duration,
) -> Vec<(DateTime<Utc>, usize)> {
    let mut out = Vec::new();
    let mut at = from;
    let mut ticks = 0;
    while at <= to {
        ticks += 1;
        assert!(ticks <= 10_000, "drive: too many ticks");
        let r = h.sched(at).await;
        assert_eq!(r.errors, 0, "tick at {at}");
        if r.jobs_created > 0 {
            out.push((at, r.jobs_created));
        }
        at += step;
    }
    out
}

/// a schedule is due when `next_fire_at <= now` — not a millisecond earlier — and its
/// `next_fire_at` advances to the next firing when it fires.
#[tokio::test]
async fn schedule_fires_at_next_fire_at_not_one_ms_before_and_advances() {
    let h = Harness::new(t("2026-05-01T08:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let s = create_cron(&h, "daily", "0 9 * * *", None).await;
    let next = s.next_fire_at.expect("next firing");
    assert_eq!(next, t("2026-05-01T09:00:00Z"));

    let r = h.sched(next - ms(1)).await;
    assert_eq!((r.schedules, r.jobs_created), (0, 0), "{r:?}");
    assert!(h.jobs().await.is_empty());
    let unchanged = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(unchanged.next_fire_at, Some(next));

    let r = h.sched(next).await;
    assert_eq!((r.schedules, r.fired, r.jobs_created), (1, 1, 1), "{r:?}");
    let jobs = h.schedule_jobs(&s.id).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].fire_at, Some(next));
    assert_eq!(jobs[0].run_at, next);
    assert_eq!(jobs[0].state, JobState::Available);

    let advanced = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(advanced.next_fire_at, Some(t("2026-05-02T09:00:00Z")));
    assert_eq!(advanced.last_fire_at, Some(next));
    assert_eq!(advanced.state, ScheduleState::Active);

    // Ticking again before the next firing creates nothing more.
    let r = h.sched(t("2026-05-02T08:59:59.999Z")).await;
    assert_eq!(r.jobs_created, 0);
    assert_eq!(h.jobs().await.len(), 1);
}

/// due schedules are taken in bounded batches (scheduler batch 100), oldest
/// `next_fire_at` first: 150 due schedules → 100 on the first tick, 50 on the second.
#[tokio::test]
async fn schedule_backlog_of_150_drains_100_then_50_oldest_first() {
    let base = t("2026-05-01T09:00:00Z");
    let h = Harness::new(base - Duration::hours(1), &[("noop", TestHandler::ok())]).await;
    // Created in a scrambled order so that creation order (and id order) is not firing order.
    let mut index_of = HashMap::new();
    for k in 0..150i64 {
        let i = (k * 7) % 150;
        let mut req = new_schedule(&format!("s{i}"), "noop");
        req.at = Some(rfc(base + ms(i * 100)));
        let s = h.kairos.schedule_create(req).await.unwrap();
        index_of.insert(s.id, i);
    }
    // All 150 are due and on time (the newest is 100 ms old).
    let now = base + ms(15_000);

    let fired = |jobs: Vec<kairos_core::Job>| -> HashSet<i64> {
        jobs.iter()
            .map(|j| index_of[j.schedule_id.as_ref().unwrap()])
            .collect()
    };

    let r1 = h.sched(now).await;
    assert_eq!((r1.schedules, r1.jobs_created), (100, 100), "{r1:?}");
    assert_eq!(fired(h.jobs().await), (0..100).collect::<HashSet<_>>());

    let r2 = h.sched(now).await;
    assert_eq!((r2.schedules, r2.jobs_created), (50, 50), "{r2:?}");
    assert_eq!(fired(h.jobs().await), (0..150).collect::<HashSet<_>>());

    let r3 = h.sched(now).await;
    assert_eq!(r3.schedules, 0, "{r3:?}");
    assert_eq!(h.jobs().await.len(), 150);
}

/// a one-shot `at` schedule fires once, becomes `finished`; its job succeeds and is
/// never run again.
#[tokio::test]
async fn one_shot_at_schedule_fires_once_finishes_and_never_runs_again() {
    let handler = TestHandler::ok();
    let h = Harness::new(t("2026-05-01T08:00:00Z"), &[("noop", handler.clone())]).await;
    let at = t("2026-05-01T09:30:00Z");
    let mut req = new_schedule("once", "noop");
    req.at = Some(rfc(at));
    let s = h.kairos.schedule_create(req).await.unwrap();
    assert_eq!(s.next_fire_at, Some(at));

    assert_eq!(h.sched(at).await.jobs_created, 1);
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s.state, ScheduleState::Finished);
    assert_eq!(s.next_fire_at, None);

    let r = h.exec(at).await;
    assert_eq!((r.claimed, r.succeeded), (1, 1));
    let job = &h.schedule_jobs(&s.id).await[0];
    assert_eq!(job.state, JobState::Succeeded);

    // Later ticks and runs do nothing with it.
    for later in [
        at + Duration::hours(1),
        at + Duration::days(1),
        at + Duration::days(400),
    ] {
        assert_eq!(h.sched(later).await.schedules, 0);
        assert_eq!(h.exec(later).await.claimed, 0);
    }
    assert_eq!(handler.calls(), vec![job.id.clone()]);
    assert_eq!(h.schedule_jobs(&s.id).await.len(), 1);
    assert_eq!(h.job(&job.id).await.state, JobState::Succeeded);
}

/// S0-1 across DST: a daily `30 2 * * *` in America/New_York on the spring-forward day
/// 2026-03-08 (02:30 does not exist) creates exactly one job that day, at 03:00 EDT = 07:00Z.
#[tokio::test]
async fn dst_spring_forward_daily_0230_new_york_fires_once_at_0700z() {
    let h = Harness::new(t("2026-03-08T04:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let s = create_cron(&h, "ny-0230", "30 2 * * *", Some("America/New_York")).await;
    assert_eq!(s.next_fire_at, Some(t("2026-03-08T07:00:00Z")));

    let created = drive(
        &h,
        t("2026-03-08T04:00:00Z"),
        t("2026-03-09T05:00:00Z"),
        mins(10),
    )
    .await;
    assert_eq!(created, vec![(t("2026-03-08T07:00:00Z"), 1)]);

    let jobs = h.schedule_jobs(&s.id).await;
    let on_the_day: Vec<_> = jobs
        .iter()
        .filter(|j| {
            j.fire_at.unwrap().with_timezone(&New_York).date_naive()
                == chrono::NaiveDate::from_ymd_opt(2026, 3, 8).unwrap()
        })
        .collect();
    assert_eq!(on_the_day.len(), 1, "{jobs:?}");
    assert_eq!(on_the_day[0].fire_at, Some(t("2026-03-08T07:00:00Z")));
    assert_eq!(
        on_the_day[0].period_key.as_deref(),
        Some("2026-03-08T03:00:00-04:00")
    );
    assert_eq!(jobs.len(), 1);
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s.next_fire_at, Some(t("2026-03-09T06:30:00Z")));
}

/// S0-1 across DST: a daily `30 1 * * *` in America/New_York on the fall-back day
/// 2026-11-01 (01:30 happens twice) creates exactly one job that day, at the first 01:30
/// (EDT) = 05:30Z, and nothing at the second (06:30Z).
#[tokio::test]
async fn dst_fall_back_daily_0130_new_york_fires_once_at_0530z() {
    let h = Harness::new(t("2026-11-01T03:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let s = create_cron(&h, "ny-0130", "30 1 * * *", Some("America/New_York")).await;
    assert_eq!(s.next_fire_at, Some(t("2026-11-01T05:30:00Z")));

    let created = drive(
        &h,
        t("2026-11-01T03:00:00Z"),
        t("2026-11-02T05:00:00Z"),
        mins(10),
    )
    .await;
    assert_eq!(created, vec![(t("2026-11-01T05:30:00Z"), 1)]);

    let jobs = h.schedule_jobs(&s.id).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].fire_at, Some(t("2026-11-01T05:30:00Z")));
    assert_eq!(
        jobs[0].period_key.as_deref(),
        Some("2026-11-01T01:30:00-04:00")
    );
    // The next firing is the next day's 01:30 EST.
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s.next_fire_at, Some(t("2026-11-02T06:30:00Z")));
}

/// the period key is the day in the schedule's zone: an Asia/Tokyo `0 6 * * *`
/// with `period: day` fires at 21:00Z the day before and keys its job `2026-11-30`.
#[tokio::test]
async fn tokyo_daily_0600_with_day_period_keys_jobs_by_tokyo_date() {
    let h = Harness::new(t("2026-11-29T12:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("tokyo", "noop");
    req.cron = Some("0 6 * * *".into());
    req.timezone = Some("Asia/Tokyo".into());
    req.period = Some("day".into());
    let s = h.kairos.schedule_create(req).await.unwrap();
    assert_eq!(s.next_fire_at, Some(t("2026-11-29T21:00:00Z")));

    let created = drive(
        &h,
        t("2026-11-29T12:00:00Z"),
        t("2026-12-01T00:00:00Z"),
        mins(30),
    )
    .await;
    assert_eq!(
        created,
        vec![
            (t("2026-11-29T21:00:00Z"), 1),
            (t("2026-11-30T21:00:00Z"), 1)
        ]
    );
    let jobs = h.schedule_jobs(&s.id).await;
    let keys: Vec<_> = jobs
        .iter()
        .map(|j| {
            (
                j.fire_at.unwrap(),
                j.period_key.clone().unwrap(),
                j.dedupe_key.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (
                t("2026-11-29T21:00:00Z"),
                "2026-11-30".to_string(),
                format!("{}:2026-11-30", s.id)
            ),
            (
                t("2026-11-30T21:00:00Z"),
                "2026-12-01".to_string(),
                format!("{}:2026-12-01", s.id)
            ),
        ]
    );
}

/// S3-3 (with S0-1): two schedulers (two engines, each on its own connection to the same
/// SQLite file, like two nodes) ticking at the same instants concurrently create each
/// firing's job exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_schedulers_ticking_concurrently_create_each_job_once() {
    let h = Harness::new(t("2026-05-01T08:59:30Z"), &[("noop", TestHandler::ok())]).await;
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(
            create_cron(&h, &format!("m{i}"), "* * * * *", None)
                .await
                .id,
        );
    }
    // A second node: its own store handle on the same file, its own engine.
    let other_store: std::sync::Arc<dyn kairos_store::Store> = std::sync::Arc::new(
        kairos_store_sqlite::SqliteStore::open(&h.dir.path().join("kairos.db"))
            .await
            .unwrap(),
    );
    let reg = registry_with(
        &other_store,
        h.clock.clone(),
        &[("noop", TestHandler::ok())],
    );
    let other = Engine::new(
        EngineConfig::default().with_node("b"),
        other_store,
        h.clock.clone(),
        reg,
    )
    .unwrap();

    let mut created = 0;
    for minute in 0..3 {
        let at = t("2026-05-01T09:00:00Z") + mins(minute);
        h.clock.set(at);
        let (a, b) = tokio::join!(
            h.engine.scheduler().run_once(at),
            other.scheduler().run_once(at)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.errors, b.errors), (0, 0));
        assert_eq!(
            a.jobs_created + b.jobs_created,
            10,
            "minute {minute}: {a:?} {b:?}"
        );
        created += a.jobs_created + b.jobs_created;
    }
    assert_eq!(created, 30);
    let jobs = h.jobs().await;
    assert_eq!(jobs.len(), 30);
    let mut per_firing: HashMap<(String, DateTime<Utc>), usize> = HashMap::new();
    for j in &jobs {
        *per_firing
            .entry((j.schedule_id.clone().unwrap(), j.fire_at.unwrap()))
            .or_default() += 1;
    }
    assert_eq!(per_firing.len(), 30);
    assert!(per_firing.values().all(|n| *n == 1), "{per_firing:?}");
    for id in ids {
        assert_eq!(h.schedule_jobs(&id).await.len(), 3);
    }
}

/// a manual re-run (`schedule_fire_now`) is idempotent per period: twice → created 1
/// then 0; and after the regular firing, a re-run of that period creates nothing.
#[tokio::test]
async fn fire_now_twice_creates_the_period_job_once() {
    let h = Harness::new(t("2026-05-01T08:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let s = create_cron(&h, "daily", "0 9 * * *", None).await;

    h.clock.set(t("2026-05-01T08:30:00Z"));
    let first = h.kairos.schedule_fire_now(&s.id).await.unwrap();
    assert_eq!(first.created.len(), 1);
    assert_eq!(first.fire_at, t("2026-04-30T09:00:00Z"));
    let second = h.kairos.schedule_fire_now(&s.id).await.unwrap();
    assert_eq!(second.created.len(), 0);
    assert_eq!(second.period_key, first.period_key);
    assert_eq!(h.jobs().await.len(), 1);

    // The regular firing of the next period, then a manual re-run of it: still one job.
    assert_eq!(h.sched(t("2026-05-01T09:00:00Z")).await.jobs_created, 1);
    h.clock.set(t("2026-05-01T10:00:00Z"));
    let rerun = h.kairos.schedule_fire_now(&s.id).await.unwrap();
    assert_eq!(rerun.fire_at, t("2026-05-01T09:00:00Z"));
    assert!(rerun.created.is_empty(), "{rerun:?}");
    assert_eq!(h.jobs().await.len(), 2);
}

/// firing a one-shot early uses its one occurrence's key, runs now, and the
/// regular firing at its time creates nothing more (it would otherwise be sent twice).
#[tokio::test]
async fn fire_now_of_a_one_shot_before_its_time_is_not_sent_again_at_its_time() {
    let h = Harness::new(t("2026-05-01T08:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("once", "noop");
    req.at = Some("2026-05-01T12:00:00Z".into());
    let s = h.kairos.schedule_create(req).await.unwrap();
    let fired = h.kairos.schedule_fire_now(&s.id).await.unwrap();
    assert_eq!(fired.created.len(), 1);
    assert_eq!(fired.fire_at, t("2026-05-01T12:00:00Z"));
    let job = h.jobs().await.remove(0);
    assert!(
        job.run_at <= t("2026-05-01T08:00:00Z"),
        "a manual run runs now: {:?}",
        job.run_at
    );
    // At its time the regular firing finds the job already there.
    assert_eq!(h.sched(t("2026-05-01T12:00:00Z")).await.jobs_created, 0);
    assert_eq!(h.jobs().await.len(), 1);
}

/// A daily 09:00 UTC schedule created at 08:00 on day 0, then 3 days without a scheduler:
/// back at day 3 08:00 the firings of day 0, 1 and 2 were missed (day 3's is still ahead).
async fn after_three_days_down(
    misfire: &str,
) -> (
    Harness,
    kairos_store::Schedule,
    kairos_engine::scheduler::SchedulerReport,
) {
    let h = Harness::new(t("2026-06-01T08:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("daily", "noop");
    req.cron = Some("0 9 * * *".into());
    req.period = Some("day".into());
    req.misfire = Some(misfire.into());
    let s = h.kairos.schedule_create(req).await.unwrap();
    assert_eq!(s.next_fire_at, Some(t("2026-06-01T09:00:00Z")));
    let r = h.sched(t("2026-06-04T08:00:00Z")).await;
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    // Whatever the policy: the next firing is the next regular one, in the future.
    assert_eq!(s.next_fire_at, Some(t("2026-06-04T09:00:00Z")));
    (h, s, r)
}

/// A one-shot `at` schedule due at 09:01 while the scheduler did not run for 3 minutes, with
/// `misfire` (and optionally `misfire_window`) given; back at 09:04.
async fn one_shot_missed_for_three_minutes(
    misfire: Option<&str>,
    window: Option<&str>,
) -> (
    Harness,
    kairos_store::Schedule,
    kairos_engine::scheduler::SchedulerReport,
) {
    let h = Harness::new(t("2026-06-01T09:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("reminder", "noop");
    req.at = Some("2026-06-01T09:01:00Z".into());
    req.misfire = misfire.map(str::to_string);
    req.misfire_window = window.map(str::to_string);
    let s = h.kairos.schedule_create(req).await.unwrap();
    let r = h.sched(t("2026-06-01T09:04:00Z")).await;
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s.state, ScheduleState::Finished, "it finishes either way");
    (h, s, r)
}

/// S0-1: a row due at any past time runs late. A one-shot due while the scheduler did not run
/// for 3 minutes fires when it runs again (the default policy): its job is created and runs.
#[tokio::test]
async fn one_shot_missed_while_down_fires_on_restart_s0_1() {
    let (h, s, r) = one_shot_missed_for_three_minutes(None, None).await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (1, 0), "{r:?}");
    let jobs = h.schedule_jobs(&s.id).await;
    assert_eq!(jobs[0].fire_at, Some(t("2026-06-01T09:01:00Z")));
    let run = h.exec(t("2026-06-01T09:04:00Z")).await;
    assert_eq!(run.succeeded, 1, "{run:?}");
    assert!(
        h.kairos
            .schedule_gap_list(&s.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// With an explicit `"misfire": "skip"` the missed one-shot creates no job and is recorded
/// as a `skip` gap; the schedule finishes.
#[tokio::test]
async fn one_shot_missed_with_explicit_skip_is_recorded_as_a_gap() {
    let (h, s, r) = one_shot_missed_for_three_minutes(Some("skip"), None).await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (0, 1), "{r:?}");
    assert!(h.schedule_jobs(&s.id).await.is_empty());
    let gaps = h.kairos.schedule_gap_list(&s.id, 10).await.unwrap();
    assert_eq!(gaps.len(), 1);
    let g = &gaps[0];
    assert_eq!(
        (
            g.gap.reason.as_str(),
            g.gap.first_fire_at,
            g.gap.last_fire_at,
            g.gap.count
        ),
        (
            "skip",
            t("2026-06-01T09:01:00Z"),
            t("2026-06-01T09:01:00Z"),
            1
        )
    );
    assert_eq!(g.gap.recovered_at, None);
}

/// A one-shot missed for longer than its `misfire_window` is not run: a `window` gap, no job.
#[tokio::test]
async fn one_shot_older_than_its_window_is_a_window_gap_and_no_job() {
    let (h, s, r) = one_shot_missed_for_three_minutes(Some("once"), Some("2m")).await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (0, 1), "{r:?}");
    assert!(h.schedule_jobs(&s.id).await.is_empty());
    let gaps = h.kairos.schedule_gap_list(&s.id, 10).await.unwrap();
    assert_eq!(
        gaps.iter()
            .map(|g| g.gap.reason.as_str())
            .collect::<Vec<_>>(),
        ["window"]
    );
}

/// A schedule's own `misfire_threshold` makes a firing 3 minutes late on time even with
/// `skip`, and recurring schedules default to `once`.
#[tokio::test]
async fn misfire_threshold_per_schedule_and_once_by_default_for_recurring() {
    let h = Harness::new(t("2026-06-01T08:00:00Z"), &[("noop", TestHandler::ok())]).await;
    let mut req = new_schedule("patient", "noop");
    req.cron = Some("0 9 * * *".into());
    req.misfire = Some("skip".into());
    req.misfire_threshold = Some("5m".into());
    let patient = h.kairos.schedule_create(req).await.unwrap();
    let mut req = new_schedule("daily", "noop");
    req.cron = Some("0 9 * * *".into());
    let daily = h.kairos.schedule_create(req).await.unwrap();
    assert_eq!(daily.misfire, kairos_core::schedule::Misfire::Once);
    let r = h.sched(t("2026-06-01T09:03:00Z")).await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (2, 0), "{r:?}");
    assert_eq!(h.schedule_jobs(&patient.id).await.len(), 1);
    assert_eq!(h.schedule_jobs(&daily.id).await.len(), 1);
}

/// S4-10 / misfire `skip`: after 3 days of downtime no catch-up job is created; the next
/// firing is the next regular one.
#[tokio::test]
async fn misfire_skip_after_three_days_down_creates_no_catch_up_job() {
    let (h, s, r) = after_three_days_down("skip").await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (0, 3), "{r:?}");
    assert!(h.schedule_jobs(&s.id).await.is_empty());
}

/// S4-4 / misfire `once`: after 3 days of downtime exactly one catch-up job (the most recent
/// missed firing) is created, due at once.
#[tokio::test]
async fn misfire_once_after_three_days_down_creates_one_catch_up_job() {
    let (h, s, r) = after_three_days_down("once").await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (1, 2), "{r:?}");
    let jobs = h.schedule_jobs(&s.id).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].fire_at, Some(t("2026-06-03T09:00:00Z")));
    assert_eq!(jobs[0].period_key.as_deref(), Some("2026-06-03"));
    let run = h.exec(t("2026-06-04T08:00:00Z")).await;
    assert_eq!(run.succeeded, 1, "the catch-up job is due at once: {run:?}");
}

/// S4-4 / misfire `all:10`: after 3 days of downtime one job per missed day (3), with
/// distinct period keys, oldest first.
#[tokio::test]
async fn misfire_all_after_three_days_down_creates_one_job_per_missed_day() {
    let (h, s, r) = after_three_days_down("all:10").await;
    assert_eq!((r.jobs_created, r.misfires_skipped), (3, 0), "{r:?}");
    let jobs = h.schedule_jobs(&s.id).await;
    let got: Vec<_> = jobs
        .iter()
        .map(|j| (j.fire_at.unwrap(), j.period_key.clone().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            (t("2026-06-01T09:00:00Z"), "2026-06-01".to_string()),
            (t("2026-06-02T09:00:00Z"), "2026-06-02".to_string()),
            (t("2026-06-03T09:00:00Z"), "2026-06-03".to_string()),
        ]
    );
    let run = h.exec(t("2026-06-04T08:00:00Z")).await;
    assert_eq!(run.succeeded, 3, "{run:?}");
    // Day 3's own firing still happens on time.
    assert_eq!(h.sched(t("2026-06-04T09:00:00Z")).await.jobs_created, 1);
}

/// a schedule that is due but locked by another node (which claimed it and went
/// quiet) does not make `Engine::run`'s scheduler spin on the database: it waits for its
/// poll interval (1 s) instead of re-querying every millisecond until the lock expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scheduler_loop_does_not_spin_on_a_schedule_locked_by_another_node() {
    use kairos_core::{Clock, SystemClock};
    use std::sync::atomic::Ordering;
    use std::time::Duration as StdDuration;

    let (_dir, sqlite) = open_store().await;
    let counting = CountingStore::new(sqlite);
    let store: std::sync::Arc<dyn kairos_store::Store> = counting.clone();
    let clock: std::sync::Arc<dyn Clock> = std::sync::Arc::new(SystemClock);
    let registry = registry_with(&store, clock.clone(), &[("noop", TestHandler::ok())]);
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        clock.clone(),
        kinds.clone(),
    )
    .unwrap();
    let kairos = kairos_engine::Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds);
    let mut req = new_schedule("every-second", "noop");
    req.every = Some("1s".into());
    let s = kairos.schedule_create(req).await.unwrap();
    // Wait until it is due (at most one interval), then another node claims it (locked for
    // 60 s) and never fires it.
    let due = s.next_fire_at.unwrap();
    let until_due = (due - clock.now()).to_std().unwrap_or_default();
    assert!(until_due <= StdDuration::from_secs(1), "{s:?}");
    tokio::time::sleep(until_due + StdDuration::from_millis(20)).await;
    let now = clock.now();
    assert!(due <= now);
    let taken = store
        .schedule_due(kairos_store::ScheduleDue {
            now,
            limit: 10,
            lock_until: now + Duration::seconds(60),
            node: "other".into(),
        })
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    let before = counting.schedule_due_calls.load(Ordering::SeqCst);

    let cancel = tokio_util::sync::CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    tokio::time::sleep(StdDuration::from_millis(1500)).await;
    cancel.cancel();
    tokio::time::timeout(StdDuration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();

    let ticks = counting.schedule_due_calls.load(Ordering::SeqCst) - before;
    assert!(ticks <= 5, "{ticks} scheduler ticks in 1.5 s");
    assert!(ticks >= 1);
    assert!(
        kairos
            .store()
            .job_list(Default::default())
            .await
            .unwrap()
            .is_empty()
    );
}
