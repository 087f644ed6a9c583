//! Endpoint limits ([`crate::EndpointStore::endpoint_limits_set`] and
//! [`crate::EndpointStore::endpoint_limits_list`]) and the limits of an origin `http` jobs call
//! ([`crate::EndpointStore::host_limits_set`], [`crate::EndpointStore::host_limits_list`]),
//! written once over [`SqlRun`]. The claim reads and spends them in each store's own flow step
//! (`slots.rs`).

use super::SqlRun;
use crate::Result;
use crate::binds;
use crate::flow::{
    EndpointLimits, EndpointLimitsSet, HostLimits, HostLimitsSet, RateLimit, WAIT_IN_FLIGHT,
    WAIT_RATE_LIMIT,
};

/// `endpoint_limits_set`: `None` for an unknown endpoint.
pub async fn set(run: &mut impl SqlRun, p: EndpointLimitsSet) -> Result<Option<EndpointLimits>> {
    let exists = run
        .fetch_optional(
            "endpoint limits set",
            "SELECT id FROM endpoints WHERE id = $1",
            binds![&p.endpoint_id],
            &|r| r.text("id"),
        )
        .await?;
    if exists.is_none() {
        return Ok(None);
    }
    if p.rate_limit.is_none() && p.max_in_flight.is_none() {
        run.execute(
            "endpoint limits set",
            "DELETE FROM endpoint_limits WHERE endpoint_id = $1",
            binds![&p.endpoint_id],
        )
        .await?;
    } else {
        // A new limit starts with a full bucket.
        run.execute(
            "endpoint limits set",
            "INSERT INTO endpoint_limits (endpoint_id, per_second, burst, max_in_flight,
                                          tokens_milli, refilled_at, updated_at)
             VALUES ($1, $2, $3, $4, 0, NULL, $5)
             ON CONFLICT (endpoint_id) DO UPDATE SET per_second = excluded.per_second,
                 burst = excluded.burst, max_in_flight = excluded.max_in_flight,
                 tokens_milli = 0, refilled_at = NULL, updated_at = excluded.updated_at",
            binds![
                &p.endpoint_id,
                p.rate_limit.map(|r| i64::from(r.per_second)),
                p.rate_limit.map(|r| i64::from(r.burst)),
                p.max_in_flight.map(i64::from),
                p.now,
            ],
        )
        .await?;
    }
    Ok(list(run, vec![p.endpoint_id]).await?.pop())
}

/// `endpoint_limits_list`: one entry per id, in order, limits or not.
pub async fn list(run: &mut impl SqlRun, ids: Vec<String>) -> Result<Vec<EndpointLimits>> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let r = read(run, &ENDPOINT, &id).await?;
        out.push(EndpointLimits {
            rate_limit: r.rate_limit,
            max_in_flight: r.max_in_flight,
            waiting_rate_limit: r.waiting_rate_limit,
            waiting_in_flight: r.waiting_in_flight,
            endpoint_id: id,
        });
    }
    Ok(out)
}

/// `host_limits_set`: the limits saved last hold. Unchanged limits leave the row (and its
/// bucket) alone, so that saving many jobs that name the same limits does not refill the
/// bucket; changed ones keep the bucket's tokens (the claim caps them at the new burst); a new
/// row starts with a full bucket.
pub async fn host_set(run: &mut impl SqlRun, p: HostLimitsSet) -> Result<HostLimits> {
    if p.rate_limit.is_none() && p.max_in_flight.is_none() {
        run.execute(
            "host limits set",
            "DELETE FROM host_limits WHERE origin = $1",
            binds![&p.origin],
        )
        .await?;
    } else {
        let per_second = p.rate_limit.map(|r| i64::from(r.per_second));
        let burst = p.rate_limit.map(|r| i64::from(r.burst));
        let max_in_flight = p.max_in_flight.map(i64::from);
        let stored = run
            .fetch_optional(
                "host limits set",
                "SELECT per_second, burst, max_in_flight FROM host_limits WHERE origin = $1",
                binds![&p.origin],
                &|r| {
                    Ok((
                        r.opt_int("per_second")?,
                        r.opt_int("burst")?,
                        r.opt_int("max_in_flight")?,
                    ))
                },
            )
            .await?;
        if stored != Some((per_second, burst, max_in_flight)) {
            run.execute(
                "host limits set",
                "INSERT INTO host_limits (origin, per_second, burst, max_in_flight,
                                          tokens_milli, refilled_at, updated_at)
                 VALUES ($1, $2, $3, $4, 0, NULL, $5)
                 ON CONFLICT (origin) DO UPDATE SET per_second = excluded.per_second,
                     burst = excluded.burst, max_in_flight = excluded.max_in_flight,
                     updated_at = excluded.updated_at",
                binds![&p.origin, per_second, burst, max_in_flight, p.now],
            )
            .await?;
        }
    }
    let mut l = host_list(run, vec![p.origin]).await?;
    l.pop().ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::Database,
            "host limits set: no row read back",
        )
    })
}

/// `host_limits_list`: one entry per origin, in order, limits or not.
pub async fn host_list(run: &mut impl SqlRun, origins: Vec<String>) -> Result<Vec<HostLimits>> {
    let mut out = Vec::with_capacity(origins.len());
    for origin in origins {
        let r = read(run, &HOST, &origin).await?;
        out.push(HostLimits {
            rate_limit: r.rate_limit,
            max_in_flight: r.max_in_flight,
            waiting_rate_limit: r.waiting_rate_limit,
            waiting_in_flight: r.waiting_in_flight,
            origin,
        });
    }
    Ok(out)
}

/// The statements that read one kind of limited key: an endpoint, or an origin.
struct Keyed {
    what: &'static str,
    /// Its limits, by key (`$1`).
    limits: &'static str,
    /// How many due jobs of that key wait on each reason (`$1` the key, `$2`, `$3` the
    /// reasons).
    waiting: &'static str,
}

const ENDPOINT: Keyed = Keyed {
    what: "endpoint limits",
    limits: "SELECT per_second, burst, max_in_flight FROM endpoint_limits WHERE endpoint_id = $1",
    waiting: "SELECT wait_reason, COUNT(*) AS n FROM jobs
              WHERE wait_reason IN ($2, $3) AND state = 'available' AND endpoint_id = $1
              GROUP BY wait_reason",
};

const HOST: Keyed = Keyed {
    what: "host limits",
    limits: "SELECT per_second, burst, max_in_flight FROM host_limits WHERE origin = $1",
    waiting: "SELECT wait_reason, COUNT(*) AS n FROM jobs
              WHERE wait_reason IN ($2, $3) AND state = 'available' AND http_origin = $1
              GROUP BY wait_reason",
};

/// One key's limits and the due jobs waiting on them.
struct Read {
    rate_limit: Option<RateLimit>,
    max_in_flight: Option<u32>,
    waiting_rate_limit: i64,
    waiting_in_flight: i64,
}

/// Read `key`'s limits (none when it has no row) and its waiting jobs.
async fn read(run: &mut impl SqlRun, k: &Keyed, key: &str) -> Result<Read> {
    let limits = run
        .fetch_optional(k.what, k.limits, binds![key], &|r| {
            Ok((
                r.opt_int("per_second")?,
                r.opt_int("burst")?,
                r.opt_int("max_in_flight")?,
            ))
        })
        .await?;
    let waiting = run
        .fetch(
            k.what,
            k.waiting,
            binds![key, WAIT_RATE_LIMIT, WAIT_IN_FLIGHT],
            &|r| Ok((r.text("wait_reason")?, r.int("n")?)),
        )
        .await?;
    let n = |reason: &str| waiting.iter().find(|w| w.0 == reason).map_or(0, |w| w.1);
    let (per_second, burst, max_in_flight) = limits.unwrap_or_default();
    let u = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok());
    Ok(Read {
        rate_limit: u(per_second).map(|per_second| RateLimit {
            per_second,
            burst: u(burst).unwrap_or(per_second),
        }),
        max_in_flight: u(max_in_flight),
        waiting_rate_limit: n(WAIT_RATE_LIMIT),
        waiting_in_flight: n(WAIT_IN_FLIGHT),
    })
}
