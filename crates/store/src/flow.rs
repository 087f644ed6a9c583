//! Flow control in the claim: concurrency keys, endpoint limits and the limits of an `http`
//! job's host together. Pure: a store reads what a claimed batch needs (held slots, the limits
//! and buckets of its endpoints and origins), asks [`flow_plan`], and writes the answer in one
//! transaction.
//!
//! An endpoint and an origin are both a **flow target**: the endpoint's id, or [`HOST_PREFIX`]
//! and the origin (`host:https://api.example.com:443`). Their limits work the same; only the
//! table they live in differs (`endpoint_limits`, `host_limits`).
//!
//! Three checks, in order, each only for the jobs the previous ones let through:
//! 1. **concurrency key** (`crate::concurrency`): a slot of the job's key;
//! 2. **`max_in_flight`** of the job's endpoint: a slot of the endpoint's implicit key
//!    ([`endpoint_key`]), the same slot table;
//! 3. **rate limit** of the job's endpoint: a token of its bucket, kept in the endpoint's
//!    `endpoint_limits` row in milli-tokens (integers: no rounding drift between nodes),
//!    refilled by elapsed time at `per_second` up to `burst`.
//!
//! A job stopped by any check gets no slot at all (slots are only written for the jobs that
//! pass all three), goes back `available` with its attempt counter as it was, and is due
//! again when it may pass: a rate-limited job when its token is free, the others a little
//! later ([`crate::concurrency::wait_until`]). It records why (`wait_reason`).

use crate::concurrency::{SlotWant, plan, wait_until};
use chrono::{DateTime, TimeDelta, Utc};
use kairos_core::Job;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// `wait_reason` of a delivery put back by its endpoint's rate limit.
pub const WAIT_RATE_LIMIT: &str = "rate_limit";
/// `wait_reason` of a delivery put back by its endpoint's `max_in_flight`.
pub const WAIT_IN_FLIGHT: &str = "in_flight";

/// The implicit concurrency key of an endpoint's `max_in_flight`. It starts with a control
/// character, which no user key can hold, so the two never meet.
pub fn endpoint_key(endpoint_id: &str) -> String {
    format!("\u{1f}endpoint:{endpoint_id}")
}

/// The prefix of an origin's flow target (an endpoint id never starts with it).
pub const HOST_PREFIX: &str = "host:";

/// The flow target of the origin `origin`.
pub fn host_target(origin: &str) -> String {
    format!("{HOST_PREFIX}{origin}")
}

/// The flow target a claimed job answers to, from the claim's probes: its endpoint when that
/// has limits (`endpoint_limited`), else its origin when that has limits (`host`).
pub fn flow_target(job: &Job, endpoint_limited: bool, host: Option<&str>) -> Option<String> {
    match (&job.endpoint_id, endpoint_limited, host) {
        (Some(e), true, _) => Some(e.clone()),
        (_, _, Some(origin)) => Some(host_target(origin)),
        _ => None,
    }
}

/// `targets` split into endpoint ids and origins (without their prefix), each sorted.
pub fn split_targets(targets: &[String]) -> (Vec<String>, Vec<String>) {
    let mut endpoints = Vec::new();
    let mut origins = Vec::new();
    for t in targets {
        match t.strip_prefix(HOST_PREFIX) {
            Some(o) => origins.push(o.to_string()),
            None => endpoints.push(t.clone()),
        }
    }
    endpoints.sort();
    origins.sort();
    (endpoints, origins)
}

/// A rate limit: deliveries per second, with a burst (the bucket's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens added per second.
    pub per_second: u32,
    /// The most tokens the bucket holds.
    pub burst: u32,
}

/// An endpoint's limits and how many of its deliveries wait on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointLimits {
    /// The endpoint.
    pub endpoint_id: String,
    /// Its rate limit, if any.
    pub rate_limit: Option<RateLimit>,
    /// Its limit of deliveries in flight at once, if any.
    pub max_in_flight: Option<u32>,
    /// Due deliveries put back by the rate limit and not yet run.
    pub waiting_rate_limit: i64,
    /// Due deliveries put back by `max_in_flight` and not yet run.
    pub waiting_in_flight: i64,
}

/// `endpoint_limits_set`: the endpoint's limits from now on (both `None`: none). A new limit
/// starts with a full bucket.
#[derive(Debug, Clone)]
pub struct EndpointLimitsSet {
    /// The endpoint.
    pub endpoint_id: String,
    /// The rate limit, or none.
    pub rate_limit: Option<RateLimit>,
    /// The in-flight limit, or none.
    pub max_in_flight: Option<u32>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// An origin's limits (those of the `http` jobs calling it) and how many of its calls wait on
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLimits {
    /// The origin: `https://api.example.com:443`.
    pub origin: String,
    /// Its rate limit, if any.
    pub rate_limit: Option<RateLimit>,
    /// Its limit of calls in flight at once, if any.
    pub max_in_flight: Option<u32>,
    /// Due calls put back by the rate limit and not yet run.
    pub waiting_rate_limit: i64,
    /// Due calls put back by `max_in_flight` and not yet run.
    pub waiting_in_flight: i64,
}

/// `host_limits_set`: the origin's limits from now on (both `None`: none). Limits that do not
/// change leave the bucket as it is (every save of a job naming them sets them again); a
/// changed limit keeps the bucket's tokens, up to its new burst; a new one starts full.
#[derive(Debug, Clone)]
pub struct HostLimitsSet {
    /// The origin.
    pub origin: String,
    /// The rate limit, or none.
    pub rate_limit: Option<RateLimit>,
    /// The in-flight limit, or none.
    pub max_in_flight: Option<u32>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// An endpoint's (or an origin's) limits and its rate bucket, as the claim reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFlow {
    /// The flow target: the endpoint, or [`HOST_PREFIX`] and the origin.
    pub endpoint_id: String,
    /// Deliveries per second (with `burst`), if rate-limited.
    pub per_second: Option<i64>,
    /// The bucket's size.
    pub burst: Option<i64>,
    /// Deliveries in flight at once, if limited.
    pub max_in_flight: Option<i64>,
    /// Tokens in the bucket, in thousandths.
    pub tokens_milli: i64,
    /// When the bucket was last refilled; `None`: never used (full).
    pub refilled_at: Option<DateTime<Utc>>,
}

/// What the claim writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowPlan {
    /// Slots to take: (key, slot, job id).
    pub take: Vec<(String, i64, String)>,
    /// Jobs to put back: (job id, due again, reason).
    pub wait: Vec<(String, DateTime<Utc>, &'static str)>,
    /// Buckets after the takes: (endpoint id, milli-tokens, refilled at).
    pub buckets: Vec<(String, i64, DateTime<Utc>)>,
}

impl FlowPlan {
    /// The ids of the jobs put back.
    pub fn waiting(&self) -> HashSet<&str> {
        self.wait.iter().map(|w| w.0.as_str()).collect()
    }
}

/// The jobs of a claimed batch whose endpoint or origin has limits: job id → flow target.
pub type Limited = HashMap<String, String>;

/// Whether a claimed batch needs the flow step at all: a job with an enforceable key, or one
/// whose endpoint or origin has limits (`limited`). When not, the claim returns without it.
pub fn needed(jobs: &[Job], limited: &Limited) -> bool {
    !limited.is_empty() || !crate::concurrency::wants(jobs).is_empty()
}

/// The flow targets of `limited` jobs of the batch, sorted and distinct.
pub fn endpoints(jobs: &[Job], limited: &Limited) -> Vec<String> {
    let set: BTreeSet<&str> = jobs
        .iter()
        .filter_map(|j| limited.get(&j.id))
        .map(String::as_str)
        .collect();
    set.into_iter().map(str::to_string).collect()
}

/// The keys whose held slots the plan needs: the batch's user keys and its endpoints'
/// implicit keys, sorted and distinct.
pub fn slot_keys(jobs: &[Job], flows: &[EndpointFlow]) -> Vec<String> {
    let mut keys: BTreeSet<String> = crate::concurrency::keys(&crate::concurrency::wants(jobs))
        .into_iter()
        .collect();
    keys.extend(
        flows
            .iter()
            .filter(|f| f.max_in_flight.is_some())
            .map(|f| endpoint_key(&f.endpoint_id)),
    );
    keys.into_iter().collect()
}

/// Buckets refill at `PACE.0 / PACE.1` of `per_second` (4 % under): tokens are taken when a
/// delivery is claimed, and the time from claim to arrival varies by a few milliseconds, so
/// deliveries paced exactly `1 / per_second` apart could put `per_second + 1` arrivals in one
/// second at the receiver. Paced 4 % under, arrivals that vary by up to `0.04` s still fit.
pub const PACE: (i64, i64) = (25, 26);

/// The milli-tokens `per_second` adds in `ms` milliseconds (paced, see [`PACE`]).
fn added(ms: i64, per_second: i64) -> i64 {
    ms.saturating_mul(per_second).saturating_mul(PACE.0) / PACE.1
}

/// The milliseconds `per_second` takes to add `milli` milli-tokens, rounded up.
fn time_to_add(milli: i64, per_second: i64) -> i64 {
    let rate = per_second.saturating_mul(PACE.0).max(1);
    (milli.saturating_mul(PACE.1) + rate - 1) / rate
}

/// How long an endpoint's bucket must go untouched before it refills past one token (up to
/// its burst). While deliveries keep coming it holds at most one token beyond what it had, so
/// deliveries are spaced `1 / per_second` apart and any one-second window holds at most
/// `per_second` of them; only a quiet second earns the burst again.
pub const QUIET: TimeDelta = TimeDelta::seconds(1);

/// Refill `f`'s bucket to `now`: its milli-tokens and the new refill time. A bucket never used
/// is full; one untouched for [`QUIET`] refills up to `burst`; otherwise up to one token (or
/// what it still holds, if more).
pub fn refill(
    f: &EndpointFlow,
    per_second: i64,
    burst: i64,
    now: DateTime<Utc>,
) -> (i64, DateTime<Utc>) {
    let full = burst.saturating_mul(1000);
    match f.refilled_at {
        None => (full, now),
        Some(at) if now <= at => (f.tokens_milli.min(full), at),
        Some(at) => {
            let elapsed = (now - at).num_milliseconds().max(0);
            let cap = if now - at >= QUIET {
                full
            } else {
                f.tokens_milli.max(1000).min(full)
            };
            let tokens = f
                .tokens_milli
                .saturating_add(added(elapsed, per_second))
                .min(cap);
            (tokens, now)
        }
    }
}

/// The limits of `j`'s endpoint or origin, when it has some.
fn flow_of<'a>(j: &Job, limited: &Limited, flows: &'a [EndpointFlow]) -> Option<&'a EndpointFlow> {
    let e = limited.get(&j.id)?;
    flows.iter().find(|f| &f.endpoint_id == e)
}

/// What the claim does with `jobs` (the batch, oldest first), `limited` (those whose endpoint
/// or origin has a row in `flows`, and which), the slots held (`held`: key, slot) and `now`.
pub fn flow_plan(
    jobs: &[Job],
    limited: &Limited,
    flows: &[EndpointFlow],
    held: &[(String, i64)],
    now: DateTime<Utc>,
) -> FlowPlan {
    let keyed = crate::concurrency::wants(jobs);
    let mut out = FlowPlan::default();
    // 1. Concurrency keys.
    let keys = plan(&keyed, held, now);
    let mut waiting: HashSet<String> = HashSet::new();
    for (id, due) in keys.wait {
        waiting.insert(id.clone());
        out.wait
            .push((id, due, crate::concurrency::WAIT_CONCURRENCY_KEY));
    }
    let mut take = keys.take;
    // 2. max_in_flight, for the jobs still in.
    let in_flight: Vec<SlotWant> = jobs
        .iter()
        .filter(|j| !waiting.contains(&j.id))
        .filter_map(|j| {
            let f = flow_of(j, limited, flows)?;
            let max = u32::try_from(f.max_in_flight?).ok()?;
            Some(SlotWant {
                job_id: j.id.clone(),
                key: endpoint_key(&f.endpoint_id),
                max,
            })
        })
        .collect();
    let ep = plan(&in_flight, held, now);
    for (id, due) in ep.wait {
        waiting.insert(id.clone());
        out.wait.push((id, due, WAIT_IN_FLIGHT));
    }
    take.extend(ep.take);
    // 3. Rate limits, for the jobs still in, per endpoint in batch order.
    let mut by_endpoint: BTreeMap<&str, Vec<&Job>> = BTreeMap::new();
    for j in jobs.iter().filter(|j| !waiting.contains(&j.id)) {
        if let Some(f) = flow_of(j, limited, flows)
            && f.per_second.is_some()
        {
            by_endpoint
                .entry(f.endpoint_id.as_str())
                .or_default()
                .push(j);
        }
    }
    for (endpoint, want) in by_endpoint {
        let Some(f) = flows.iter().find(|f| f.endpoint_id == endpoint) else {
            continue;
        };
        let per_second = f.per_second.unwrap_or(1).max(1);
        let burst = f.burst.unwrap_or(per_second).max(1);
        let (mut tokens, at) = refill(f, per_second, burst, now);
        let mut short = 0i64;
        for j in want {
            if tokens >= 1000 {
                tokens -= 1000;
            } else {
                short += 1;
                // Its token is free when the bucket has refilled what the earlier ones in line
                // need and its own thousand.
                let ms = time_to_add(short * 1000 - tokens, per_second);
                waiting.insert(j.id.clone());
                out.wait.push((
                    j.id.clone(),
                    now + TimeDelta::milliseconds(ms),
                    WAIT_RATE_LIMIT,
                ));
            }
        }
        out.buckets.push((endpoint.to_string(), tokens, at));
    }
    // Slots only for the jobs that passed every check.
    out.take = take
        .into_iter()
        .filter(|t| !waiting.contains(&t.2))
        .collect();
    out
}

/// Per reason: how many jobs were put back and the milliseconds they are made to wait (the
/// `job_waits` counters).
pub fn wait_totals(plan: &FlowPlan, now: DateTime<Utc>) -> Vec<(&'static str, i64, i64)> {
    let mut by: BTreeMap<&'static str, (i64, i64)> = BTreeMap::new();
    for (_, due, reason) in &plan.wait {
        let e = by.entry(*reason).or_default();
        e.0 += 1;
        e.1 += (*due - now).num_milliseconds().max(0);
    }
    by.into_iter().map(|(r, (n, ms))| (r, n, ms)).collect()
}

/// The reason a job waits that lost the slot of `key` to another claim (the primary key's
/// backstop; the locks make it rare).
pub fn lost_reason(key: &str) -> &'static str {
    if key.starts_with('\u{1f}') {
        WAIT_IN_FLIGHT
    } else {
        crate::concurrency::WAIT_CONCURRENCY_KEY
    }
}

/// When a job that lost a slot race (the backstop of the primary key) is due again.
pub fn lost_race(now: DateTime<Utc>) -> DateTime<Utc> {
    wait_until(now, 0, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::{Concurrency, JobKind, JobState};

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    fn job(id: &str, endpoint: Option<&str>, key: Option<(&str, u32)>) -> Job {
        Job {
            id: id.into(),
            kind: JobKind::new("webhook"),
            state: JobState::Running,
            payload: serde_json::json!({}),
            endpoint_id: endpoint.map(str::to_string),
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            attempt: 1,
            retry: None,
            run_at: t0(),
            created_at: t0(),
            finished_at: None,
            locked_by: None,
            lease_token: None,
            lease_expires_at: None,
            last_error: None,
            reason: None,
            concurrency: key.map(|(k, max)| Concurrency { key: k.into(), max }),
            wait_reason: None,
        }
    }

    fn flow(rate: Option<(i64, i64)>, max_in_flight: Option<i64>) -> EndpointFlow {
        EndpointFlow {
            endpoint_id: "ep_1".into(),
            per_second: rate.map(|r| r.0),
            burst: rate.map(|r| r.1),
            max_in_flight,
            tokens_milli: 0,
            refilled_at: None,
        }
    }

    fn all_limited(jobs: &[Job]) -> Limited {
        jobs.iter()
            .map(|j| (j.id.clone(), j.endpoint_id.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_full_bucket_lets_a_burst_through_and_spaces_the_rest_at_the_rate() {
        let jobs: Vec<Job> = (0..5)
            .map(|i| job(&format!("j{i}"), Some("ep_1"), None))
            .collect();
        let p = flow_plan(
            &jobs,
            &all_limited(&jobs),
            &[flow(Some((10, 2)), None)],
            &[],
            t0(),
        );
        assert_eq!(p.wait.len(), 3);
        let waits: Vec<i64> = p
            .wait
            .iter()
            .map(|w| (w.1 - t0()).num_milliseconds())
            .collect();
        assert_eq!(
            waits,
            [104, 208, 312],
            "one token each 104 ms at 10/s (paced 4 % under)"
        );
        assert!(p.wait.iter().all(|w| w.2 == WAIT_RATE_LIMIT));
        assert_eq!(p.buckets, vec![("ep_1".to_string(), 0, t0())]);
    }

    #[test]
    fn a_bucket_refills_by_elapsed_time_up_to_one_token_while_busy_and_its_burst_when_quiet() {
        let mut f = flow(Some((20, 20)), None);
        f.tokens_milli = 500;
        f.refilled_at = Some(t0());
        assert_eq!(
            refill(&f, 20, 20, t0() + TimeDelta::milliseconds(100)).0,
            1_000,
            "while busy, at most one token"
        );
        assert_eq!(
            refill(&f, 20, 20, t0() + TimeDelta::milliseconds(26)).0,
            1_000,
            "26 ms at 20/s, paced: half a token"
        );
        f.tokens_milli = 5_000;
        assert_eq!(
            refill(&f, 20, 20, t0() + TimeDelta::milliseconds(100)).0,
            5_000,
            "what it holds is kept"
        );
        f.tokens_milli = 500;
        assert_eq!(refill(&f, 20, 20, t0() + TimeDelta::seconds(60)).0, 20_000);
        assert_eq!(
            refill(&f, 20, 20, t0() - TimeDelta::seconds(1)).0,
            500,
            "no refill backwards"
        );
    }

    #[test]
    fn max_in_flight_uses_the_endpoints_own_key_and_a_stopped_job_takes_no_slot() {
        let jobs = vec![
            job("a", Some("ep_1"), Some(("k", 5))),
            job("b", Some("ep_1"), Some(("k", 5))),
            job("c", Some("ep_1"), None),
        ];
        let p = flow_plan(
            &jobs,
            &all_limited(&jobs),
            &[flow(None, Some(1))],
            &[],
            t0(),
        );
        let ran: Vec<&str> = p.take.iter().map(|t| t.2.as_str()).collect();
        // a takes the key and the endpoint slot; b and c wait for the endpoint, and b's key
        // slot is not written.
        assert_eq!(ran, ["a", "a"]);
        assert_eq!(p.wait.iter().filter(|w| w.2 == WAIT_IN_FLIGHT).count(), 2);
        assert!(p.take.iter().any(|t| t.0 == endpoint_key("ep_1")));
    }

    #[test]
    fn an_origins_limits_hold_for_every_http_job_calling_it() {
        let origin = "https://api.example.com:443";
        let jobs = vec![job("a", None, None), job("b", None, None)];
        let limited: Limited = jobs
            .iter()
            .map(|j| (j.id.clone(), host_target(origin)))
            .collect();
        let mut f = flow(Some((10, 10)), Some(1));
        f.endpoint_id = host_target(origin);
        let p = flow_plan(&jobs, &limited, &[f], &[], t0());
        assert_eq!(
            p.take,
            vec![(endpoint_key(&host_target(origin)), 0, "a".to_string())]
        );
        assert_eq!(p.wait.len(), 1);
        assert_eq!(p.wait[0].2, WAIT_IN_FLIGHT);
        assert_eq!(p.buckets.len(), 1, "a took a token of the origin's bucket");
        assert_eq!(p.buckets[0].0, host_target(origin));
    }

    #[test]
    fn a_job_answers_to_its_limited_endpoint_else_its_limited_origin() {
        let delivery = job("a", Some("ep_1"), None);
        assert_eq!(flow_target(&delivery, true, None), Some("ep_1".into()));
        assert_eq!(flow_target(&delivery, false, None), None);
        let call = job("b", None, None);
        assert_eq!(
            flow_target(&call, false, Some("http://h:80")),
            Some("host:http://h:80".into())
        );
        let (e, o) = split_targets(&["host:http://h:80".into(), "ep_2".into(), "ep_1".into()]);
        assert_eq!(e, ["ep_1", "ep_2"]);
        assert_eq!(o, ["http://h:80"]);
    }

    #[test]
    fn jobs_of_endpoints_without_limits_pass() {
        let jobs = vec![job("a", Some("ep_2"), None), job("b", None, None)];
        let p = flow_plan(&jobs, &Limited::new(), &[], &[], t0());
        assert_eq!(p, FlowPlan::default());
        assert!(!needed(&jobs, &Limited::new()));
    }
}
