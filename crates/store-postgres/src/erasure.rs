//! Erasure of a person on PostgreSQL (issue 15). Mirrors crates/store-sqlite/src/erasure.rs;
//! statements that differ say so.

use crate::{PostgresStore, map_err};
use kairos_store::*;
use sqlx::{PgConnection, Row};

/// The erasure key, if one was created: from the store's cache, else from `kairos_keys`
/// (cached once found; it never changes).
pub(crate) async fn erasure_key(
    keys: &KeyCache,
    conn: &mut PgConnection,
) -> Result<Option<Vec<u8>>> {
    if let Some(k) = keys.get() {
        return Ok(Some(k.to_vec()));
    }
    let key: Option<Vec<u8>> = sqlx::query_scalar("SELECT key FROM kairos_keys WHERE name = $1")
        .bind(ERASURE_KEY)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map_err("reading the erasure key", e))?;
    Ok(key.map(|k| keys.set(k).to_vec()))
}

/// The keyed hash of `address` if an erasure key exists (else no address was ever erased).
pub(crate) async fn hash_of(
    keys: &KeyCache,
    conn: &mut PgConnection,
    address: &str,
) -> Result<Option<String>> {
    Ok(erasure_key(keys, conn)
        .await?
        .map(|k| address_hash(&k, address)))
}

impl PostgresStore {
    pub(crate) async fn recipient_erase_impl(
        &self,
        p: RecipientErase,
    ) -> Result<Option<RecipientErased>> {
        let err = |what: &'static str| move |e| map_err(what, e);
        let mut tx = self.pool.begin().await.map_err(err("recipient erase"))?;
        // Differs from SQLite: the row is locked (FOR UPDATE) so that two erasures of one
        // recipient run one after the other.
        let email: Option<String> =
            sqlx::query_scalar("SELECT email FROM recipients WHERE id = $1 FOR UPDATE")
                .bind(&p.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err("recipient erase"))?;
        let Some(email) = email else {
            return Ok(None);
        };
        let address = normalize_address(&email);
        let mut out = RecipientErased {
            address: address.clone(),
            ..Default::default()
        };

        sqlx::query(
            "INSERT INTO kairos_keys (name, key, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(ERASURE_KEY)
        .bind(&p.new_key)
        .bind(p.now)
        .execute(&mut *tx)
        .await
        .map_err(err("creating the erasure key"))?;
        let key: Vec<u8> = sqlx::query_scalar("SELECT key FROM kairos_keys WHERE name = $1")
            .bind(ERASURE_KEY)
            .fetch_one(&mut *tx)
            .await
            .map_err(err("reading the erasure key"))?;
        let hash = address_hash(&key, &address);
        let marker = format!("{ERASED_PREFIX}{hash}");

        let hashed: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM suppressions WHERE address_hash = $1")
                .bind(&hash)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err("recipient erase"))?;
        let q = if hashed.is_some() {
            sqlx::query("DELETE FROM suppressions WHERE address = $1").bind(&address)
        } else {
            sqlx::query(
                "UPDATE suppressions SET address = $2, address_hash = $3 WHERE address = $1",
            )
            .bind(&address)
            .bind(&marker)
            .bind(&hash)
        };
        out.suppressions_hashed = q
            .execute(&mut *tx)
            .await
            .map_err(err("hashing the suppression"))?
            .rows_affected();
        sqlx::query("UPDATE suppression_log SET address = $2 WHERE address = $1")
            .bind(&address)
            .bind(&marker)
            .execute(&mut *tx)
            .await
            .map_err(err("hashing the suppression log"))?;

        // Differs from SQLite: payload is jsonb, searched as its text (`strpos`, not LIKE:
        // `_` in an address is not a wildcard) and written back as jsonb.
        let rows = sqlx::query(
            "SELECT source, id, payload::text AS payload FROM inbound_events
             WHERE strpos(lower(payload::text), $1) > 0",
        )
        .bind(&address)
        .fetch_all(&mut *tx)
        .await
        .map_err(err("reading inbound events"))?;
        for r in rows {
            let (source, id, payload): (String, String, String) = (
                r.try_get("source").map_err(err("source"))?,
                r.try_get("id").map_err(err("id"))?,
                r.try_get("payload").map_err(err("payload"))?,
            );
            if let Some(clean) = redact_address(&payload, &address) {
                sqlx::query(
                    "UPDATE inbound_events SET payload = $3::jsonb WHERE source = $1 AND id = $2",
                )
                .bind(&source)
                .bind(&id)
                .bind(clean)
                .execute(&mut *tx)
                .await
                .map_err(err("redacting an inbound event"))?;
                out.events_redacted += 1;
            }
        }

        let rows = sqlx::query(
            "SELECT id, last_error FROM jobs
             WHERE payload->>'recipient_id' = $1 AND strpos(lower(last_error), $2) > 0",
        )
        .bind(&p.id)
        .bind(&address)
        .fetch_all(&mut *tx)
        .await
        .map_err(err("reading job errors"))?;
        for r in rows {
            let (id, text): (String, String) = (
                r.try_get("id").map_err(err("id"))?,
                r.try_get("last_error").map_err(err("last_error"))?,
            );
            if let Some(clean) = redact_address(&text, &address) {
                sqlx::query("UPDATE jobs SET last_error = $2 WHERE id = $1")
                    .bind(&id)
                    .bind(clean)
                    .execute(&mut *tx)
                    .await
                    .map_err(err("redacting a job error"))?;
                out.texts_redacted += 1;
            }
        }
        let rows = sqlx::query(
            "SELECT id, error, response FROM job_attempts
             WHERE job_id IN (SELECT id FROM jobs WHERE payload->>'recipient_id' = $1)
               AND (strpos(lower(error), $2) > 0 OR strpos(lower(response), $2) > 0)",
        )
        .bind(&p.id)
        .bind(&address)
        .fetch_all(&mut *tx)
        .await
        .map_err(err("reading attempts"))?;
        for r in rows {
            let id: i64 = r.try_get("id").map_err(err("id"))?;
            let error: Option<String> = r.try_get("error").map_err(err("error"))?;
            let response: Option<String> = r.try_get("response").map_err(err("response"))?;
            let redact = |t: Option<String>| match t {
                Some(t) => redact_address(&t, &address).unwrap_or(t).into(),
                None => None,
            };
            sqlx::query("UPDATE job_attempts SET error = $2, response = $3 WHERE id = $1")
                .bind(id)
                .bind(redact(error))
                .bind(redact(response))
                .execute(&mut *tx)
                .await
                .map_err(err("redacting an attempt"))?;
            out.texts_redacted += 1;
        }

        out.subscriptions = sqlx::query("DELETE FROM subscriptions WHERE recipient_id = $1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("deleting subscriptions"))?
            .rows_affected();
        sqlx::query("UPDATE exposures SET recipient_id = NULL WHERE recipient_id = $1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("unlinking exposures"))?;
        sqlx::query("DELETE FROM recipients WHERE id = $1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("deleting the recipient"))?;
        tx.commit().await.map_err(err("recipient erase"))?;
        self.keys.set(key);
        Ok(Some(out))
    }

    pub(crate) async fn topic_delete_impl(&self, name: &str) -> Result<bool> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("topic delete", e))?;
        let removed = sqlx::query("DELETE FROM topics WHERE name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("topic delete", e))?
            .rows_affected()
            > 0;
        if removed {
            sqlx::query("DELETE FROM subscriptions WHERE topic = $1")
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err("topic delete", e))?;
        }
        tx.commit().await.map_err(|e| map_err("topic delete", e))?;
        Ok(removed)
    }

    pub(crate) async fn subscription_delete_impl(&self, p: SubscriptionDelete) -> Result<bool> {
        let n = sqlx::query("DELETE FROM subscriptions WHERE recipient_id = $1 AND topic = $2")
            .bind(&p.recipient_id)
            .bind(&p.topic)
            .execute(&self.pool)
            .await
            .map_err(|e| map_err("subscription delete", e))?
            .rows_affected();
        Ok(n > 0)
    }
}
