//! Endpoint limits ([`crate::EndpointStore::endpoint_limits_set`] and
//! [`crate::EndpointStore::endpoint_limits_list`]), written once over [`SqlRun`]. The claim
//! reads and spends them in each store's own flow step (`slots.rs`).

use super::SqlRun;
use crate::Result;
use crate::binds;
use crate::flow::{EndpointLimits, EndpointLimitsSet, RateLimit, WAIT_IN_FLIGHT, WAIT_RATE_LIMIT};

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
        let limits = run
            .fetch_optional(
                "endpoint limits",
                "SELECT per_second, burst, max_in_flight FROM endpoint_limits WHERE endpoint_id = $1",
                binds![&id],
                &|r| Ok((r.opt_int("per_second")?, r.opt_int("burst")?, r.opt_int("max_in_flight")?)),
            )
            .await?;
        let waiting = run
            .fetch(
                "endpoint limits waiting",
                "SELECT wait_reason, COUNT(*) AS n FROM jobs
                 WHERE wait_reason IN ($2, $3) AND state = 'available' AND endpoint_id = $1
                 GROUP BY wait_reason",
                binds![&id, WAIT_RATE_LIMIT, WAIT_IN_FLIGHT],
                &|r| Ok((r.text("wait_reason")?, r.int("n")?)),
            )
            .await?;
        let n = |reason: &str| waiting.iter().find(|w| w.0 == reason).map_or(0, |w| w.1);
        let (per_second, burst, max_in_flight) = limits.unwrap_or_default();
        let u = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok());
        out.push(EndpointLimits {
            rate_limit: u(per_second).map(|per_second| RateLimit {
                per_second,
                burst: u(burst).unwrap_or(per_second),
            }),
            max_in_flight: u(max_in_flight),
            waiting_rate_limit: n(WAIT_RATE_LIMIT),
            waiting_in_flight: n(WAIT_IN_FLIGHT),
            endpoint_id: id,
        });
    }
    Ok(out)
}
