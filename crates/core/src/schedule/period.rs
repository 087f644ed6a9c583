//! Period keys: which period (day, ISO week, …) a firing belongs to, in the schedule's zone.

use crate::error::Error;
use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// Granularity of an occurrence's period key (see [`period_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PeriodUnit {
    /// Each firing is its own period: the local instant with offset.
    #[default]
    Occurrence,
    /// The local minute, `2026-11-29T08:05`.
    Minute,
    /// The local hour, `2026-11-29T08`.
    Hour,
    /// The local calendar day, `2026-11-29`.
    Day,
    /// The ISO 8601 week, `2026-W48` (ISO week-year). Also accepted as `iso_week`.
    #[serde(alias = "iso_week")]
    Week,
    /// The local month, `2026-11`.
    Month,
    /// The local year, `2026`.
    Year,
}

impl PeriodUnit {
    /// Every unit, in order of granularity.
    pub const ALL: [PeriodUnit; 7] = [
        PeriodUnit::Occurrence,
        PeriodUnit::Minute,
        PeriodUnit::Hour,
        PeriodUnit::Day,
        PeriodUnit::Week,
        PeriodUnit::Month,
        PeriodUnit::Year,
    ];

    /// Parse `occurrence`, `minute`, `hour`, `day`, `week`, `month` or `year` (case-insensitive).
    /// Error field `period`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let t = s.trim();
        // `iso_week` is the name the seed-003 contract uses for the ISO week.
        if t.eq_ignore_ascii_case("iso_week") {
            return Ok(PeriodUnit::Week);
        }
        PeriodUnit::ALL.into_iter().find(|u| u.as_str().eq_ignore_ascii_case(t)).ok_or_else(|| {
            Error::invalid(
                "period",
                format!(
                    "{s:?} is not a period unit: use one of occurrence, minute, hour, day, week \
                     (or iso_week), month, year"
                ),
            )
        })
    }

    /// The canonical name (`occurrence`, `minute`, …), as [`parse`](Self::parse) accepts it.
    pub fn as_str(self) -> &'static str {
        match self {
            PeriodUnit::Occurrence => "occurrence",
            PeriodUnit::Minute => "minute",
            PeriodUnit::Hour => "hour",
            PeriodUnit::Day => "day",
            PeriodUnit::Week => "week",
            PeriodUnit::Month => "month",
            PeriodUnit::Year => "year",
        }
    }
}

/// The period key of a firing at `fire_at`, seen in zone `tz` (the schedule's zone decides the
/// day, not UTC: 06:00 in Tokyo on Nov 30 is 21:00Z on Nov 29 and its Day key is `2026-11-30`).
///
/// - Occurrence: the local RFC 3339 instant with offset, seconds precision,
///   `2026-11-01T01:30:00-04:00`. The offset is what makes the two 01:30s of a fall-back day
///   distinct keys (both fire for an hourly schedule, and must not dedupe into one job).
/// - Minute `2026-11-29T08:05`, Hour `2026-11-29T08`, Day `2026-11-29`, Month `2026-11`,
///   Year `2026`: local wall clock fields. On a fall-back day, both 01:30s share the Hour key:
///   deliberately, an hour-keyed job runs once per wall clock hour.
/// - Week: the ISO 8601 week with its ISO **week-year** (`2026-W48`; 2021-01-03 is `2020-W53`),
///   which differs from the calendar year around New Year.
pub fn period_key(unit: PeriodUnit, tz: Tz, fire_at: DateTime<Utc>) -> String {
    let local = fire_at.with_timezone(&tz);
    match unit {
        PeriodUnit::Occurrence => local.to_rfc3339_opts(SecondsFormat::Secs, false),
        PeriodUnit::Minute => local.format("%Y-%m-%dT%H:%M").to_string(),
        PeriodUnit::Hour => local.format("%Y-%m-%dT%H").to_string(),
        PeriodUnit::Day => local.format("%Y-%m-%d").to_string(),
        PeriodUnit::Week => {
            let w = local.iso_week();
            format!("{:04}-W{:02}", w.year(), w.week())
        }
        PeriodUnit::Month => local.format("%Y-%m").to_string(),
        PeriodUnit::Year => format!("{:04}", local.year()),
    }
}
