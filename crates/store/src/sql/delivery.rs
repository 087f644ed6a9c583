//! Suppressions, audience expansions and exposures ([`crate::DeliveryStore`]), written once
//! over [`SqlRun`]; applying a suppression runs the cascade of [`super::inbound`].

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

/// `expansion_advance`, in a transaction: the cursor row is moved first, which locks it
/// (PostgreSQL; SQLite's transaction holds the write lock already), so a second node expanding
/// the same page waits and then finds the cursor moved; then the page's jobs are inserted and
/// counted. `None`: another node took this page.
pub async fn expansion_advance(
    run: &mut impl SqlRun,
    p: crate::ExpansionAdvance,
) -> Result<Option<Vec<String>>> {
    let sql = format!(
        "UPDATE expansions SET cursor = $4, done = $5, updated_at = $6
         WHERE schedule_id = $1 AND period_key = $2 AND cursor {} $3 AND NOT done",
        super::null_eq(run.dialect())
    );
    let b = binds![
        p.schedule_id.clone(),
        p.period_key.clone(),
        p.expected_cursor,
        p.cursor,
        p.done,
        p.now
    ];
    if run.execute("expansion advance", &sql, b).await? == 0 {
        return Ok(None);
    }
    let created = super::jobs_insert(run, "expansion advance (jobs)", &p.jobs).await?;
    run.execute(
        "expansion advance",
        "UPDATE expansions SET created = created + $3 WHERE schedule_id = $1 AND period_key = $2",
        binds![p.schedule_id, p.period_key, created.len() as i64],
    )
    .await?;
    Ok(Some(created))
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::DeliveryStore for D {
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        suppression_add(self.keys(), &mut self.writer(), p).await
    }

    async fn suppression_apply(
        &self,
        p: crate::SuppressionApply,
    ) -> Result<crate::SuppressionApplied> {
        let mut tx = self.begin("suppression apply").await?;
        let out =
            super::inbound::suppression_apply(self.keys(), &mut D::in_tx(&mut tx), &p).await?;
        self.commit(tx, "suppression apply").await?;
        Ok(out)
    }

    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>> {
        suppression_get(self.keys(), &mut self.reader(), address).await
    }

    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
        suppression_list(&mut self.reader(), p).await
    }

    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
        let mut tx = self.begin("suppression remove").await?;
        let removed = suppression_remove(self.keys(), &mut D::in_tx(&mut tx), p).await?;
        self.commit(tx, "suppression remove").await?;
        Ok(removed)
    }

    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool> {
        expansion_begin(&mut self.writer(), p).await
    }

    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        expansion_pending(&mut self.reader(), limit).await
    }

    // On the writer: the cursor a node just moved is seen.
    async fn expansion_get(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        expansion_get(&mut self.writer(), schedule_id, period_key).await
    }

    async fn expansion_advance(&self, p: crate::ExpansionAdvance) -> Result<Option<Vec<String>>> {
        let mut tx = self.begin("expansion advance").await?;
        let out = expansion_advance(&mut D::in_tx(&mut tx), p).await?;
        if out.is_some() {
            self.commit(tx, "expansion advance").await?;
        }
        Ok(out)
    }

    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>> {
        exposure_counts(&mut self.reader(), topic).await
    }
}
