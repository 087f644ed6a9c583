//! Recipients, topics and subscriptions: the statements both stores run as they are, written
//! once over [`SqlRun`]. Bulk upsert and erasure differ and stay with each store. Booleans
//! are written `enabled`, `NOT $n` and `false`, which SQLite reads on its integers.

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
        "INSERT INTO subscriptions (recipient_id, topic, target, channels, enabled, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)
         ON CONFLICT (recipient_id, topic) DO UPDATE SET target = excluded.target,
            channels = excluded.channels, enabled = excluded.enabled, updated_at = excluded.updated_at
         RETURNING recipient_id, topic, target, channels, enabled, created_at, updated_at",
        binds![
            p.recipient_id,
            p.topic,
            p.target,
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
