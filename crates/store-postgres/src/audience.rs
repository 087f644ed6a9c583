//! Audiences on PostgreSQL: recipients, topics and subscriptions, and the erasure of a person.

use crate::rows::PgRun;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::audience;
use kairos_store::*;
use serde_json::Value;
use sqlx::Row;

/// Differs from SQLite: `jsonb_to_recordset` with typed columns.
const UPSERT_RECIPIENT: &str = "INSERT INTO recipients (id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id)
     SELECT c.id, c.email, c.timezone, c.locale, c.attributes, c.state, c.now, c.now, c.endpoint_id
     FROM jsonb_to_recordset($1::jsonb) AS c(id text, email text, timezone text, locale text,
          attributes jsonb, state text, now timestamptz, endpoint_id text)
     ON CONFLICT (id) DO UPDATE SET email = excluded.email, timezone = excluded.timezone,
        locale = excluded.locale, attributes = excluded.attributes, state = excluded.state,
        endpoint_id = excluded.endpoint_id, updated_at = excluded.updated_at";

fn recipients_json(p: &[RecipientUpsert]) -> Value {
    Value::Array(
        p.iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "email": r.email, "timezone": r.timezone, "locale": r.locale,
                    "attributes": r.attributes, "state": r.state.as_str(),
                    "endpoint_id": r.endpoint_id,
                    "now": crate::rows::ts_json(r.now),
                })
            })
            .collect(),
    )
}

#[async_trait]
impl AudienceStore for PostgresStore {
    async fn recipient_upsert(&self, p: RecipientUpsert) -> Result<Recipient> {
        let id = p.id.clone();
        self.recipient_upsert_many(vec![p]).await?;
        self.recipient_get(&id)
            .await?
            .ok_or_else(|| Error::new(ErrorKind::Database, "recipient vanished after upsert"))
    }

    async fn recipient_upsert_many(&self, p: Vec<RecipientUpsert>) -> Result<u64> {
        let mut n = 0;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("recipient upsert", e))?;
        for chunk in p.chunks(2_000) {
            n += sqlx::query(UPSERT_RECIPIENT)
                .bind(recipients_json(chunk))
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err("recipient upsert", e))?
                .rows_affected();
        }
        tx.commit()
            .await
            .map_err(|e| map_err("recipient upsert", e))?;
        Ok(n)
    }

    async fn recipient_get(&self, id: &str) -> Result<Option<Recipient>> {
        audience::recipient_get(&mut PgRun::Pool(&self.pool), id).await
    }

    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        audience::recipient_list(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn recipient_erase(&self, p: RecipientErase) -> Result<Option<RecipientErased>> {
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

    async fn topic_put(&self, p: TopicPut) -> Result<Topic> {
        audience::topic_put(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn topic_get(&self, name: &str) -> Result<Option<Topic>> {
        audience::topic_get(&mut PgRun::Pool(&self.pool), name).await
    }

    async fn topic_list(&self) -> Result<Vec<Topic>> {
        audience::topic_list(&mut PgRun::Pool(&self.pool)).await
    }

    async fn topic_delete(&self, name: &str) -> Result<bool> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("topic delete", e))?;
        let removed = audience::topic_delete(&mut PgRun::Conn(&mut tx), name).await?;
        tx.commit().await.map_err(|e| map_err("topic delete", e))?;
        Ok(removed)
    }

    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription> {
        audience::subscription_put(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        audience::subscription_get(&mut PgRun::Pool(&self.pool), recipient_id, topic).await
    }

    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>> {
        audience::subscription_list(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool> {
        audience::subscription_disable(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool> {
        audience::subscription_delete(&mut PgRun::Pool(&self.pool), p).await
    }
}
