//! The facade's schedule operations: a definition validated (its kind's parts by the kind
//! layer), created, replaced, paused, deleted, listed, and fired by hand.

use super::{FiredNow, Kairos, MAX_NAME, NewSchedule, parse_instant, tz_of};
use crate::error::OpsError;
use crate::expand::jobs_for_firing;
use crate::kinds::{KindRequest, RequestScope};
use chrono::{DateTime, SubsecRound, Utc};
use kairos_core::JobKind;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::{
    Misfire, Overlap, PeriodUnit, ScheduleSpec, parse_timezone, period_key,
};
use kairos_store::*;

/// The longest misfire window (a year and a day: Temporal's default catch-up window is a year).
const MAX_MISFIRE_WINDOW: std::time::Duration = std::time::Duration::from_secs(366 * 24 * 3600);

/// A schedule's `misfire_threshold` and `misfire_window`, checked: the threshold at least 1 s,
/// the window at most 366 days, and the threshold not longer than the window (the default
/// window when none is given). The error names the field.
pub(crate) fn misfire_durations(
    threshold: Option<&str>,
    window: Option<&str>,
) -> Result<(Option<std::time::Duration>, Option<std::time::Duration>), OpsError> {
    use kairos_core::retry::{format_duration, parse_duration};
    let threshold = threshold
        .map(|t| parse_duration("misfire_threshold", t))
        .transpose()?;
    let window = window
        .map(|w| parse_duration("misfire_window", w))
        .transpose()?;
    if let Some(t) = threshold
        && t < std::time::Duration::from_secs(1)
    {
        return Err(OpsError::invalid(
            "misfire_threshold",
            "must be at least 1s",
        ));
    }
    if let Some(w) = window
        && (w < std::time::Duration::from_secs(1) || w > MAX_MISFIRE_WINDOW)
    {
        return Err(OpsError::invalid(
            "misfire_window",
            "must be between 1s and 366 days",
        ));
    }
    let effective = window.unwrap_or(kairos_core::schedule::DEFAULT_MISFIRE_WINDOW);
    if let Some(t) = threshold
        && t > effective
    {
        return Err(OpsError::invalid(
            "misfire_threshold",
            format!(
                "{} is longer than the misfire window ({}): a late firing must be missed before it is too old to run",
                format_duration(t),
                format_duration(effective)
            ),
        ));
    }
    Ok((threshold, window))
}

impl Kairos {
    /// The kind parts a schedule request gives (its own and its channels'), each with its
    /// kind: what takes effect once the schedule is saved ([`Kind::request_accepted`]).
    ///
    /// [`Kind::request_accepted`]: crate::kinds::Kind::request_accepted
    fn parts_given(&self, req: &NewSchedule) -> Vec<(&'static str, serde_json::Value)> {
        let own = (req.kind.as_deref(), &req.parts);
        let channels = req.channels.iter().flatten();
        std::iter::once(own)
            .chain(channels.map(|c| (Some(c.kind.as_str()), &c.parts)))
            .filter_map(|(kind, parts)| {
                let k = self.kinds.get(kind.unwrap_or(crate::kinds::webhook::NAME));
                let part = parts.get(k.request_part()?).filter(|v| !v.is_null())?;
                Some((k.name(), part.clone()))
            })
            .collect()
    }

    /// Let each kind's part of a saved schedule take effect.
    async fn parts_accepted(
        &self,
        given: &[(&'static str, serde_json::Value)],
    ) -> Result<(), OpsError> {
        for (kind, part) in given {
            let k = self.kinds.get(kind);
            k.request_accepted(&self.env(), part).await?;
        }
        Ok(())
    }

    async fn schedule_def(
        &self,
        id: String,
        req: NewSchedule,
    ) -> Result<(ScheduleCreate, Vec<String>), OpsError> {
        let now = self.clock.now();
        // An unknown field first, as when serde refused it while reading the request.
        self.kinds
            .check_parts(&req.parts, RequestScope::Schedule, false)?;
        for (i, c) in req.channels.iter().flatten().enumerate() {
            self.kinds
                .check_parts(&c.parts, RequestScope::Schedule, true)
                .map_err(|e| e.under(&format!("channels[{i}]")))?;
        }
        let name = req.name.trim().to_string();
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(OpsError::invalid(
                "name",
                format!("must be 1 to {MAX_NAME} characters"),
            ));
        }
        kairos_core::text::check_text("name", &req.name)?;
        let tz_name = req.timezone.clone().unwrap_or_else(|| "UTC".into());
        let tz = parse_timezone(&tz_name)?;
        // Stored as the zone's own name, never as given (no stray spaces).
        let tz_name = tz.name().to_string();
        let spec = match (&req.cron, &req.at, &req.every) {
            (Some(expr), None, None) => ScheduleSpec::Cron {
                expr: expr.trim().to_string(),
            },
            (None, Some(at), None) => ScheduleSpec::At {
                at: parse_instant("at", at)?.trunc_subsecs(3),
            },
            (None, None, Some(every)) => {
                let d = kairos_core::retry::parse_duration("every", every)?;
                // Millisecond precision, as instants are stored: an anchor with nanoseconds
                // would sit just after the stored `next_fire_at` and fire a second time.
                let anchor = match &req.start_at {
                    Some(s) => parse_instant("start_at", s)?,
                    None => now,
                }
                .trunc_subsecs(3);
                ScheduleSpec::Every {
                    every_ms: d.as_millis().min(i64::MAX as u128) as i64,
                    anchor,
                }
            }
            (None, None, None) => {
                return Err(OpsError::invalid(
                    "cron",
                    "one of \"cron\", \"at\" or \"every\" is required",
                ));
            }
            _ => {
                return Err(OpsError::invalid(
                    "cron",
                    "give only one of \"cron\", \"at\" or \"every\"",
                ));
            }
        };
        spec.validate()?;
        let misfire = match req.misfire.as_deref() {
            Some(m) => Misfire::parse(m)?,
            None => Misfire::default(),
        };
        let (misfire_threshold, misfire_window) = misfire_durations(
            req.misfire_threshold.as_deref(),
            req.misfire_window.as_deref(),
        )?;
        let overlap = match req.overlap.as_deref() {
            Some(o) => Overlap::parse(o)?,
            None => Overlap::default(),
        };
        let period = PeriodUnit::parse(req.period.as_deref().unwrap_or("occurrence"))?;
        if let Some(c) = &req.concurrency {
            crate::concurrency::check(c)?;
        }
        if let Some(chs) = &req.channels {
            let base = ScheduleCreate {
                id,
                name,
                kind: JobKind::new(crate::kinds::webhook::NAME),
                spec,
                timezone: tz_name,
                period,
                misfire,
                misfire_threshold,
                misfire_window,
                overlap,
                payload: serde_json::json!({}),
                endpoint_id: None,
                retry: None,
                channels: Vec::new(),
                paused: req.paused.unwrap_or(false),
                next_fire_at: None,
                now,
                concurrency: req.concurrency.clone(),
            };
            return self.schedule_def_channels(base, &req, chs, tz).await;
        }
        let kind = self.check_kind(req.kind.as_deref())?;
        let k = self.kinds.get(kind.as_str());
        let retry = req
            .retry
            .as_ref()
            .map(|r| r.to_policy(&k.default_retry()))
            .transpose()?;
        let parts = KindRequest {
            payload: req.payload.as_ref(),
            parts: &req.parts,
            retry: retry.as_ref(),
            scope: RequestScope::Schedule,
        };
        let payload = k.request_payload(&self.env(), parts).await?;
        let payload = self.audience_payload(&kind, req.topic.as_deref(), payload)?;
        let catch_up = crate::catch_up::parse_times(req.catch_up.as_deref().unwrap_or(&[]))?;
        if !catch_up.is_empty() && !k.allows_catch_up() {
            return Err(OpsError::invalid(
                "catch_up",
                format!(
                    "is not available for {} (audience) schedules: each subscriber's {} is created once per period",
                    k.name(),
                    if k.records_exposure() { "mail" } else { "job" }
                ),
            ));
        }
        let next_fire_at = spec.next_at_or_after(tz, now);
        if next_fire_at.is_none() {
            return Err(OpsError::invalid(
                "at",
                "is in the past: the schedule would never fire",
            ));
        }
        let endpoint_id = self.endpoint_for(&kind, req.webhook.as_ref()).await?;
        let def = ScheduleCreate {
            id,
            name,
            kind,
            spec,
            timezone: tz_name,
            period,
            misfire,
            misfire_threshold,
            misfire_window,
            overlap,
            payload,
            endpoint_id,
            retry,
            channels: Vec::new(),
            paused: req.paused.unwrap_or(false),
            next_fire_at,
            now,
            concurrency: req.concurrency.clone(),
        };
        Ok((def, catch_up))
    }

    /// Create a schedule. Its first firing is the first at or after now.
    pub async fn schedule_create(&self, req: NewSchedule) -> Result<Schedule, OpsError> {
        let id = new_id(IdPrefix::Schedule, self.clock.now());
        let given = self.parts_given(&req);
        let (def, catch_up) = self.schedule_def(id, req).await?;
        let s = self
            .store
            .schedule_create(def)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::Conflict => OpsError::conflict("a schedule with this name exists"),
                _ => e.into(),
            })?;
        if !catch_up.is_empty()
            && let Err(e) = self.catch_up_set(&s, &catch_up).await
        {
            // Not half-created: a schedule without the catch-ups it was asked for would
            // silently lack its safety net.
            let _ = self.store.schedule_delete(&s.id).await;
            return Err(e);
        }
        self.parts_accepted(&given).await?;
        self.wake.notify_one();
        Ok(s)
    }

    /// Replace a schedule's definition; its next firing is recomputed from now.
    pub async fn schedule_update(&self, id: &str, req: NewSchedule) -> Result<Schedule, OpsError> {
        let given = self.parts_given(&req);
        let (def, catch_up) = self.schedule_def(id.to_string(), req).await?;
        let s = self
            .store
            .schedule_update(ScheduleUpdate {
                id: id.to_string(),
                def,
            })
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))?;
        self.parts_accepted(&given).await?;
        self.catch_up_set(&s, &catch_up).await?;
        self.wake.notify_one();
        Ok(s)
    }

    /// A schedule.
    pub async fn schedule_get(&self, id: &str) -> Result<Schedule, OpsError> {
        self.store
            .schedule_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))
    }

    /// Schedules, newest first.
    pub async fn schedule_list(
        &self,
        state: Option<String>,
        limit: Option<i64>,
    ) -> Result<Vec<Schedule>, OpsError> {
        if let Some(s) = &state
            && !["active", "paused", "finished"].contains(&s.as_str())
        {
            return Err(OpsError::invalid(
                "state",
                "must be one of active, paused, finished",
            ));
        }
        Ok(self
            .store
            .schedule_list(ScheduleList { state, limit })
            .await?)
    }

    /// Pause or resume. Resuming does not fire what was missed while paused: the next firing
    /// is the first from now.
    pub async fn schedule_pause(&self, id: &str, paused: bool) -> Result<Schedule, OpsError> {
        let s = self.schedule_get(id).await?;
        let now = self.clock.now();
        let next = if paused {
            None
        } else {
            s.spec.next_at_or_after(tz_of(&s)?, now)
        };
        let s = self
            .store
            .schedule_pause(SchedulePause {
                id: id.to_string(),
                paused,
                next_fire_at: next,
                now,
            })
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))?;
        if !paused {
            // Catch-ups count from the resumption too.
            let times: Vec<String> = self
                .store
                .catch_up_list(id)
                .await?
                .into_iter()
                .map(|c| c.at)
                .collect();
            if !times.is_empty() {
                self.catch_up_set(&s, &times).await?;
            }
        }
        self.wake.notify_one();
        Ok(s)
    }

    /// Delete a schedule; its jobs stay.
    pub async fn schedule_delete(&self, id: &str) -> Result<(), OpsError> {
        if self.store.schedule_delete(id).await? {
            Ok(())
        } else {
            Err(OpsError::not_found("schedule", id))
        }
    }

    /// The next `n` firings of a schedule from now.
    pub fn schedule_upcoming(&self, s: &Schedule, n: usize) -> Vec<DateTime<Utc>> {
        let Ok(tz) = tz_of(s) else { return vec![] };
        let mut out = Vec::new();
        let mut t = s.next_fire_at;
        while let Some(at) = t {
            if out.len() >= n {
                break;
            }
            out.push(at);
            t = s.spec.next_after(tz, at);
        }
        out
    }

    /// Fire a schedule now for its current period: a manual re-run. The dedupe key makes a
    /// repeat harmless: the period's jobs are created once.
    pub async fn schedule_fire_now(&self, id: &str) -> Result<FiredNow, OpsError> {
        let s = self.schedule_get(id).await?;
        let tz = tz_of(&s)?;
        let now = self.clock.now();
        // The current occurrence: the latest nominal firing at or before now, so that a re-run
        // lands on the same key as the regular firing. A one-shot that has not fired yet has
        // one occurrence only: firing it early uses that occurrence's key, so the regular
        // firing later creates nothing. A recurring schedule before its first firing gets an
        // occurrence at now.
        let fire_at = match s.spec.prev_at_or_before(tz, now) {
            Some(t) => t,
            None if !s.spec.is_recurring() => s.next_fire_at.unwrap_or(now),
            None => now,
        };
        if crate::audience::topic_of(&self.kinds, &s).is_some() {
            return self.audience_fire_now(&s, fire_at).await;
        }
        let mut jobs = jobs_for_firing(&self.kinds, &s, tz, fire_at, now);
        for j in &mut jobs {
            // A manual run runs now, even when its occurrence is in the future.
            j.run_at = j.run_at.min(now);
        }
        let period_key = jobs
            .first()
            .and_then(|j| j.period_key.clone())
            .unwrap_or_default();
        let created = self.store.job_insert_many(jobs).await?;
        self.wake.notify_one();
        Ok(FiredNow {
            created,
            fire_at,
            period_key,
        })
    }

    /// A schedule's recorded gaps (due firings that did not run), newest first, at most
    /// `limit`, each with its first and last period key in the schedule's zone.
    pub async fn schedule_gap_list(
        &self,
        id: &str,
        limit: i64,
    ) -> Result<Vec<ScheduleGapPeriods>, OpsError> {
        let s = self.schedule_get(id).await?;
        let tz = tz_of(&s)?;
        let gaps = self
            .store
            .schedule_gap_list(ScheduleGapList {
                schedule_id: Some(s.id.clone()),
                open: false,
                limit: Some(limit),
            })
            .await?;
        Ok(gaps
            .into_iter()
            .map(|gap| ScheduleGapPeriods {
                first_period: period_key(s.period, tz, gap.first_fire_at),
                last_period: period_key(s.period, tz, gap.last_fire_at),
                gap,
            })
            .collect())
    }
}

/// A recorded gap with its first and last period keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleGapPeriods {
    /// The record.
    pub gap: ScheduleGap,
    /// The period key of its first missed firing.
    pub first_period: String,
    /// The period key of its last missed firing.
    pub last_period: String,
}
