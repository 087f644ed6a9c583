//! Row → record mapping, once for both databases. Stored strings that this version does not
//! know are kept (job states) or read safely (schedule states), never a panic.

use super::{RowRead, corrupt};
use crate::sealing::Sealer;
use crate::*;
use kairos_core::schedule::{Misfire, Overlap, PeriodUnit, ScheduleSpec};
use kairos_core::{Job, JobKind, JobState, RetryPolicy};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A JSON value read as a typed record; `what` names it in the error.
fn typed<T: DeserializeOwned>(what: &str, v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| corrupt(what, e))
}

/// A job ([`super::JOB_COLS`]).
pub fn job<R: RowRead + ?Sized>(r: &R) -> Result<Job> {
    let retry = r
        .opt_json("retry")?
        .map(|v| typed::<RetryPolicy>("job retry policy", v))
        .transpose()?;
    Ok(Job {
        id: r.text("id")?,
        state: JobState::parse(&r.text("state")?),
        payload: r.json("payload")?,
        endpoint_id: r.opt_text("endpoint_id")?,
        schedule_id: r.opt_text("schedule_id")?,
        fire_at: r.opt_ts("fire_at")?,
        period_key: r.opt_text("period_key")?,
        channel: r.opt_text("channel")?,
        dedupe_key: r.opt_text("dedupe_key")?,
        attempt: r.int("attempt")? as i32,
        retry,
        kind: JobKind(r.text("kind")?),
        run_at: r.ts("run_at")?,
        created_at: r.ts("created_at")?,
        finished_at: r.opt_ts("finished_at")?,
        locked_by: r.opt_text("locked_by")?,
        lease_token: r.opt_text("lease_token")?,
        lease_expires_at: r.opt_ts("lease_expires_at")?,
        last_error: r.opt_text("last_error")?,
        reason: r.opt_text("reason")?,
        concurrency: concurrency(
            r.opt_text("concurrency_key")?,
            r.opt_int("concurrency_max")?,
        ),
        wait_reason: r.opt_text("wait_reason")?,
    })
}

/// A job's concurrency limit from its two columns (both set, or neither).
fn concurrency(key: Option<String>, max: Option<i64>) -> Option<kairos_core::Concurrency> {
    Some(kairos_core::Concurrency {
        key: key?,
        max: u32::try_from(max?).unwrap_or(0),
    })
}

/// A schedule ([`super::SCHEDULE_COLS`]).
pub fn schedule<R: RowRead + ?Sized>(r: &R) -> Result<Schedule> {
    Ok(Schedule {
        id: r.text("id")?,
        name: r.text("name")?,
        kind: JobKind(r.text("kind")?),
        spec: typed::<ScheduleSpec>("schedule spec", r.json("spec")?)?,
        timezone: r.text("timezone")?,
        period: PeriodUnit::parse(&r.text("period")?).map_err(|e| corrupt("schedule period", e))?,
        misfire: Misfire::parse(&r.text("misfire")?).map_err(|e| corrupt("schedule misfire", e))?,
        misfire_threshold: millis(r.opt_int("misfire_threshold_ms")?),
        misfire_window: millis(r.opt_int("misfire_window_ms")?),
        overlap: Overlap::parse(&r.text("overlap")?).map_err(|e| corrupt("schedule overlap", e))?,
        buffered_fire_at: r.opt_ts("buffered_fire_at")?,
        payload: r.json("payload")?,
        endpoint_id: r.opt_text("endpoint_id")?,
        retry: r
            .opt_json("retry")?
            .map(|v| typed::<RetryPolicy>("schedule retry policy", v))
            .transpose()?,
        channels: ScheduleChannel::decode_all(r.opt_json("channels")?)
            .map_err(|e| corrupt("schedule channels", e))?,
        concurrency: r
            .opt_json("concurrency")?
            .map(|v| typed("schedule concurrency", v))
            .transpose()?,
        state: ScheduleState::parse(&r.text("state")?),
        next_fire_at: r.opt_ts("next_fire_at")?,
        last_fire_at: r.opt_ts("last_fire_at")?,
        created_at: r.ts("created_at")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// A stored duration in milliseconds (a negative one reads as zero).
fn millis(ms: Option<i64>) -> Option<std::time::Duration> {
    ms.map(|ms| std::time::Duration::from_millis(ms.max(0) as u64))
}

/// A gap record ([`super::GAP_COLS`]).
pub fn schedule_gap<R: RowRead + ?Sized>(r: &R) -> Result<ScheduleGap> {
    Ok(ScheduleGap {
        schedule_id: r.text("schedule_id")?,
        reason: r.text("reason")?,
        first_fire_at: r.ts("first_fire_at")?,
        last_fire_at: r.ts("last_fire_at")?,
        count: r.int("count")?,
        recorded_at: r.ts("recorded_at")?,
        recovered_at: r.opt_ts("recovered_at")?,
    })
}

/// A webhook endpoint ([`super::ENDPOINT_COLS`]), its secret as stored.
pub fn endpoint<R: RowRead + ?Sized>(r: &R) -> Result<Endpoint> {
    Ok(Endpoint {
        id: r.text("id")?,
        url: r.text("url")?,
        secret: r.text("secret")?,
        disabled_at: r.opt_ts("disabled_at")?,
        disabled_reason: r.opt_text("disabled_reason")?,
        last_failure_at: r.opt_ts("last_failure_at")?,
        last_failure: r.opt_text("last_failure")?,
        created_at: r.ts("created_at")?,
        health: crate::EndpointHealth {
            last_success_at: r.opt_ts("last_success_at")?,
            consecutive_failures: r.int("consecutive_failures")?,
            failing_since: r.opt_ts("failing_since")?,
        },
        previous_secret: r.opt_text("previous_secret")?,
        previous_secret_expires_at: r.opt_ts("previous_secret_expires_at")?,
    })
}

/// An attempt ([`super::ATTEMPT_COLS`]).
pub fn attempt<R: RowRead + ?Sized>(r: &R) -> Result<Attempt> {
    Ok(Attempt {
        job_id: r.text("job_id")?,
        attempt: r.int("attempt")? as i32,
        started_at: r.ts("started_at")?,
        finished_at: r.ts("finished_at")?,
        outcome: parse_stored("outcome", r.text("outcome")?)?,
        error_class: r
            .opt_text("error_class")?
            .map(|c| parse_stored("error_class", c))
            .transpose()?,
        status_code: r.opt_int("status_code")?.map(|s| s as i32),
        error: r.opt_text("error")?,
        response: r.opt_text("response")?,
        provider_id: r.opt_text("provider_id")?,
        node: r.opt_text("node")?,
    })
}

/// An HTTP call target ([`super::TARGET_COLS`]), its sealed parts opened with `sealer`.
pub fn http_target<R: RowRead + ?Sized>(r: &R, sealer: Option<&Sealer>) -> Result<HttpTarget> {
    Ok(HttpTarget {
        id: r.text("id")?,
        fingerprint: r.text("fingerprint")?,
        url: crate::sealing::url_from_store(sealer, r.text("url")?, crate::sealing::HTTP_URL_AAD)?,
        method: r.text("method")?,
        headers: crate::sealing::http_headers_from_store(sealer, r.json("headers")?)?,
        body: r.opt_text("body")?,
        timeout_ms: r.int("timeout_ms")?,
        auth: HttpAuth::parse(&r.text("auth")?),
        secret: crate::sealing::http_secret_from_store(sealer, r.opt_text("secret")?)?,
        created_at: r.ts("created_at")?,
    })
}

/// A recipient ([`super::RECIPIENT_SELECT`]).
pub fn recipient<R: RowRead + ?Sized>(r: &R) -> Result<Recipient> {
    Ok(Recipient {
        id: r.text("id")?,
        email: r.text("email")?,
        timezone: r.text("timezone")?,
        locale: r.opt_text("locale")?,
        attributes: r.json("attributes")?,
        state: RecipientState::parse(&r.text("state")?),
        endpoint_id: r.opt_text("endpoint_id")?,
        created_at: r.ts("created_at")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// A topic ([`super::TOPIC_SELECT`]).
pub fn topic<R: RowRead + ?Sized>(r: &R) -> Result<Topic> {
    Ok(Topic {
        name: r.text("name")?,
        subject: r.text("subject")?,
        html: r.opt_text("html")?,
        text: r.opt_text("text")?,
        variants: typed("topic variants", r.json("variants")?)?,
        entitlement_url: r.opt_text("entitlement_url")?,
        entitlement_timeout_ms: r.opt_int("entitlement_timeout_ms")?,
        created_at: r.ts("created_at")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// A subscription ([`super::SUBSCRIPTION_SELECT`]).
pub fn subscription<R: RowRead + ?Sized>(r: &R) -> Result<Subscription> {
    let target = r.opt_text("target")?;
    let targets: Vec<String> = typed("subscription targets", r.json("targets")?)?;
    // A row written with only `target` (by a node older than the list) still has its one.
    let targets = if targets.is_empty() {
        target.iter().cloned().collect()
    } else {
        targets
    };
    Ok(Subscription {
        recipient_id: r.text("recipient_id")?,
        topic: r.text("topic")?,
        target,
        targets,
        channels: typed("subscription channels", r.json("channels")?)?,
        enabled: r.boolean("enabled")?,
        created_at: r.ts("created_at")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// An audience expansion.
pub fn expansion<R: RowRead + ?Sized>(r: &R) -> Result<Expansion> {
    Ok(Expansion {
        schedule_id: r.text("schedule_id")?,
        period_key: r.text("period_key")?,
        fire_at: r.ts("fire_at")?,
        cursor: r.opt_text("cursor")?,
        done: r.boolean("done")?,
        created: r.int("created")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// A suppression; an erased one (stored as its keyed hash) shows no address.
pub fn suppression<R: RowRead + ?Sized>(r: &R) -> Result<Suppression> {
    Ok(Suppression {
        address: r.text("address")?,
        erased: r.opt_text("address_hash")?.is_some(),
        reason: r.text("reason")?,
        source_event_id: r.opt_text("source_event_id")?,
        created_at: r.ts("created_at")?,
    })
}

/// An artifact ([`super::ARTIFACT_COLS`]).
pub fn artifact<R: RowRead + ?Sized>(r: &R) -> Result<Artifact> {
    Ok(Artifact {
        name: r.text("name")?,
        period_key: r.text("period_key")?,
        content: r.text("content")?,
        data: r.json("data")?,
        job_id: r.opt_text("job_id")?,
        schedule_id: r.opt_text("schedule_id")?,
        created_at: r.ts("created_at")?,
    })
}

/// A catch-up time.
pub fn catch_up<R: RowRead + ?Sized>(r: &R) -> Result<CatchUp> {
    Ok(CatchUp {
        schedule_id: r.text("schedule_id")?,
        at: r.text("at")?,
        next_at: r.opt_ts("next_at")?,
    })
}

/// An inbound event. Its payload is stored by us as JSON; a damaged one reads as its text.
pub fn inbound_event<R: RowRead + ?Sized>(r: &R) -> Result<InboundEvent> {
    let payload = match r.json("payload") {
        Ok(v) => v,
        Err(_) => Value::String(r.text("payload")?),
    };
    Ok(InboundEvent {
        source: r.text("source")?,
        id: r.text("id")?,
        event_type: r.text("type")?,
        provider_message_id: r.opt_text("provider_message_id")?,
        job_id: r.opt_text("job_id")?,
        action: r.text("action")?,
        payload,
        received_at: r.ts("received_at")?,
    })
}

/// A setting.
pub fn setting<R: RowRead + ?Sized>(r: &R) -> Result<Setting> {
    Ok(Setting {
        name: r.text("name")?,
        value: r.text("value")?,
        updated_at: r.ts("updated_at")?,
    })
}

/// An admin session.
pub fn admin_session<R: RowRead + ?Sized>(r: &R) -> Result<AdminSession> {
    Ok(AdminSession {
        id_hash: r.text("id_hash")?,
        created_at: r.ts("created_at")?,
        expires_at: r.ts("expires_at")?,
    })
}

/// A scoped API token.
pub fn api_token<R: RowRead + ?Sized>(r: &R) -> Result<crate::ApiTokenRecord> {
    Ok(crate::ApiTokenRecord {
        id: r.text("id")?,
        name: r.text("name")?,
        scope: r.text("scope")?,
        token_hash: r.text("token_hash")?,
        created_at: r.ts("created_at")?,
        last_used_at: r.opt_ts("last_used_at")?,
        revoked_at: r.opt_ts("revoked_at")?,
    })
}

/// An SLO alert state.
pub fn slo_alert<R: RowRead + ?Sized>(r: &R) -> Result<SloAlert> {
    Ok(SloAlert {
        key: r.text("key")?,
        check: r.text("check_name")?,
        active: r.boolean("active")?,
        since: r.ts("since")?,
        message: r.text("message")?,
        seq: r.int("seq")?,
        notified_seq: r.int("notified_seq")?,
        updated_at: r.ts("updated_at")?,
        acked_at: r.opt_ts("acked_at")?,
    })
}

/// A count of jobs per `state` and `kind` (counted as `n`).
pub fn job_count<R: RowRead + ?Sized>(r: &R) -> Result<JobCount> {
    Ok(JobCount {
        state: r.text("state")?,
        kind: r.text("kind")?,
        count: r.int("n")?,
    })
}

/// Succeeded jobs of one kind and topic (`succeeded`), with their bounced and complained
/// mails: a quarter's stored count, a sum of them, or a range of the job table.
pub fn topic_count<R: RowRead + ?Sized>(r: &R) -> Result<TopicCount> {
    Ok(TopicCount {
        kind: r.text("kind")?,
        topic: r.text("topic")?,
        succeeded: r.int("succeeded")?,
        bounced: r.int("bounced")?,
        complained: r.int("complained")?,
    })
}

/// Decided jobs (`n`) of one schedule, or kind and topic, state and reason: from the job
/// table (NULL for none) or from `decided_counts` (`''` for none, a key column cannot be
/// NULL; no schedule id, kind, topic or reason is empty).
pub fn decided_group<R: RowRead + ?Sized>(r: &R) -> Result<crate::DecidedGroup> {
    let key =
        |col: &str| -> Result<Option<String>> { Ok(r.opt_text(col)?.filter(|v| !v.is_empty())) };
    Ok(crate::DecidedGroup {
        schedule_id: key("schedule_id")?,
        kind: key("kind")?,
        topic: key("topic")?,
        state: r.text("state")?,
        reason: key("reason")?,
        count: r.int("n")?,
    })
}

/// A schedule's latest dead job with the number of dead jobs (`n`).
pub fn dead_scheduled_run<R: RowRead + ?Sized>(r: &R) -> Result<DeadScheduledRun> {
    Ok(DeadScheduledRun {
        schedule_id: r.text("schedule_id")?,
        schedule_name: r.opt_text("schedule_name")?,
        dead: r.int("n")?,
        job_id: r.text("id")?,
        kind: r.text("kind")?,
        channel: r.opt_text("channel")?,
        period_key: r.opt_text("period_key")?,
        last_error: r.opt_text("last_error")?,
        finished_at: r.ts("finished_at")?,
    })
}

/// Jobs (`n`) of an occurrence per channel and state.
pub fn occurrence_count<R: RowRead + ?Sized>(r: &R) -> Result<OccurrenceCount> {
    Ok(OccurrenceCount {
        period_key: r.text("period_key")?,
        fire_at: r.opt_ts("fire_at")?,
        channel: r.text("channel")?,
        state: r.text("state")?,
        count: r.int("n")?,
    })
}

/// Exposures (`n`) of a variant.
pub fn exposure_count<R: RowRead + ?Sized>(r: &R) -> Result<ExposureCount> {
    Ok(ExposureCount {
        variant: r.text("variant")?,
        count: r.int("n")?,
    })
}

/// A stored name read back as its enum; an unknown one is `Corrupt`.
fn parse_stored<T: std::str::FromStr<Err = String>>(col: &str, v: String) -> Result<T> {
    v.parse().map_err(|e: String| {
        crate::Error::new(crate::ErrorKind::Corrupt, format!("stored {col}: {e}"))
    })
}
