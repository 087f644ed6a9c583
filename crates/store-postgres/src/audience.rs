//! Audiences on PostgreSQL: recipients, topics and subscriptions, and the erasure of a person.

use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::{
    RECIPIENT_SELECT as RECIPIENT_COLS, SUBSCRIPTION_SELECT as SUB_COLS,
    TOPIC_SELECT as TOPIC_COLS, rows,
};
use kairos_store::*;
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

fn recipient_from_row(row: &PgRow) -> Result<Recipient> {
    rows::recipient(&Pg(row))
}

fn topic_from_row(row: &PgRow) -> Result<Topic> {
    rows::topic(&Pg(row))
}

fn subscription_from_row(row: &PgRow) -> Result<Subscription> {
    rows::subscription(&Pg(row))
}

pub(crate) fn expansion_from_row(row: &PgRow) -> Result<Expansion> {
    rows::expansion(&Pg(row))
}

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
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("recipient get", e))?;
        row.as_ref().map(recipient_from_row).transpose()
    }

    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        // Differs from SQLite: `$1::text IS NULL` gives the optional filter a type.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2"
        )))
        .bind(p.after_id)
        .bind(p.limit.unwrap_or(100))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("recipient list", e))?;
        rows.iter().map(recipient_from_row).collect()
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
        let variants = serde_json::to_value(&p.variants).unwrap_or(Value::Array(vec![]));
        let row = sqlx::query(
            "INSERT INTO topics (name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
             ON CONFLICT (name) DO UPDATE SET subject = excluded.subject, html = excluded.html,
                text = excluded.text, variants = excluded.variants,
                entitlement_url = excluded.entitlement_url,
                entitlement_timeout_ms = excluded.entitlement_timeout_ms, updated_at = excluded.updated_at
             RETURNING name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at",
        )
        .bind(&p.name)
        .bind(&p.subject)
        .bind(&p.html)
        .bind(&p.text)
        .bind(variants)
        .bind(&p.entitlement_url)
        .bind(p.entitlement_timeout_ms)
        .bind(p.now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("topic put", e))?;
        topic_from_row(&row)
    }

    async fn topic_get(&self, name: &str) -> Result<Option<Topic>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{TOPIC_COLS} WHERE name = $1")))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("topic get", e))?;
        row.as_ref().map(topic_from_row).transpose()
    }

    async fn topic_list(&self) -> Result<Vec<Topic>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{TOPIC_COLS} ORDER BY name LIMIT 1000"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("topic list", e))?;
        rows.iter().map(topic_from_row).collect()
    }

    async fn topic_delete(&self, name: &str) -> Result<bool> {
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

    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription> {
        let row = sqlx::query(
            "INSERT INTO subscriptions AS s (recipient_id, topic, target, channels, enabled, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)
             ON CONFLICT (recipient_id, topic) DO UPDATE SET target = excluded.target,
                channels = excluded.channels, enabled = excluded.enabled, updated_at = excluded.updated_at
             RETURNING s.recipient_id, s.topic, s.target, s.channels, s.enabled, s.created_at, s.updated_at",
        )
        .bind(&p.recipient_id)
        .bind(&p.topic)
        .bind(&p.target)
        .bind(serde_json::to_value(&p.channels).unwrap_or(Value::Array(vec![])))
        .bind(p.enabled)
        .bind(p.now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("subscription put", e))?;
        subscription_from_row(&row)
    }

    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SUB_COLS} WHERE s.recipient_id = $1 AND s.topic = $2"
        )))
        .bind(recipient_id)
        .bind(topic)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("subscription get", e))?;
        row.as_ref().map(subscription_from_row).transpose()
    }

    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>> {
        let (after_r, after_t) = p.after.unzip();
        // Differs from SQLite: typed NULL checks and boolean columns.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SUB_COLS} JOIN recipients r ON r.id = s.recipient_id
             WHERE ($1::text IS NULL OR s.topic = $1) AND ($2::text IS NULL OR s.recipient_id = $2)
               AND (NOT $3 OR (s.enabled AND r.state = 'active'))
               AND ($4::text IS NULL OR (s.recipient_id, s.topic) > ($4::text, $5::text))
             ORDER BY s.recipient_id, s.topic LIMIT $6"
        )))
        .bind(p.topic)
        .bind(p.recipient_id)
        .bind(p.active_only)
        .bind(after_r)
        .bind(after_t)
        .bind(p.limit.unwrap_or(100))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("subscription list", e))?;
        rows.iter().map(subscription_from_row).collect()
    }

    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool> {
        let n = sqlx::query(
            "UPDATE subscriptions SET enabled = false, updated_at = $3
             WHERE recipient_id = $1 AND topic = $2 AND enabled",
        )
        .bind(&p.recipient_id)
        .bind(&p.topic)
        .bind(p.now)
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("subscription disable", e))?
        .rows_affected();
        Ok(n > 0)
    }

    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool> {
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
