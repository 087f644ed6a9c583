//! Recipients, topics and subscriptions ([`crate::AudienceStore`]), written once over
//! [`SqlRun`]; the erasure of a person is [`super::erase`]. Booleans are written `enabled`,
//! `NOT $n` and `false`, which SQLite reads on its integers.

use super::{RECIPIENT_SELECT, SUBSCRIPTION_SELECT, SqlRun, TOPIC_SELECT, rows};
use crate::binds;
use crate::{
    Recipient, RecipientList, Result, Subscription, SubscriptionDelete, SubscriptionDisable,
    SubscriptionList, SubscriptionPut, Topic, TopicPut,
};
use serde_json::Value;

/// `recipient_get`.
pub async fn recipient_get(run: &mut impl SqlRun, id: &str) -> Result<Option<Recipient>> {
    run.fetch_optional(
        "recipient get",
        &format!("{RECIPIENT_SELECT} WHERE id = $1"),
        binds![id],
        &|r| rows::recipient(r),
    )
    .await
}

/// `recipient_list`.
pub async fn recipient_list(run: &mut impl SqlRun, p: RecipientList) -> Result<Vec<Recipient>> {
    // The cast gives the optional filter a type on PostgreSQL.
    run.fetch(
        "recipient list",
        &format!(
            "{RECIPIENT_SELECT} WHERE (CAST($1 AS TEXT) IS NULL OR id > $1) ORDER BY id LIMIT $2"
        ),
        binds![p.after_id, p.limit.unwrap_or(100)],
        &|r| rows::recipient(r),
    )
    .await
}

/// `topic_put`.
pub async fn topic_put(run: &mut impl SqlRun, p: TopicPut) -> Result<Topic> {
    let variants = serde_json::to_value(&p.variants).unwrap_or(Value::Array(vec![]));
    run.fetch_one(
        "topic put",
        "INSERT INTO topics (name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
         ON CONFLICT (name) DO UPDATE SET subject = excluded.subject, html = excluded.html,
            text = excluded.text, variants = excluded.variants,
            entitlement_url = excluded.entitlement_url,
            entitlement_timeout_ms = excluded.entitlement_timeout_ms, updated_at = excluded.updated_at
         RETURNING name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at",
        binds![
            p.name,
            p.subject,
            p.html,
            p.text,
            variants,
            p.entitlement_url,
            p.entitlement_timeout_ms,
            p.now,
        ],
        &|r| rows::topic(r),
    )
    .await
}

/// `topic_get`.
pub async fn topic_get(run: &mut impl SqlRun, name: &str) -> Result<Option<Topic>> {
    run.fetch_optional(
        "topic get",
        &format!("{TOPIC_SELECT} WHERE name = $1"),
        binds![name],
        &|r| rows::topic(r),
    )
    .await
}

/// `topic_list`.
pub async fn topic_list(run: &mut impl SqlRun) -> Result<Vec<Topic>> {
    run.fetch(
        "topic list",
        &format!("{TOPIC_SELECT} ORDER BY name LIMIT 1000"),
        vec![],
        &|r| rows::topic(r),
    )
    .await
}

/// `topic_delete`, on a transaction's connection: the topic and its subscriptions.
pub async fn topic_delete(run: &mut impl SqlRun, name: &str) -> Result<bool> {
    let removed = run
        .execute(
            "topic delete",
            "DELETE FROM topics WHERE name = $1",
            binds![name],
        )
        .await?
        > 0;
    if removed {
        run.execute(
            "topic delete",
            "DELETE FROM subscriptions WHERE topic = $1",
            binds![name],
        )
        .await?;
    }
    Ok(removed)
}

/// `subscription_put`.
pub async fn subscription_put(run: &mut impl SqlRun, p: SubscriptionPut) -> Result<Subscription> {
    run.fetch_one(
        "subscription put",
        "INSERT INTO subscriptions (recipient_id, topic, target, targets, channels, enabled, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
         ON CONFLICT (recipient_id, topic) DO UPDATE SET target = excluded.target,
            targets = excluded.targets, channels = excluded.channels, enabled = excluded.enabled,
            updated_at = excluded.updated_at
         RETURNING recipient_id, topic, target, targets, channels, enabled, created_at, updated_at",
        binds![
            p.recipient_id,
            p.topic,
            p.targets.first().cloned(),
            serde_json::to_value(&p.targets).unwrap_or(Value::Array(vec![])),
            serde_json::to_value(&p.channels).unwrap_or(Value::Array(vec![])),
            p.enabled,
            p.now,
        ],
        &|r| rows::subscription(r),
    )
    .await
}

/// `subscription_get`.
pub async fn subscription_get(
    run: &mut impl SqlRun,
    recipient_id: &str,
    topic: &str,
) -> Result<Option<Subscription>> {
    run.fetch_optional(
        "subscription get",
        &format!("{SUBSCRIPTION_SELECT} WHERE s.recipient_id = $1 AND s.topic = $2"),
        binds![recipient_id, topic],
        &|r| rows::subscription(r),
    )
    .await
}

/// `subscription_list`.
pub async fn subscription_list(
    run: &mut impl SqlRun,
    p: SubscriptionList,
) -> Result<Vec<Subscription>> {
    let (after_r, after_t) = p.after.unzip();
    // Row-value comparison keeps the keyset on the (recipient_id, topic) primary key and,
    // with a topic filter, on the (topic, recipient_id) index. The casts give the optional
    // filters a type on PostgreSQL.
    run.fetch(
        "subscription list",
        &format!(
            "{SUBSCRIPTION_SELECT} JOIN recipients r ON r.id = s.recipient_id
             WHERE (CAST($1 AS TEXT) IS NULL OR s.topic = $1)
               AND (CAST($2 AS TEXT) IS NULL OR s.recipient_id = $2)
               AND (NOT $3 OR (s.enabled AND r.state = 'active'))
               AND (CAST($4 AS TEXT) IS NULL
                    OR (s.recipient_id, s.topic) > (CAST($4 AS TEXT), CAST($5 AS TEXT)))
             ORDER BY s.recipient_id, s.topic LIMIT $6"
        ),
        binds![
            p.topic,
            p.recipient_id,
            p.active_only,
            after_r,
            after_t,
            p.limit.unwrap_or(100),
        ],
        &|r| rows::subscription(r),
    )
    .await
}

/// `subscription_disable`.
pub async fn subscription_disable(run: &mut impl SqlRun, p: SubscriptionDisable) -> Result<bool> {
    let n = run
        .execute(
            "subscription disable",
            "UPDATE subscriptions SET enabled = false, updated_at = $3
             WHERE recipient_id = $1 AND topic = $2 AND enabled",
            binds![p.recipient_id, p.topic, p.now],
        )
        .await?;
    Ok(n > 0)
}

/// `subscription_delete`.
pub async fn subscription_delete(run: &mut impl SqlRun, p: SubscriptionDelete) -> Result<bool> {
    let n = run
        .execute(
            "subscription delete",
            "DELETE FROM subscriptions WHERE recipient_id = $1 AND topic = $2",
            binds![p.recipient_id, p.topic],
        )
        .await?;
    Ok(n > 0)
}

/// The bulk upsert on SQLite: the JSON array read with `jsonb_each`.
const UPSERT_SQLITE: &str = "INSERT INTO recipients (id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id)
     SELECT value ->> 'id', value ->> 'email', value ->> 'timezone', value ->> 'locale', value ->> 'attributes', value ->> 'state', value ->> 'now', value ->> 'now', value ->> 'endpoint_id'
     FROM jsonb_each($1) WHERE true
     ON CONFLICT (id) DO UPDATE SET email = excluded.email, timezone = excluded.timezone,
        locale = excluded.locale, attributes = excluded.attributes, state = excluded.state,
        endpoint_id = excluded.endpoint_id, updated_at = excluded.updated_at";

/// The bulk upsert on PostgreSQL: `jsonb_to_recordset` with typed columns.
const UPSERT_POSTGRES: &str = "INSERT INTO recipients (id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id)
     SELECT c.id, c.email, c.timezone, c.locale, c.attributes, c.state, c.now, c.now, c.endpoint_id
     FROM jsonb_to_recordset($1::jsonb) AS c(id text, email text, timezone text, locale text,
          attributes jsonb, state text, now timestamptz, endpoint_id text)
     ON CONFLICT (id) DO UPDATE SET email = excluded.email, timezone = excluded.timezone,
        locale = excluded.locale, attributes = excluded.attributes, state = excluded.state,
        endpoint_id = excluded.endpoint_id, updated_at = excluded.updated_at";

/// `recipient_upsert_many`, in a transaction: chunks of 2,000 recipients a statement.
pub async fn recipient_upsert_many(
    run: &mut impl SqlRun,
    p: &[crate::RecipientUpsert],
) -> Result<u64> {
    let d = run.dialect();
    let enc = d.batch_encoding();
    let sql = match d {
        super::Dialect::Sqlite => UPSERT_SQLITE,
        super::Dialect::Postgres => UPSERT_POSTGRES,
    };
    let mut n = 0;
    for chunk in p.chunks(2_000) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "email": r.email, "timezone": r.timezone, "locale": r.locale,
                    "attributes": enc.json(r.attributes.clone()), "state": r.state.as_str(),
                    "endpoint_id": r.endpoint_id, "now": (enc.instant)(r.now),
                })
            })
            .collect();
        n += run
            .execute("recipient upsert", sql, vec![Value::Array(batch).into()])
            .await?;
    }
    Ok(n)
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::AudienceStore for D {
    async fn recipient_upsert(&self, p: crate::RecipientUpsert) -> Result<Recipient> {
        let id = p.id.clone();
        self.recipient_upsert_many(vec![p]).await?;
        // On the writer: the row just written.
        recipient_get(&mut self.writer(), &id)
            .await?
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Database,
                    "recipient vanished after upsert",
                )
            })
    }

    async fn recipient_upsert_many(&self, p: Vec<crate::RecipientUpsert>) -> Result<u64> {
        let mut tx = self.begin("recipient upsert").await?;
        let n = recipient_upsert_many(&mut D::in_tx(&mut tx), &p).await?;
        self.commit(tx, "recipient upsert").await?;
        Ok(n)
    }

    async fn recipient_get(&self, id: &str) -> Result<Option<Recipient>> {
        recipient_get(&mut self.reader(), id).await
    }

    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        recipient_list(&mut self.reader(), p).await
    }

    async fn recipient_erase(
        &self,
        p: crate::RecipientErase,
    ) -> Result<Option<crate::RecipientErased>> {
        let mut tx = self.begin("recipient erase").await?;
        let Some((out, key)) = super::erase::recipient_erase(&mut D::in_tx(&mut tx), p).await?
        else {
            return Ok(None);
        };
        self.commit(tx, "recipient erase").await?;
        // Cached only once committed.
        self.keys().set(key);
        Ok(Some(out))
    }

    async fn topic_put(&self, p: TopicPut) -> Result<Topic> {
        topic_put(&mut self.writer(), p).await
    }

    async fn topic_get(&self, name: &str) -> Result<Option<Topic>> {
        topic_get(&mut self.reader(), name).await
    }

    async fn topic_list(&self) -> Result<Vec<Topic>> {
        topic_list(&mut self.reader()).await
    }

    async fn topic_delete(&self, name: &str) -> Result<bool> {
        let mut tx = self.begin("topic delete").await?;
        let removed = topic_delete(&mut D::in_tx(&mut tx), name).await?;
        self.commit(tx, "topic delete").await?;
        Ok(removed)
    }

    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription> {
        subscription_put(&mut self.writer(), p).await
    }

    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        subscription_get(&mut self.reader(), recipient_id, topic).await
    }

    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>> {
        subscription_list(&mut self.reader(), p).await
    }

    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool> {
        subscription_disable(&mut self.writer(), p).await
    }

    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool> {
        subscription_delete(&mut self.writer(), p).await
    }
}
