//! The schedule parser: cron expressions (5 or 6 fields, macros), time zone names and misfire
//! policies. Input lines: cron expression, zone, instant, misfire policy.
//!
//! Beyond "no panic": a valid expression survives a JSON round trip of its spec and surrounding
//! whitespace; the next firing after an instant is later than it, is found again searching
//! forwards from itself and backwards from itself; a parsed zone or misfire policy parses back
//! from its canonical name to the same value.
#![no_main]

use kairos_core::schedule::{Misfire, ScheduleSpec, parse_timezone};
use kairos_fuzz::{fields, instant, zone};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = fields(data, 4);
    let (expr, tz_name, at, misfire) = (&f[0], &f[1], &f[2], &f[3]);

    if let Ok(tz) = parse_timezone(tz_name) {
        assert_eq!(parse_timezone(tz.name()).ok(), Some(tz), "zone {tz_name:?}");
    }
    if let Ok(m) = Misfire::parse(misfire) {
        assert_eq!(
            Misfire::parse(&m.to_string_repr()).ok(),
            Some(m),
            "misfire {misfire:?}"
        );
    }

    let spec = ScheduleSpec::Cron { expr: expr.clone() };
    let Ok(()) = spec.validate() else { return };
    let json = serde_json::to_string(&spec).expect("a spec serializes");
    let back: ScheduleSpec = serde_json::from_str(&json).expect("a spec's JSON reads back");
    assert_eq!(back, spec);
    assert!(back.validate().is_ok());
    let padded = ScheduleSpec::Cron {
        expr: format!("  {expr}\t"),
    };
    assert!(
        padded.validate().is_ok(),
        "whitespace around {expr:?} changes validity"
    );
    assert!(spec.is_recurring());

    let tz = zone(tz_name);
    let t = instant(at);
    if let Some(next) = spec.next_after(tz, t) {
        assert!(
            next > t,
            "{expr:?} in {tz}: next_after({t}) = {next} is not later"
        );
        assert_eq!(
            spec.next_at_or_after(tz, next),
            Some(next),
            "{expr:?} in {tz} at {t}"
        );
        assert_eq!(
            spec.prev_at_or_before(tz, next),
            Some(next),
            "{expr:?} in {tz} at {t}"
        );
        let at_or_after = spec.next_at_or_after(tz, t);
        assert!(
            at_or_after.is_some_and(|a| a >= t && a <= next),
            "{expr:?} in {tz} at {t}"
        );
        if let Some(second) = spec.next_after(tz, next) {
            assert!(
                second > next,
                "{expr:?} in {tz}: firings go backwards after {next}"
            );
            assert_eq!(spec.prev_at_or_before(tz, second), Some(second));
        }
        assert_eq!(padded.next_after(tz, t), Some(next));
    }
    if let Some(prev) = spec.prev_at_or_before(tz, t) {
        assert!(
            prev <= t,
            "{expr:?} in {tz}: prev_at_or_before({t}) = {prev} is later"
        );
        assert_eq!(
            spec.next_at_or_after(tz, prev),
            Some(prev),
            "{expr:?} in {tz} at {t}"
        );
    }
});
