//! Suppressions, audience expansions and exposures: the statements both stores run as they
//! are, written once over [`SqlRun`]. Applying a suppression (see [`super::inbound`]) and
//! advancing an expansion (locking order, job insert) stay with each store.

use super::inbound::hash_of;
use super::{SqlRun, rows};
use crate::binds;
use crate::{
    Expansion, ExpansionBegin, ExposureCount, KeyCache, Result, Suppression, SuppressionAdd,
    SuppressionList, SuppressionRemove, normalize_address,
};

const SUPPRESSION_COLS: &str =
    "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions";
const EXPANSION_COLS: &str =
    "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at FROM expansions";

/// `suppression_add`, on one connection (the erasure key is read first).
pub async fn suppression_add(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    p: SuppressionAdd,
) -> Result<bool> {
    let address = normalize_address(&p.address);
    // An erased address is suppressed already, as its keyed hash. The cast gives the
    // optional hash a type on PostgreSQL.
    let hash = hash_of(keys, run, &address).await?;
    let n = run
        .execute(
            "suppression add",
            "INSERT INTO suppressions (address, reason, source_event_id, created_at)
             SELECT $1, $2, $3, $4
             WHERE CAST($5 AS TEXT) IS NULL
                OR NOT EXISTS (SELECT 1 FROM suppressions WHERE address_hash = $5)
             ON CONFLICT (address) DO NOTHING",
            binds![address, p.reason, p.source_event_id, p.now, hash],
        )
        .await?;
    Ok(n > 0)
}

/// `suppression_get`, on one connection: the suppression of an address, stored as it is,
/// or — erased — as its keyed hash.
pub async fn suppression_get(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    address: &str,
) -> Result<Option<Suppression>> {
    let address = normalize_address(address);
    let hash = hash_of(keys, run, &address).await?;
    run.fetch_optional(
        "suppression get",
        &format!(
            "{SUPPRESSION_COLS}
             WHERE address = $1 OR (CAST($2 AS TEXT) IS NOT NULL AND address_hash = $2)
             ORDER BY address_hash IS NULL DESC LIMIT 1"
        ),
        binds![address, hash],
        &|r| rows::suppression(r),
    )
    .await
}

/// `suppression_list`.
pub async fn suppression_list(
    run: &mut impl SqlRun,
    p: SuppressionList,
) -> Result<Vec<Suppression>> {
    run.fetch(
        "suppression list",
        &format!(
            "{SUPPRESSION_COLS}
             WHERE (CAST($1 AS TEXT) IS NULL OR address > $1) ORDER BY address LIMIT $2"
        ),
        binds![p.after, p.limit.unwrap_or(100).clamp(1, 10_000)],
        &|r| rows::suppression(r),
    )
    .await
}

/// `suppression_remove`, on a transaction's connection.
pub async fn suppression_remove(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    p: SuppressionRemove,
) -> Result<bool> {
    let address = normalize_address(&p.address);
    // The address, or its keyed hash if it was erased; the log records what was stored
    // (the hash for an erased address, which must not come back through the log).
    let hash = hash_of(keys, run, &address).await?;
    let removed = run
        .fetch_optional(
            "suppression remove",
            "DELETE FROM suppressions
             WHERE address = $1 OR (CAST($2 AS TEXT) IS NOT NULL AND address_hash = $2)
             RETURNING address",
            binds![address, hash],
            &|r| r.text("address"),
        )
        .await?;
    if let Some(stored) = &removed {
        run.execute(
            "suppression log",
            "INSERT INTO suppression_log (address, action, reason, created_at)
             VALUES ($1, 'removed', $2, $3)",
            binds![stored, p.reason, p.now],
        )
        .await?;
    }
    Ok(removed.is_some())
}

/// `expansion_begin`.
pub async fn expansion_begin(run: &mut impl SqlRun, p: ExpansionBegin) -> Result<bool> {
    let n = run
        .execute(
            "expansion begin",
            "INSERT INTO expansions (schedule_id, period_key, fire_at, updated_at)
             VALUES ($1, $2, $3, $4) ON CONFLICT (schedule_id, period_key) DO NOTHING",
            binds![p.schedule_id, p.period_key, p.fire_at, p.now],
        )
        .await?;
    Ok(n > 0)
}

/// `expansion_pending`.
pub async fn expansion_pending(run: &mut impl SqlRun, limit: i64) -> Result<Vec<Expansion>> {
    run.fetch(
        "expansion pending",
        &format!("{EXPANSION_COLS} WHERE NOT done ORDER BY updated_at, schedule_id LIMIT $1"),
        binds![limit],
        &|r| rows::expansion(r),
    )
    .await
}

/// `expansion_get`.
pub async fn expansion_get(
    run: &mut impl SqlRun,
    schedule_id: &str,
    period_key: &str,
) -> Result<Option<Expansion>> {
    run.fetch_optional(
        "expansion get",
        &format!("{EXPANSION_COLS} WHERE schedule_id = $1 AND period_key = $2"),
        binds![schedule_id, period_key],
        &|r| rows::expansion(r),
    )
    .await
}

/// `exposure_counts`.
pub async fn exposure_counts(run: &mut impl SqlRun, topic: &str) -> Result<Vec<ExposureCount>> {
    run.fetch(
        "exposure counts",
        "SELECT variant, COUNT(*) AS n FROM exposures WHERE topic = $1 GROUP BY variant ORDER BY variant",
        binds![topic],
        &|r| rows::exposure_count(r),
    )
    .await
}
