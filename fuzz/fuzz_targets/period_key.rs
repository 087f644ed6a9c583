//! Period keys: which period (day, ISO week, …) a firing belongs to, in the schedule's zone.
//! Input lines: period unit, zone, instant (RFC 3339 or seconds since the epoch).
//!
//! Beyond "no panic": a parsed unit parses back from its canonical name and survives JSON; the
//! keys of one instant nest (year ⊂ month ⊂ day ⊂ hour ⊂ minute ⊂ occurrence); the occurrence
//! key is RFC 3339 and reads back as the same instant (to the second); the week key is
//! `YYYY-Www` with a week of 1 to 53.
#![no_main]

use chrono::{DateTime, Datelike, SubsecRound};
use kairos_core::schedule::{PeriodUnit, period_key};
use kairos_fuzz::{fields, instant, zone};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = fields(data, 3);
    if let Ok(u) = PeriodUnit::parse(&f[0]) {
        assert_eq!(PeriodUnit::parse(u.as_str()).ok(), Some(u));
        let json = serde_json::to_string(&u).expect("a unit serializes");
        assert_eq!(serde_json::from_str::<PeriodUnit>(&json).ok(), Some(u));
    }
    let tz = zone(&f[1]);
    let t = instant(&f[2]);
    let key = |u| period_key(u, tz, t);
    let (occ, min, hour, day, week, month, year) = (
        key(PeriodUnit::Occurrence),
        key(PeriodUnit::Minute),
        key(PeriodUnit::Hour),
        key(PeriodUnit::Day),
        key(PeriodUnit::Week),
        key(PeriodUnit::Month),
        key(PeriodUnit::Year),
    );
    let local_year = t.with_timezone(&tz).year();
    // Past 9999 in the zone (an instant late on 9999-12-31 UTC, east of Greenwich) the keys
    // are no longer four-digit years; only the absence of a panic is asserted there.
    if !(0..=9999).contains(&local_year) {
        return;
    }
    assert_eq!(year.len(), 4, "{year}");
    assert!(
        month.starts_with(&format!("{year}-")) && month.len() == 7,
        "{month}"
    );
    assert!(
        day.starts_with(&format!("{month}-")) && day.len() == 10,
        "{day}"
    );
    assert!(
        hour.starts_with(&format!("{day}T")) && hour.len() == 13,
        "{hour}"
    );
    assert!(
        min.starts_with(&format!("{hour}:")) && min.len() == 16,
        "{min}"
    );
    assert!(
        occ.starts_with(&format!("{min}:")),
        "{occ} does not extend {min}"
    );
    let back = DateTime::parse_from_rfc3339(&occ).expect("the occurrence key is RFC 3339");
    assert_eq!(back, t.trunc_subsecs(0), "{occ} is not {t}");
    let (wy, ww) = week.split_once("-W").expect("week key is YYYY-Www");
    let wy: i32 = wy.parse().expect("week-year");
    let ww: u32 = ww.parse().expect("week number");
    assert!((1..=53).contains(&ww) && week.len() == 8, "{week}");
    assert!((wy - local_year).abs() <= 1, "{week} is far from {year}");
});
