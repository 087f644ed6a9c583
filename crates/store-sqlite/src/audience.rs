//! Audiences on SQLite: recipients, topics and subscriptions, and the erasure of a person.

use crate::rows::{Sq, SqRun};
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::audience;
use kairos_store::sql::{RECIPIENT_SELECT as RECIPIENT_COLS, rows};
use kairos_store::*;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

fn recipient_from_row(row: &SqliteRow) -> Result<Recipient> {
    rows::recipient(&Sq(row))
}

const UPSERT_RECIPIENT: &str = "INSERT INTO recipients (id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id)
     SELECT value ->> 'id', value ->> 'email', value ->> 'timezone', value ->> 'locale', value ->> 'attributes', value ->> 'state', value ->> 'now', value ->> 'now', value ->> 'endpoint_id'
     FROM jsonb_each(?1) WHERE true
     ON CONFLICT (id) DO UPDATE SET email = excluded.email, timezone = excluded.timezone,
        locale = excluded.locale, attributes = excluded.attributes, state = excluded.state,
        endpoint_id = excluded.endpoint_id, updated_at = excluded.updated_at";

fn recipients_json(p: &[RecipientUpsert]) -> String {
    serde_json::Value::Array(
        p.iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "email": r.email, "timezone": r.timezone, "locale": r.locale,
                    "attributes": r.attributes.to_string(), "state": r.state.as_str(),
                    "endpoint_id": r.endpoint_id,
                    "now": to_millis(r.now),
                })
            })
            .collect(),
    )
    .to_string()
}

/// Record A/B exposures for the jobs of `applied` (a JSON array of ids of succeeded jobs whose
/// completion asked for it): called inside the completion's transaction.
pub(crate) const EXPOSE_SUCCEEDED: &str = "INSERT INTO exposures (job_id, topic, variant, recipient_id, period_key, created_at)
     SELECT j.id, j.payload ->> 'topic', j.payload ->> 'variant', j.payload ->> 'recipient_id', j.period_key, j.finished_at
     FROM json_each(?1) AS a CROSS JOIN jobs j
     WHERE j.id = a.value AND j.state = 'succeeded'
       AND j.payload ->> 'variant' IS NOT NULL AND j.payload ->> 'topic' IS NOT NULL
     ON CONFLICT (job_id) DO NOTHING";

#[async_trait]
impl AudienceStore for SqliteStore {
    async fn recipient_upsert(&self, p: RecipientUpsert) -> Result<Recipient> {
        let id = p.id.clone();
        self.recipient_upsert_many(vec![p]).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE id = ?1"
        )))
        .bind(&id)
        .fetch_one(&self.write)
        .await
        .map_err(|e| map_err("recipient upsert", e))
        .and_then(|r| recipient_from_row(&r))
    }

    async fn recipient_upsert_many(&self, p: Vec<RecipientUpsert>) -> Result<u64> {
        let mut n = 0;
        let mut tx = self.begin_write("recipient upsert").await?;
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
        audience::recipient_get(&mut SqRun::Pool(&self.read), id).await
    }

    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        audience::recipient_list(&mut SqRun::Pool(&self.read), p).await
    }

    async fn recipient_erase(&self, p: RecipientErase) -> Result<Option<RecipientErased>> {
        let err = |what: &'static str| move |e| map_err(what, e);
        let mut tx = self.begin_write("recipient erase").await?;
        let email: Option<String> =
            sqlx::query_scalar("SELECT email FROM recipients WHERE id = ?1")
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

        // The key: created on first use; the first one stored wins.
        sqlx::query(
            "INSERT INTO kairos_keys (name, key, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(ERASURE_KEY)
        .bind(&p.new_key)
        .bind(to_millis(p.now))
        .execute(&mut *tx)
        .await
        .map_err(err("creating the erasure key"))?;
        let key: Vec<u8> = sqlx::query_scalar("SELECT key FROM kairos_keys WHERE name = ?1")
            .bind(ERASURE_KEY)
            .fetch_one(&mut *tx)
            .await
            .map_err(err("reading the erasure key"))?;
        let hash = address_hash(&key, &address);
        let marker = format!("{ERASED_PREFIX}{hash}");

        // The suppression stays, as the hash (if the hash is there already, from another
        // recipient with the address, the plain entry goes).
        let hashed: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM suppressions WHERE address_hash = ?1")
                .bind(&hash)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err("recipient erase"))?;
        let q = if hashed.is_some() {
            sqlx::query("DELETE FROM suppressions WHERE address = ?1").bind(&address)
        } else {
            sqlx::query(
                "UPDATE suppressions SET address = ?2, address_hash = ?3 WHERE address = ?1",
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
        sqlx::query("UPDATE suppression_log SET address = ?2 WHERE address = ?1")
            .bind(&address)
            .bind(&marker)
            .execute(&mut *tx)
            .await
            .map_err(err("hashing the suppression log"))?;

        // Stored provider events that carry the address: the event stays (its id keeps a
        // redelivery from acting twice), the address goes.
        let rows = sqlx::query(
            "SELECT source, id, payload FROM inbound_events WHERE instr(lower(payload), ?1) > 0",
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
                sqlx::query("UPDATE inbound_events SET payload = ?3 WHERE source = ?1 AND id = ?2")
                    .bind(&source)
                    .bind(&id)
                    .bind(clean)
                    .execute(&mut *tx)
                    .await
                    .map_err(err("redacting an inbound event"))?;
                out.events_redacted += 1;
            }
        }

        // The recipient's jobs carry ids, but an error or a response excerpt may quote the
        // address (an SMTP 550, a receiver echoing the body).
        let rows = sqlx::query(
            "SELECT id, last_error FROM jobs
             WHERE json_extract(payload, '$.recipient_id') = ?1
               AND instr(lower(last_error), ?2) > 0",
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
                sqlx::query("UPDATE jobs SET last_error = ?2 WHERE id = ?1")
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
             WHERE job_id IN (SELECT id FROM jobs WHERE json_extract(payload, '$.recipient_id') = ?1)
               AND (instr(lower(error), ?2) > 0 OR instr(lower(response), ?2) > 0)",
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
            sqlx::query("UPDATE job_attempts SET error = ?2, response = ?3 WHERE id = ?1")
                .bind(id)
                .bind(redact(error))
                .bind(redact(response))
                .execute(&mut *tx)
                .await
                .map_err(err("redacting an attempt"))?;
            out.texts_redacted += 1;
        }

        out.subscriptions = sqlx::query("DELETE FROM subscriptions WHERE recipient_id = ?1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("deleting subscriptions"))?
            .rows_affected();
        sqlx::query("UPDATE exposures SET recipient_id = NULL WHERE recipient_id = ?1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("unlinking exposures"))?;
        sqlx::query("DELETE FROM recipients WHERE id = ?1")
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(err("deleting the recipient"))?;
        tx.commit().await.map_err(err("recipient erase"))?;
        // Cached only once committed.
        self.keys.set(key);
        Ok(Some(out))
    }

    async fn topic_put(&self, p: TopicPut) -> Result<Topic> {
        audience::topic_put(&mut SqRun::Pool(&self.write), p).await
    }

    async fn topic_get(&self, name: &str) -> Result<Option<Topic>> {
        audience::topic_get(&mut SqRun::Pool(&self.read), name).await
    }

    async fn topic_list(&self) -> Result<Vec<Topic>> {
        audience::topic_list(&mut SqRun::Pool(&self.read)).await
    }

    async fn topic_delete(&self, name: &str) -> Result<bool> {
        let mut tx = self.begin_write("topic delete").await?;
        let removed = audience::topic_delete(&mut SqRun::Conn(&mut tx), name).await?;
        tx.commit().await.map_err(|e| map_err("topic delete", e))?;
        Ok(removed)
    }

    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription> {
        audience::subscription_put(&mut SqRun::Pool(&self.write), p).await
    }

    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        audience::subscription_get(&mut SqRun::Pool(&self.read), recipient_id, topic).await
    }

    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>> {
        audience::subscription_list(&mut SqRun::Pool(&self.read), p).await
    }

    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool> {
        audience::subscription_disable(&mut SqRun::Pool(&self.write), p).await
    }

    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool> {
        audience::subscription_delete(&mut SqRun::Pool(&self.write), p).await
    }
}
