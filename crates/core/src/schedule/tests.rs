//! Tests of the schedule math: DST, zones, period keys, intervals, misfire planning.

use super::*;
use chrono::Duration;
use proptest::prelude::*;

fn cron(expr: &str) -> ScheduleSpec {
    ScheduleSpec::Cron {
        expr: expr.to_string(),
    }
}

fn tz(name: &str) -> Tz {
    parse_timezone(name).unwrap()
}

/// Parse an RFC 3339 instant (with offset) into UTC.
fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// Iterate `next_after` `n` times from `from`, formatted in the zone.
fn nexts(spec: &ScheduleSpec, zone: Tz, from: DateTime<Utc>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = from;
    for _ in 0..n {
        cur = spec.next_after(zone, cur).unwrap();
        out.push(format_local(zone, cur));
    }
    out
}

// ---------------------------------------------------------------- DST

#[test]
fn dst_spring_forward_fires_once_after_gap() {
    let ny = tz("America/New_York");
    let spec = cron("30 2 * * *");
    assert_eq!(
        nexts(&spec, ny, t("2026-03-07T00:00:00-05:00"), 3),
        [
            "2026-03-07T02:30:00-05:00",
            // 02:30 does not exist on Mar 8: fires once, at the first instant after the gap.
            "2026-03-08T03:00:00-04:00",
            "2026-03-09T02:30:00-04:00",
        ]
    );
    // Backwards agrees, and the post-gap firing is its own "at or before".
    let gap_fire = t("2026-03-08T03:00:00-04:00");
    assert_eq!(spec.prev_at_or_before(ny, gap_fire), Some(gap_fire));
    assert_eq!(
        spec.prev_at_or_before(ny, t("2026-03-08T12:00:00-04:00")),
        Some(gap_fire)
    );
    assert_eq!(
        spec.prev_at_or_before(ny, t("2026-03-08T01:59:59-05:00")),
        Some(t("2026-03-07T02:30:00-05:00"))
    );
}

#[test]
fn dst_fall_back_fires_once() {
    let ny = tz("America/New_York");
    let spec = cron("30 1 * * *");
    assert_eq!(
        nexts(&spec, ny, t("2026-10-31T00:00:00-04:00"), 3),
        [
            "2026-10-31T01:30:00-04:00",
            // 01:30 happens twice on Nov 1: fires once, at the first.
            "2026-11-01T01:30:00-04:00",
            "2026-11-02T01:30:00-05:00",
        ]
    );
    // Starting inside the repeated hour (on its second pass) does not fire the later 01:30.
    assert_eq!(
        spec.next_after(ny, t("2026-11-01T01:10:00-05:00")),
        Some(t("2026-11-02T01:30:00-05:00"))
    );
    // Backwards from the later 01:30 finds the earlier one, the only firing of the day.
    assert_eq!(
        spec.prev_at_or_before(ny, t("2026-11-01T01:45:00-05:00")),
        Some(t("2026-11-01T01:30:00-04:00"))
    );
}

#[test]
fn hourly_fires_both_fall_back_instants() {
    let ny = tz("America/New_York");
    let spec = cron("30 * * * *");
    assert_eq!(
        nexts(&spec, ny, t("2026-11-01T00:00:00-04:00"), 4),
        [
            "2026-11-01T00:30:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:30:00-05:00",
        ]
    );
    // Their Occurrence keys differ (the offset), their Hour keys do not.
    let (a, b) = (
        t("2026-11-01T01:30:00-04:00"),
        t("2026-11-01T01:30:00-05:00"),
    );
    assert_ne!(
        period_key(PeriodUnit::Occurrence, ny, a),
        period_key(PeriodUnit::Occurrence, ny, b)
    );
    assert_eq!(
        period_key(PeriodUnit::Occurrence, ny, a),
        "2026-11-01T01:30:00-04:00"
    );
    assert_eq!(
        period_key(PeriodUnit::Hour, ny, a),
        period_key(PeriodUnit::Hour, ny, b)
    );
    // Backwards walks the same instants in reverse.
    let clock = spec.compile().unwrap();
    assert_eq!(
        clock.prev_before(ny, t("2026-11-01T02:30:00-05:00")),
        Some(b)
    );
    assert_eq!(clock.prev_before(ny, b), Some(a));
}

#[test]
fn hourly_skips_nonexistent_spring_forward_hour() {
    // An interval job has no wall clock time to match in the gap: 02:30 simply does not fire.
    let ny = tz("America/New_York");
    assert_eq!(
        nexts(&cron("30 * * * *"), ny, t("2026-03-08T01:00:00-05:00"), 2),
        ["2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"]
    );
}

#[test]
fn lord_howe_half_hour_dst() {
    // Lord Howe moves its clock by 30 minutes: 02:00 -> 02:30 on 2026-10-04, 02:00 -> 01:30
    // on 2026-04-05.
    let lh = tz("Australia/Lord_Howe");
    assert_eq!(
        nexts(&cron("15 2 * * *"), lh, t("2026-10-03T12:00:00+10:30"), 2),
        ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"]
    );
    assert_eq!(
        nexts(&cron("45 1 * * *"), lh, t("2026-04-04T12:00:00+11:00"), 2),
        ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"]
    );
}

// ---------------------------------------------------------------- zones and keys

#[test]
fn period_key_uses_schedule_zone() {
    let tokyo = tz("Asia/Tokyo");
    let spec = cron("0 6 * * *");
    let fire = spec.next_after(tokyo, t("2026-11-29T12:00:00Z")).unwrap();
    assert_eq!(fire, t("2026-11-29T21:00:00Z"));
    assert_eq!(format_local(tokyo, fire), "2026-11-30T06:00:00+09:00");
    assert_eq!(
        period_key(PeriodUnit::Day, tokyo, t("2026-11-29T21:30:00Z")),
        "2026-11-30"
    );
    assert_eq!(
        period_key(PeriodUnit::Day, chrono_tz::UTC, t("2026-11-29T21:30:00Z")),
        "2026-11-29"
    );
}

#[test]
fn period_keys_of_every_unit() {
    let berlin = tz("Europe/Berlin");
    let at = t("2026-11-29T07:05:09Z"); // 08:05:09 in Berlin
    let keys: Vec<String> = PeriodUnit::ALL
        .iter()
        .map(|u| period_key(*u, berlin, at))
        .collect();
    assert_eq!(
        keys,
        [
            "2026-11-29T08:05:09+01:00",
            "2026-11-29T08:05",
            "2026-11-29T08",
            "2026-11-29",
            "2026-W48",
            "2026-11",
            "2026",
        ]
    );
    // Sub-seconds do not leak into the occurrence key.
    let frac = at + Duration::milliseconds(250);
    assert_eq!(
        period_key(PeriodUnit::Occurrence, berlin, frac),
        "2026-11-29T08:05:09+01:00"
    );
}

#[test]
fn iso_week_key_at_year_boundary() {
    let utc = chrono_tz::UTC;
    let week = |s: &str| period_key(PeriodUnit::Week, utc, t(s));
    // 2026-12-31 is a Thursday: its week holds 4 days of 2026, so it is 2026-W53.
    assert_eq!(week("2026-12-31T12:00:00Z"), "2026-W53");
    // 2027-01-01 (Friday) belongs to the same ISO week, of ISO year 2026.
    assert_eq!(week("2027-01-01T12:00:00Z"), "2026-W53");
    assert_eq!(week("2027-01-04T12:00:00Z"), "2027-W01");
    assert_eq!(week("2021-01-03T12:00:00Z"), "2020-W53");
    // 2024-12-30 (Monday) is in 2025-W01: the ISO year runs ahead of the calendar year.
    assert_eq!(week("2024-12-30T12:00:00Z"), "2025-W01");
    // And the zone decides: 2021-01-03T23:30Z is already Monday 2021-01-04 in Tokyo.
    assert_eq!(
        period_key(
            PeriodUnit::Week,
            tz("Asia/Tokyo"),
            t("2021-01-03T23:30:00Z")
        ),
        "2021-W01"
    );
}

#[test]
fn period_unit_parse_and_as_str() {
    for u in PeriodUnit::ALL {
        assert_eq!(PeriodUnit::parse(u.as_str()).unwrap(), u);
    }
    assert_eq!(PeriodUnit::parse(" Week ").unwrap(), PeriodUnit::Week);
    assert_eq!(PeriodUnit::default(), PeriodUnit::Occurrence);
    assert_eq!(
        PeriodUnit::parse("fortnight").unwrap_err().field(),
        "period"
    );
    assert_eq!(
        serde_json::to_string(&PeriodUnit::Week).unwrap(),
        "\"week\""
    );
}

#[test]
fn parse_timezone_accepts_iana_names_only() {
    assert_eq!(
        parse_timezone("Europe/Berlin").unwrap(),
        chrono_tz::Europe::Berlin
    );
    assert_eq!(parse_timezone("UTC").unwrap(), chrono_tz::UTC);
    assert!(
        parse_timezone("UTC\n")
            .unwrap_err()
            .reason()
            .contains("control characters")
    );
    for bad in ["", "Mars/Olympus", "CEST+2", "europe/berlin "] {
        let e = parse_timezone(bad).unwrap_err();
        assert_eq!(e.field(), "timezone", "{bad:?}");
        assert!(e.reason().contains("IANA") && e.reason().contains("Europe/Berlin"));
    }
}

#[test]
fn format_local_uses_zone_offset() {
    let ny = tz("America/New_York");
    assert_eq!(
        format_local(ny, t("2026-03-08T07:00:00Z")),
        "2026-03-08T03:00:00-04:00"
    );
    assert_eq!(
        format_local(chrono_tz::UTC, t("2026-03-08T07:00:00.9Z")),
        "2026-03-08T07:00:00+00:00"
    );
}

// ---------------------------------------------------------------- cron syntax

#[test]
fn seconds_field_fires_every_ten_seconds() {
    let utc = chrono_tz::UTC;
    assert_eq!(
        nexts(&cron("*/10 * * * * *"), utc, t("2026-01-01T00:00:00Z"), 3),
        [
            "2026-01-01T00:00:10+00:00",
            "2026-01-01T00:00:20+00:00",
            "2026-01-01T00:00:30+00:00"
        ]
    );
}

#[test]
fn five_fields_have_zero_seconds() {
    let utc = chrono_tz::UTC;
    assert_eq!(
        nexts(&cron("*/5 * * * *"), utc, t("2026-01-01T00:00:01Z"), 2),
        ["2026-01-01T00:05:00+00:00", "2026-01-01T00:10:00+00:00"]
    );
    // `5-59/5` is how to write "every 5 minutes starting at 5".
    assert_eq!(
        nexts(&cron("5-59/5 * * * *"), utc, t("2026-01-01T00:00:00Z"), 1),
        ["2026-01-01T00:05:00+00:00"]
    );
}

#[test]
fn macros_work() {
    let berlin = tz("Europe/Berlin");
    let from = t("2026-11-25T10:17:00+01:00"); // a Wednesday
    let first = |e: &str| nexts(&cron(e), berlin, from, 1).remove(0);
    assert_eq!(first("@daily"), "2026-11-26T00:00:00+01:00");
    assert_eq!(first("@midnight"), "2026-11-26T00:00:00+01:00");
    assert_eq!(first("@hourly"), "2026-11-25T11:00:00+01:00");
    assert_eq!(first("@weekly"), "2026-11-29T00:00:00+01:00"); // Sunday
    assert_eq!(first("@monthly"), "2026-12-01T00:00:00+01:00");
    assert_eq!(first("@yearly"), "2027-01-01T00:00:00+01:00");
    assert_eq!(first("@annually"), "2027-01-01T00:00:00+01:00");
    assert_eq!(first("@DAILY"), "2026-11-26T00:00:00+01:00");
}

#[test]
fn invalid_cron_is_rejected_with_field_cron() {
    for bad in [
        "61 * * * *",
        "banana",
        "",
        "   ",
        "* * * *",
        "0 0 0 1 1 * 2030", // no year field
        "5/5 * * * *",      // croner 4 wants 5-59/5
        "0 0 30 2 *",       // parses, never fires
        "@fortnightly",
        "* 24 * * *",
    ] {
        let e = cron(bad).validate().unwrap_err();
        assert_eq!(e.field(), "cron", "{bad:?}");
        assert!(
            cron(bad)
                .next_after(chrono_tz::UTC, t("2026-01-01T00:00:00Z"))
                .is_none()
        );
    }
    assert!(
        cron("5/5 * * * *")
            .validate()
            .unwrap_err()
            .reason()
            .contains("5-59/5")
    );
    for good in [
        "* * * * *",
        "0 9 * * MON-FRI",
        "0 0 29 2 *",
        "0 0 L * *",
        "*/10 * * * * *",
    ] {
        cron(good)
            .validate()
            .unwrap_or_else(|e| panic!("{good:?}: {e}"));
    }
}

#[test]
fn sub_second_instants_are_handled() {
    let utc = chrono_tz::UTC;
    let spec = cron("0 9 * * *");
    let nine = t("2026-01-01T09:00:00Z");
    let after = nine + Duration::milliseconds(500);
    assert_eq!(
        spec.next_after(utc, nine - Duration::milliseconds(1)),
        Some(nine)
    );
    assert_eq!(spec.next_at_or_after(utc, nine), Some(nine));
    assert_eq!(
        spec.next_at_or_after(utc, after),
        Some(nine + Duration::days(1))
    );
    assert_eq!(spec.next_after(utc, after), Some(nine + Duration::days(1)));
    assert_eq!(spec.prev_at_or_before(utc, after), Some(nine));
    assert_eq!(
        spec.prev_at_or_before(utc, nine - Duration::milliseconds(1)),
        Some(nine - Duration::days(1))
    );
    let clock = spec.compile().unwrap();
    assert_eq!(clock.prev_before(utc, after), Some(nine));
    assert_eq!(clock.prev_before(utc, nine), Some(nine - Duration::days(1)));
}

// ---------------------------------------------------------------- interval and one-shot

#[test]
fn interval_next_and_prev() {
    let utc = chrono_tz::UTC;
    let anchor = t("2026-05-01T10:00:00.250Z");
    let spec = ScheduleSpec::Every {
        every_ms: 60_000,
        anchor,
    };
    let ms = Duration::milliseconds;
    spec.validate().unwrap();
    assert!(spec.is_recurring());
    assert_eq!(spec.next_after(utc, anchor), Some(anchor + ms(60_000)));
    assert_eq!(spec.next_after(utc, anchor - ms(1)), Some(anchor));
    assert_eq!(
        spec.next_after(utc, anchor - Duration::days(400)),
        Some(anchor)
    );
    assert_eq!(spec.next_at_or_after(utc, anchor), Some(anchor));
    assert_eq!(
        spec.next_at_or_after(utc, anchor + ms(1)),
        Some(anchor + ms(60_000))
    );
    assert_eq!(
        spec.next_after(utc, anchor + ms(119_999)),
        Some(anchor + ms(120_000))
    );
    assert_eq!(
        spec.next_after(utc, anchor + ms(120_000)),
        Some(anchor + ms(180_000))
    );
    assert_eq!(spec.prev_at_or_before(utc, anchor - ms(1)), None);
    assert_eq!(spec.prev_at_or_before(utc, anchor), Some(anchor));
    assert_eq!(
        spec.prev_at_or_before(utc, anchor + ms(59_999)),
        Some(anchor)
    );
    assert_eq!(
        spec.prev_at_or_before(utc, anchor + ms(60_000)),
        Some(anchor + ms(60_000))
    );
    let clock = spec.compile().unwrap();
    assert_eq!(clock.prev_before(utc, anchor), None);
    assert_eq!(clock.prev_before(utc, anchor + ms(60_000)), Some(anchor));
    assert_eq!(clock.count_in(anchor, anchor + ms(60_000)), Some(1));
    assert_eq!(clock.count_in(anchor - ms(1), anchor + ms(60_001)), Some(2));
    assert_eq!(clock.count_in(anchor - Duration::days(1), anchor), Some(0));
    // The zone plays no part in an interval (real time, not wall clock time).
    assert_eq!(
        spec.next_after(tz("America/New_York"), anchor),
        spec.next_after(tz("Asia/Tokyo"), anchor)
    );
}

#[test]
fn interval_bounds_are_validated() {
    let anchor = t("2026-01-01T00:00:00Z");
    let every = |every_ms| ScheduleSpec::Every { every_ms, anchor };
    every(1_000).validate().unwrap();
    every(MAX_INTERVAL_MS).validate().unwrap();
    for bad in [999, 0, -60_000, MAX_INTERVAL_MS + 1] {
        assert_eq!(
            every(bad).validate().unwrap_err().field(),
            "interval",
            "{bad}"
        );
    }
}

#[test]
fn at_fires_once() {
    let utc = chrono_tz::UTC;
    let at = t("2026-07-01T12:00:00Z");
    let spec = ScheduleSpec::At { at };
    spec.validate().unwrap();
    assert!(!spec.is_recurring());
    assert!(cron("@daily").is_recurring());
    assert_eq!(spec.next_after(utc, at - Duration::seconds(1)), Some(at));
    assert_eq!(spec.next_after(utc, at), None);
    assert_eq!(spec.next_at_or_after(utc, at), Some(at));
    assert_eq!(spec.prev_at_or_before(utc, at), Some(at));
    assert_eq!(spec.prev_at_or_before(utc, at - Duration::seconds(1)), None);
}

#[test]
fn specs_serialize_with_a_type_tag() {
    let specs = [
        cron("0 9 * * *"),
        ScheduleSpec::At {
            at: t("2026-07-01T12:00:00Z"),
        },
        ScheduleSpec::Every {
            every_ms: 60_000,
            anchor: t("2026-07-01T12:00:00Z"),
        },
    ];
    for s in &specs {
        let json = serde_json::to_string(s).unwrap();
        assert_eq!(&serde_json::from_str::<ScheduleSpec>(&json).unwrap(), s);
    }
    assert_eq!(
        serde_json::to_string(&specs[0]).unwrap(),
        r#"{"type":"cron","expr":"0 9 * * *"}"#
    );
}

// ---------------------------------------------------------------- misfire

#[test]
fn misfire_parse_and_repr() {
    assert_eq!(Misfire::parse("skip").unwrap(), Misfire::Skip);
    assert_eq!(Misfire::parse(" Once ").unwrap(), Misfire::Once);
    assert_eq!(Misfire::parse("all").unwrap(), Misfire::All { cap: 10 });
    assert_eq!(Misfire::parse("all:1").unwrap(), Misfire::All { cap: 1 });
    assert_eq!(
        Misfire::parse("all:1000").unwrap(),
        Misfire::All { cap: 1000 }
    );
    for bad in [
        "",
        "all:0",
        "all:1001",
        "all:",
        "all:x",
        "sometimes",
        "once:2",
    ] {
        assert_eq!(
            Misfire::parse(bad).unwrap_err().field(),
            "misfire",
            "{bad:?}"
        );
    }
    for m in [Misfire::Skip, Misfire::Once, Misfire::All { cap: 7 }] {
        assert_eq!(Misfire::parse(&m.to_string_repr()).unwrap(), m);
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Misfire>(&json).unwrap(), m);
    }
    assert_eq!(Misfire::default(), Misfire::Once);
    assert_eq!(
        serde_json::to_string(&Misfire::All { cap: 3 }).unwrap(),
        r#"{"policy":"all","cap":3}"#
    );
}

/// Daily 09:00 in Berlin; day 0 is 2026-11-26 (CET, +01:00).
fn berlin_daily() -> (ScheduleSpec, Tz, impl Fn(i64) -> DateTime<Utc>) {
    let day = |n: i64| t("2026-11-26T09:00:00+01:00") + Duration::days(n);
    (cron("0 9 * * *"), tz("Europe/Berlin"), day)
}

/// The plan with its gaps left out: the tests that pin which firings fire (the gaps have
/// tests of their own below).
fn without_gaps(p: FirePlan) -> FirePlan {
    FirePlan { gaps: vec![], ..p }
}

fn plan_berlin(misfire: Misfire, now: DateTime<Utc>) -> FirePlan {
    let (spec, zone, day) = berlin_daily();
    plan_firings(&spec, zone, misfire, day(0), now, Duration::seconds(60))
}

#[test]
fn misfire_skip_after_three_days_down() {
    let (_, _, day) = berlin_daily();
    // Just after day 3's firing: it is on time, days 0-2 are missed and skipped.
    let p = plan_berlin(Misfire::Skip, day(3) + Duration::milliseconds(500));
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(3)],
            skipped: 3,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
    // At noon, nothing is on time: all four are skipped.
    let p = plan_berlin(Misfire::Skip, day(3) + Duration::hours(3));
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![],
            skipped: 4,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
}

#[test]
fn misfire_once_after_three_days_down() {
    let (_, _, day) = berlin_daily();
    let p = plan_berlin(Misfire::Once, day(3) + Duration::hours(3));
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(3)],
            skipped: 3,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
    // With day 3 on time, the most recent *missed* one (day 2) fires too.
    let p = plan_berlin(Misfire::Once, day(3) + Duration::milliseconds(500));
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(2), day(3)],
            skipped: 2,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
}

#[test]
fn misfire_all_after_three_days_down() {
    let (_, _, day) = berlin_daily();
    let noon = day(3) + Duration::hours(3);
    let p = plan_berlin(Misfire::All { cap: 2 }, noon);
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(2), day(3)],
            skipped: 2,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
    let p = plan_berlin(Misfire::All { cap: 10 }, noon);
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(0), day(1), day(2), day(3)],
            skipped: 0,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
    let p = plan_berlin(
        Misfire::All { cap: 2 },
        day(3) + Duration::milliseconds(500),
    );
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![day(1), day(2), day(3)],
            skipped: 1,
            gaps: vec![],
            next_fire_at: Some(day(4))
        }
    );
}

/// S0-1: a row due at any past time runs late. With no policy given, a daily schedule down
/// for three days fires its most recent missed firing once, and records the older ones.
#[test]
fn default_misfire_is_once_so_a_recurring_schedule_runs_late_s0_1() {
    let (_, _, day) = berlin_daily();
    let p = plan_berlin(Misfire::default(), day(3) + Duration::hours(3));
    assert_eq!(p.fires, vec![day(3)]);
    assert_eq!(
        p.gaps,
        vec![MissedGap {
            reason: GapReason::Skip,
            first: day(0),
            last: day(2),
            count: 3
        }]
    );
}

fn berlin_rule(policy: Misfire, window: Duration) -> MisfireRule {
    MisfireRule {
        policy,
        threshold: Duration::seconds(60),
        window,
    }
}

/// A firing later than the schedule's window never runs, whatever the policy, and is a
/// `window` gap; the policy applies only to the missed firings inside the window.
#[test]
fn firing_older_than_the_window_is_not_run_and_is_a_window_gap() {
    let (spec, zone, day) = berlin_daily();
    let now = day(3) + Duration::hours(3);
    // A 36 h window: days 0 and 1 are too old, day 2 and 3 are missed inside it.
    let rule = berlin_rule(Misfire::All { cap: 10 }, Duration::hours(36));
    let p = plan(&spec, zone, rule, day(0), now);
    assert_eq!(p.fires, vec![day(2), day(3)]);
    assert_eq!(p.skipped, 2);
    assert_eq!(
        p.gaps,
        vec![MissedGap {
            reason: GapReason::Window,
            first: day(0),
            last: day(1),
            count: 2
        }]
    );
    // `once` inside the same window: day 3 fires, day 2 is dropped by the policy.
    let p = plan(
        &spec,
        zone,
        berlin_rule(Misfire::Once, Duration::hours(36)),
        day(0),
        now,
    );
    assert_eq!(p.fires, vec![day(3)]);
    assert_eq!(p.skipped, 3);
    assert_eq!(
        p.gaps
            .iter()
            .map(|g| (g.reason, g.first, g.last, g.count))
            .collect::<Vec<_>>(),
        vec![
            (GapReason::Window, day(0), day(1), 2),
            (GapReason::Skip, day(2), day(2), 1)
        ]
    );
    // A window shorter than the downtime: nothing runs.
    let p = plan(
        &spec,
        zone,
        berlin_rule(Misfire::Once, Duration::hours(1)),
        day(0),
        now,
    );
    assert_eq!((p.fires.len(), p.skipped), (0, 4));
    assert_eq!(p.gaps.len(), 1);
    assert_eq!(
        (p.gaps[0].reason, p.gaps[0].last),
        (GapReason::Window, day(3))
    );
    assert_eq!(p.next_fire_at, Some(day(4)));
}

/// The threshold is per schedule: a 4 h threshold makes a firing 3 h late on time.
#[test]
fn threshold_is_per_schedule() {
    let (spec, zone, day) = berlin_daily();
    let now = day(0) + Duration::hours(3);
    let mut rule = berlin_rule(Misfire::Skip, Duration::days(7));
    let p = plan(&spec, zone, rule, day(0), now);
    assert_eq!((p.fires.len(), p.gaps.len()), (0, 1));
    rule.threshold = Duration::hours(4);
    let p = plan(&spec, zone, rule, day(0), now);
    assert_eq!((p.fires, p.gaps), (vec![day(0)], vec![]));
}

/// A one-shot missed while no node ran fires late by default; with `skip` it is a `skip`
/// gap; older than its window it is a `window` gap. It finishes either way.
#[test]
fn missed_one_shot_fires_late_unless_skip_or_older_than_its_window_s0_1() {
    let at = t("2026-07-01T12:00:00Z");
    let spec = ScheduleSpec::At { at };
    let utc = chrono_tz::UTC;
    let now = at + Duration::minutes(3);
    let rule = |policy| MisfireRule {
        policy,
        threshold: Duration::seconds(60),
        window: Duration::days(7),
    };
    let p = plan(&spec, utc, rule(Misfire::default()), at, now);
    assert_eq!((p.fires, p.gaps, p.next_fire_at), (vec![at], vec![], None));
    let p = plan(&spec, utc, rule(Misfire::Skip), at, now);
    let gap = MissedGap {
        reason: GapReason::Skip,
        first: at,
        last: at,
        count: 1,
    };
    assert_eq!((p.fires, p.gaps, p.next_fire_at), (vec![], vec![gap], None));
    let p = plan(&spec, utc, rule(Misfire::Once), at, at + Duration::days(8));
    let gap = MissedGap {
        reason: GapReason::Window,
        ..gap
    };
    assert_eq!((p.fires, p.gaps, p.next_fire_at), (vec![], vec![gap], None));
}

#[test]
fn misfire_on_time_boundary_is_inclusive() {
    let (_, _, day) = berlin_daily();
    // now - t == threshold exactly: on time.
    let p = plan_berlin(Misfire::Skip, day(0) + Duration::seconds(60));
    assert_eq!(p.fires, vec![day(0)]);
    let p = plan_berlin(Misfire::Skip, day(0) + Duration::milliseconds(60_001));
    assert_eq!((p.fires.len(), p.skipped), (0, 1));
}

#[test]
fn misfire_not_due_returns_unchanged() {
    let (spec, zone, day) = berlin_daily();
    let p = plan_firings(
        &spec,
        zone,
        Misfire::All { cap: 5 },
        day(1),
        day(0),
        Duration::seconds(60),
    );
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![],
            skipped: 0,
            gaps: vec![],
            next_fire_at: Some(day(1))
        }
    );
}

#[test]
fn misfire_one_shot_finishes() {
    let at = t("2026-07-01T12:00:00Z");
    let spec = ScheduleSpec::At { at };
    let utc = chrono_tz::UTC;
    let p = plan_firings(
        &spec,
        utc,
        Misfire::Skip,
        at,
        at + Duration::seconds(1),
        Duration::seconds(60),
    );
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![at],
            skipped: 0,
            gaps: vec![],
            next_fire_at: None
        }
    );
    let p = plan_firings(
        &spec,
        utc,
        Misfire::Skip,
        at,
        at + Duration::hours(1),
        Duration::seconds(60),
    );
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![],
            skipped: 1,
            gaps: vec![],
            next_fire_at: None
        }
    );
    let p = plan_firings(
        &spec,
        utc,
        Misfire::Once,
        at,
        at + Duration::hours(1),
        Duration::seconds(60),
    );
    assert_eq!(
        without_gaps(p),
        FirePlan {
            fires: vec![at],
            skipped: 0,
            gaps: vec![],
            next_fire_at: None
        }
    );
}

#[test]
fn misfire_hourly_across_fall_back_fires_each_instant() {
    let ny = tz("America/New_York");
    let spec = cron("30 * * * *");
    let p = plan_firings(
        &spec,
        ny,
        Misfire::All { cap: 10 },
        t("2026-11-01T00:30:00-04:00"),
        t("2026-11-01T03:00:00-05:00"),
        Duration::seconds(60),
    );
    let fires: Vec<String> = p.fires.iter().map(|f| format_local(ny, *f)).collect();
    assert_eq!(
        fires,
        [
            "2026-11-01T00:30:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:30:00-05:00",
        ]
    );
    assert_eq!(p.next_fire_at, Some(t("2026-11-01T03:30:00-05:00")));
}

#[test]
fn misfire_is_bounded_for_every_second_schedule() {
    let start = std::time::Instant::now();
    let nfa = t("2026-11-26T08:00:00Z");
    let now = nfa + Duration::days(3) + Duration::milliseconds(500);
    let threshold = Duration::seconds(60);
    // Due: nfa ..= nfa + 259,200 s (259,201 firings). On time: now - t <= 60 s, i.e. the last
    // 60 (last - 59 s ..= last, as now is half a second past `last`). Missed: 259,141.
    let last = nfa + Duration::days(3);
    let secs = |from: DateTime<Utc>, n: i64| -> Vec<DateTime<Utc>> {
        (0..n).map(|i| from + Duration::seconds(i)).collect()
    };
    let on_time = secs(last - Duration::seconds(59), 60);
    for (spec, zone) in [
        (cron("* * * * * *"), chrono_tz::UTC),
        (cron("* * * * * *"), tz("Europe/Berlin")),
        (
            ScheduleSpec::Every {
                every_ms: 1_000,
                anchor: nfa - Duration::days(10),
            },
            chrono_tz::UTC,
        ),
    ] {
        let plan = |m| plan_firings(&spec, zone, m, nfa, now, threshold);

        let p = plan(Misfire::Skip);
        assert_eq!(p.fires, on_time, "{spec:?}");
        assert_eq!(p.skipped, 259_141);
        assert_eq!(p.next_fire_at, Some(last + Duration::seconds(1)));

        let p = plan(Misfire::Once);
        assert_eq!(p.fires, secs(last - Duration::seconds(60), 61));
        assert_eq!(p.skipped, 259_140);

        let p = plan(Misfire::All { cap: 1000 });
        assert_eq!(p.fires, secs(last - Duration::seconds(1059), 1060));
        assert_eq!(p.skipped, 258_141);
        assert_eq!(p.next_fire_at, Some(last + Duration::seconds(1)));
    }
    // Generous for a debug build; the point is "not 259,200 iterations per policy per zone
    // and not forever".
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn misfire_caps_on_time_firings() {
    // A 6-hour threshold on an every-second schedule: 21,601 on-time firings; the most recent
    // 10,000 fire, the rest count as missed.
    let nfa = t("2026-01-01T00:00:00Z");
    let now = nfa + Duration::hours(6);
    let p = plan_firings(
        &cron("* * * * * *"),
        chrono_tz::UTC,
        Misfire::Skip,
        nfa,
        now,
        Duration::hours(6),
    );
    assert_eq!(p.fires.len(), 10_000);
    assert_eq!(p.fires.first(), Some(&(now - Duration::seconds(9_999))));
    assert_eq!(p.fires.last(), Some(&now));
    assert_eq!(p.skipped, 21_601 - 10_000);
}

#[test]
fn backward_search_mirrors_forward_across_dst_days() {
    // The planner walks backwards past its counting bound; it must see exactly the firings
    // the forward walk sees, in reverse, including around gaps and folds.
    let cases = [
        (
            "America/New_York",
            "2026-03-07T20:00:00Z",
            "2026-03-09T12:00:00Z",
        ),
        (
            "America/New_York",
            "2026-10-31T20:00:00Z",
            "2026-11-02T12:00:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "2026-04-04T00:00:00Z",
            "2026-04-05T12:00:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "2026-10-03T00:00:00Z",
            "2026-10-04T12:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2026-03-28T12:00:00Z",
            "2026-03-30T00:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2026-10-24T12:00:00Z",
            "2026-10-26T00:00:00Z",
        ),
    ];
    let exprs = [
        "30 2 * * *",
        "30 1 * * *",
        "*/15 * * * *",
        "0,30 1-3 * * *",
        "15 2 * * *",
        "0 * * * *",
    ];
    for (zone, from, until) in cases {
        let zone = tz(zone);
        let (from, until) = (t(from), t(until));
        for expr in exprs {
            let clock = cron(expr).compile().unwrap();
            let mut forward = Vec::new();
            let mut cur = clock.next_at_or_after(zone, from);
            while let Some(x) = cur.filter(|x| *x <= until) {
                forward.push(x);
                cur = clock.next_after(zone, x);
            }
            let mut backward = Vec::new();
            let mut cur = clock.prev_at_or_before(zone, until);
            while let Some(x) = cur.filter(|x| *x >= from) {
                backward.push(x);
                cur = clock.prev_before(zone, x);
            }
            backward.reverse();
            assert_eq!(forward, backward, "{zone} {expr}");
        }
    }
}

// ---------------------------------------------------------------- properties

const ZONES: [&str; 5] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Tokyo",
    "Australia/Lord_Howe",
];

fn cron_expr() -> impl Strategy<Value = String> {
    let minute = prop::sample::select(vec![
        "*", "0", "30", "59", "*/15", "5-59/10", "0,30", "15-45",
    ]);
    let hour = prop::sample::select(vec!["*", "0", "1", "2", "3", "23", "*/6", "1-3", "9-17/2"]);
    let dow = prop::sample::select(vec!["*", "*", "1-5", "0"]);
    (minute, hour, dow).prop_map(|(m, h, d)| format!("{m} {h} * * {d}"))
}

/// Instants in 2026: half uniform, half within 36 hours of a DST change of one of the zones
/// (uniform instants rarely land on the days that matter most).
fn instant_2026() -> impl Strategy<Value = DateTime<Utc>> {
    let start = t("2026-01-01T00:00:00Z").timestamp_millis();
    let end = t("2027-01-01T00:00:00Z").timestamp_millis();
    let uniform = (start..end).prop_map(|ms| DateTime::from_timestamp_millis(ms).unwrap());
    let changes = vec![
        t("2026-03-08T07:00:00Z"), // New York, spring
        t("2026-11-01T06:00:00Z"), // New York, fall
        t("2026-03-29T01:00:00Z"), // Berlin, spring
        t("2026-10-25T01:00:00Z"), // Berlin, fall
        t("2026-04-04T15:00:00Z"), // Lord Howe, fall (02:00 +11 -> 01:30 +10:30)
        t("2026-10-03T15:30:00Z"), // Lord Howe, spring (02:00 +10:30 -> 02:30 +11)
    ];
    let near = (prop::sample::select(changes), -129_600_000i64..129_600_000)
        .prop_map(|(c, ms)| c + Duration::milliseconds(ms));
    prop_oneof![uniform, near]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cron_next_is_increasing_and_prev_finds_it(
        expr in cron_expr(),
        zone in prop::sample::select(ZONES.to_vec()),
        start in instant_2026(),
    ) {
        let zone = tz(zone);
        let spec = cron(&expr);
        let clock = spec.compile().unwrap();
        let mut prev = start;
        let mut last_fire: Option<DateTime<Utc>> = None;
        for _ in 0..20 {
            let next = spec.next_after(zone, prev).unwrap();
            prop_assert!(next > prev, "{expr} in {zone}: next_after({prev}) = {next}");
            prop_assert_eq!(spec.prev_at_or_before(zone, next), Some(next), "{} in {}", expr, zone);
            if let Some(l) = last_fire {
                // Nothing fires strictly between two consecutive firings, seen backwards too.
                prop_assert_eq!(clock.prev_before(zone, next), Some(l), "{} in {}", expr, zone);
            }
            last_fire = Some(next);
            prev = next;
        }
    }
}

proptest! {
    #[test]
    fn interval_next_and_prev_agree(
        every_ms in MIN_INTERVAL_MS..=MAX_INTERVAL_MS,
        anchor in instant_2026(),
        start in instant_2026(),
    ) {
        let spec = ScheduleSpec::Every { every_ms, anchor };
        let utc = chrono_tz::UTC;
        let next = spec.next_after(utc, start).unwrap();
        prop_assert!(next > start && next >= anchor);
        prop_assert!(next - start <= Duration::milliseconds(every_ms) || start < anchor);
        prop_assert_eq!(spec.prev_at_or_before(utc, next), Some(next));
        prop_assert_eq!(spec.next_at_or_after(utc, next), Some(next));
        let clock = spec.compile().unwrap();
        if let Some(before) = clock.prev_before(utc, next) {
            prop_assert_eq!(next - before, Duration::milliseconds(every_ms));
            prop_assert!(before <= start);
        } else {
            prop_assert_eq!(next, anchor);
        }
    }
}

/// Regression: the planner asks "at or after next_fire_at"; for a firing shifted out of a
/// spring-forward gap that must return the firing itself, not the next day's.
#[test]
fn at_or_after_returns_gap_shifted_firing() {
    let spec = cron("30 2 * * *");
    let ny = tz("America/New_York");
    let shifted = t("2026-03-08T03:00:00-04:00");
    assert_eq!(spec.next_at_or_after(ny, shifted), Some(shifted));
    let plan = plan_firings(
        &spec,
        ny,
        Misfire::Skip,
        shifted,
        shifted,
        Duration::seconds(60),
    );
    assert_eq!(plan.fires, vec![shifted]);
    assert_eq!(plan.next_fire_at, Some(t("2026-03-09T02:30:00-04:00")));
}

/// The monitor's expected firings: inclusive at both ends, bounded by `limit`, and
/// following the zone's wall clock across DST (a day of 23 hours has 23 hourly firings).
#[test]
fn firings_between_is_inclusive_bounded_and_zone_aware() {
    let hourly = cron("0 * * * *");
    let utc = tz("UTC");
    let v = hourly.firings_between(
        utc,
        t("2026-11-29T10:00:00Z"),
        t("2026-11-29T13:00:00Z"),
        100,
    );
    assert_eq!(v.len(), 4);
    assert_eq!(v[0], t("2026-11-29T10:00:00Z"));
    assert_eq!(v[3], t("2026-11-29T13:00:00Z"));
    assert_eq!(
        hourly
            .firings_between(utc, t("2026-11-29T10:00:00Z"), t("2026-11-30T10:00:00Z"), 5)
            .len(),
        5
    );
    let ny = tz("America/New_York");
    let spring = hourly.firings_between(
        ny,
        t("2026-03-08T00:00:00-05:00"),
        t("2026-03-08T23:59:00-04:00"),
        100,
    );
    assert_eq!(spring.len(), 23, "{spring:?}");
    let bad = cron("not a cron");
    assert!(
        bad.firings_between(utc, t("2026-11-29T10:00:00Z"), t("2026-11-30T10:00:00Z"), 5)
            .is_empty()
    );
}

/// Found by the `schedule_cron` fuzz target: croner reads an empty list item as a field that
/// matches nothing, and validating `0 , * * *` took over a second (the never-fires probe
/// walked to year 9999). It is refused at once, naming the field.
#[test]
fn cron_with_an_empty_list_item_is_refused_without_searching() {
    for expr in ["0 , * * *", "0 1,,2 * * *", "0 1, * * *", ",5 * * * *"] {
        let e = cron(expr).validate().unwrap_err();
        assert_eq!(e.field(), "cron");
        assert!(e.to_string().contains("empty list item"), "{expr}: {e}");
    }
    assert!(cron("0 1,2 * * *").validate().is_ok());
}

/// A refused cron expression names the field at fault (`minute 61 out of range (0-59)`), not
/// croner's "Component error: Number out of bounds.".
#[test]
fn cron_errors_name_the_field() {
    let reason = |expr: &str| cron(expr).validate().unwrap_err().reason().to_string();
    assert!(
        reason("61 * * * *").starts_with("minute 61 out of range (0-59) in \"61 * * * *\""),
        "{}",
        reason("61 * * * *")
    );
    assert!(reason("0 24 * * *").starts_with("hour 24 out of range (0-23)"));
    assert!(reason("0 0 0 * *").starts_with("day-of-month 0 out of range (1-31)"));
    assert!(reason("0 0 1 1-13 *").starts_with("month 13 out of range (1-12)"));
    assert!(reason("0 0 * * 1,9").starts_with("day-of-week 9 out of range (0-7)"));
    assert!(reason("75 0 0 * * *").starts_with("second 75 out of range (0-59)"));
    assert!(
        reason("0 x * * *").starts_with("hour field \"x\" is not valid"),
        "{}",
        reason("0 x * * *")
    );
    // Not one field's fault: the general message.
    assert!(reason("* * *").contains("is not a cron expression of 5 fields"));
    assert_eq!(
        cron("61 * * * *").validate().unwrap_err().field(),
        "cron",
        "the API field stays `cron`"
    );
}
