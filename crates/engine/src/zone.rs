//! The time zone of a stored schedule, parsed in one place.

use kairos_store::Schedule;

/// The zone of a stored schedule; an error names `timezone` when it is not a known IANA zone.
/// Trimmed first: a row stored before control characters were refused (`"UTC\n"`) still
/// reads as its zone.
pub fn tz_of(s: &Schedule) -> Result<chrono_tz::Tz, kairos_core::Error> {
    kairos_core::schedule::parse_timezone(s.timezone.trim())
}
