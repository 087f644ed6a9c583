//! Gap records of schedules: due firings that did not run (issue 30), written by
//! `schedule_fire`, read by `schedule_gap_list`, recovered at the next on-time firing.

use crate::fixtures::{schedule, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn gap(reason: &str, first: DateTime<Utc>, last: DateTime<Utc>, count: i64) -> ScheduleGapNew {
    ScheduleGapNew {
        reason: reason.into(),
        first_fire_at: first,
        last_fire_at: last,
        count,
    }
}

fn firing(
    sch: &Schedule,
    next: Option<DateTime<Utc>>,
    gaps: Vec<ScheduleGapNew>,
    on_time: bool,
    now: DateTime<Utc>,
) -> ScheduleFire {
    ScheduleFire {
        schedule_id: sch.id.clone(),
        expected_next_fire_at: sch.next_fire_at,
        next_fire_at: next,
        last_fire_at: None,
        jobs: Vec::new(),
        gaps,
        on_time,
        buffer: None,
        now,
    }
}

/// A one-shot whose firing was dropped finishes with its gap recorded: listed (with reason,
/// first and last firing, count) for its schedule and among the open gaps, and kept after the
/// schedule finished. A firing another node already advanced records nothing.
pub async fn schedule_fire_records_a_finished_one_shots_gap(s: S) {
    let sch = s.schedule_create(schedule("once", t0())).await.unwrap();
    let other = s.schedule_create(schedule("other", t0())).await.unwrap();
    let now = t0() + Duration::minutes(3);
    let fired = s
        .schedule_fire(firing(
            &sch,
            None,
            vec![gap("skip", t0(), t0(), 1)],
            false,
            now,
        ))
        .await
        .unwrap();
    assert!(fired.advanced);
    // A second firing of the same occurrence loses the race and records no second gap.
    let again = s
        .schedule_fire(firing(
            &sch,
            None,
            vec![gap("skip", t0(), t0(), 1)],
            false,
            now,
        ))
        .await
        .unwrap();
    assert!(!again.advanced);
    let after = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(after.state, ScheduleState::Finished);
    let list = s
        .schedule_gap_list(ScheduleGapList {
            schedule_id: Some(sch.id.clone()),
            open: false,
            limit: None,
        })
        .await
        .unwrap();
    assert_eq!(
        list,
        vec![ScheduleGap {
            schedule_id: sch.id.clone(),
            reason: "skip".into(),
            first_fire_at: t0(),
            last_fire_at: t0(),
            count: 1,
            recorded_at: now,
            recovered_at: None,
        }]
    );
    let open = s
        .schedule_gap_list(ScheduleGapList {
            open: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(open.len(), 1);
    let none = s
        .schedule_gap_list(ScheduleGapList {
            schedule_id: Some(other.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// An on-time firing recovers the gaps recorded before it, not the ones it records itself;
/// gaps are listed newest first and go with their schedule.
pub async fn schedule_gap_recovers_at_the_next_on_time_firing_and_goes_with_its_schedule(s: S) {
    let day = |n: i64| t0() + Duration::days(n);
    let sch = s.schedule_create(schedule("daily", day(0))).await.unwrap();
    // Back at day 3: days 0-1 too old (window), day 2 dropped (skip), day 3 on time.
    let gaps = vec![
        gap("window", day(0), day(1), 2),
        gap("skip", day(2), day(2), 1),
    ];
    s.schedule_fire(firing(&sch, Some(day(4)), gaps, true, day(3)))
        .await
        .unwrap();
    let list = |open| {
        let s = s.clone();
        let id = sch.id.clone();
        async move {
            s.schedule_gap_list(ScheduleGapList {
                schedule_id: Some(id),
                open,
                limit: None,
            })
            .await
            .unwrap()
        }
    };
    let open = list(true).await;
    assert_eq!(
        open.iter()
            .map(|g| (g.reason.as_str(), g.first_fire_at, g.last_fire_at, g.count))
            .collect::<Vec<_>>(),
        vec![("skip", day(2), day(2), 1), ("window", day(0), day(1), 2)],
        "newest first, both open after the firing that recorded them"
    );
    // The next on-time firing (day 4) recovers them.
    let sch = s.schedule_get(&sch.id).await.unwrap().unwrap();
    s.schedule_fire(firing(&sch, Some(day(5)), Vec::new(), true, day(4)))
        .await
        .unwrap();
    assert!(list(true).await.is_empty());
    let all = list(false).await;
    assert_eq!(all.len(), 2);
    assert!(
        all.iter().all(|g| g.recovered_at == Some(day(4))),
        "{all:?}"
    );
    assert!(s.schedule_delete(&sch.id).await.unwrap());
    assert!(list(false).await.is_empty(), "gone with the schedule");
}

/// A schedule's misfire threshold and window round-trip; unset, they read back as `None`.
pub async fn schedule_misfire_threshold_and_window_roundtrip(s: S) {
    let mut def = schedule("tuned", t0());
    def.misfire_threshold = Some(std::time::Duration::from_secs(300));
    def.misfire_window = Some(std::time::Duration::from_secs(2 * 86_400));
    let a = s.schedule_create(def.clone()).await.unwrap();
    assert_eq!(
        a.misfire_threshold,
        Some(std::time::Duration::from_secs(300))
    );
    assert_eq!(
        a.misfire_window,
        Some(std::time::Duration::from_secs(2 * 86_400))
    );
    let plain = s.schedule_create(schedule("plain", t0())).await.unwrap();
    assert_eq!(
        (plain.misfire_threshold, plain.misfire_window),
        (None, None)
    );
    def.id = a.id.clone();
    def.misfire_threshold = None;
    let b = s
        .schedule_update(ScheduleUpdate {
            id: a.id.clone(),
            def,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.misfire_threshold, None);
    assert_eq!(
        b.misfire_window,
        Some(std::time::Duration::from_secs(2 * 86_400))
    );
}
