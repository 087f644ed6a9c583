//! Audiences on SQLite: recipients, topics, subscriptions, suppressions, expansions, exposures.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::{SqliteStore, map_err};
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::*;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

const RECIPIENT_COLS: &str = "SELECT id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id FROM recipients";
const TOPIC_COLS: &str = "SELECT name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at FROM topics";
const SUB_COLS: &str = "SELECT s.recipient_id, s.topic, s.target, s.channels, s.enabled, s.created_at, s.updated_at FROM subscriptions s";

fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    col: &str,
) -> Result<T> {
    row.try_get(col).map_err(|e| map_err(col, e))
}

fn json_col(row: &SqliteRow, col: &str) -> Result<serde_json::Value> {
    let s: String = get(row, col)?;
    serde_json::from_str(&s).map_err(|e| {
        Error::new(ErrorKind::Corrupt, format!("stored {col} cannot be read")).with_source(e)
    })
}

fn recipient_from_row(row: &SqliteRow) -> Result<Recipient> {
    Ok(Recipient {
        id: get(row, "id")?,
        email: get(row, "email")?,
        timezone: get(row, "timezone")?,
        locale: get(row, "locale")?,
        attributes: json_col(row, "attributes")?,
        state: RecipientState::parse(&get::<String>(row, "state")?),
        endpoint_id: get(row, "endpoint_id")?,
        created_at: from_millis(get(row, "created_at")?),
        updated_at: from_millis(get(row, "updated_at")?),
    })
}

fn topic_from_row(row: &SqliteRow) -> Result<Topic> {
    let variants = serde_json::from_value(json_col(row, "variants")?).map_err(|e| {
        Error::new(ErrorKind::Corrupt, "stored topic variants cannot be read").with_source(e)
    })?;
    Ok(Topic {
        name: get(row, "name")?,
        subject: get(row, "subject")?,
        html: get(row, "html")?,
        text: get(row, "text")?,
        variants,
        entitlement_url: get(row, "entitlement_url")?,
        entitlement_timeout_ms: get(row, "entitlement_timeout_ms")?,
        created_at: from_millis(get(row, "created_at")?),
        updated_at: from_millis(get(row, "updated_at")?),
    })
}

fn subscription_from_row(row: &SqliteRow) -> Result<Subscription> {
    let channels = serde_json::from_value(json_col(row, "channels")?).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            "stored subscription channels cannot be read",
        )
        .with_source(e)
    })?;
    Ok(Subscription {
        recipient_id: get(row, "recipient_id")?,
        topic: get(row, "topic")?,
        target: get(row, "target")?,
        channels,
        enabled: get::<i64>(row, "enabled")? != 0,
        created_at: from_millis(get(row, "created_at")?),
        updated_at: from_millis(get(row, "updated_at")?),
    })
}

fn expansion_from_row(row: &SqliteRow) -> Result<Expansion> {
    Ok(Expansion {
        schedule_id: get(row, "schedule_id")?,
        period_key: get(row, "period_key")?,
        fire_at: from_millis(get(row, "fire_at")?),
        cursor: get(row, "cursor")?,
        done: get::<i64>(row, "done")? != 0,
        created: get(row, "created")?,
        updated_at: from_millis(get(row, "updated_at")?),
    })
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

impl SqliteStore {
    pub(crate) async fn recipient_upsert_impl(&self, p: RecipientUpsert) -> Result<Recipient> {
        let id = p.id.clone();
        self.recipient_upsert_many_impl(vec![p]).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE id = ?1"
        )))
        .bind(&id)
        .fetch_one(&self.write)
        .await
        .map_err(|e| map_err("recipient upsert", e))
        .and_then(|r| recipient_from_row(&r))
    }

    pub(crate) async fn recipient_upsert_many_impl(&self, p: Vec<RecipientUpsert>) -> Result<u64> {
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

    pub(crate) async fn recipient_get_impl(&self, id: &str) -> Result<Option<Recipient>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE id = ?1"
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await
        .map_err(|e| map_err("recipient get", e))?;
        row.as_ref().map(recipient_from_row).transpose()
    }

    pub(crate) async fn recipient_list_impl(&self, p: RecipientList) -> Result<Vec<Recipient>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RECIPIENT_COLS} WHERE (?1 IS NULL OR id > ?1) ORDER BY id LIMIT ?2"
        )))
        .bind(p.after_id)
        .bind(p.limit.unwrap_or(100))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("recipient list", e))?;
        rows.iter().map(recipient_from_row).collect()
    }

    pub(crate) async fn topic_put_impl(&self, p: TopicPut) -> Result<Topic> {
        let variants = serde_json::to_string(&p.variants).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO topics (name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
             ON CONFLICT (name) DO UPDATE SET subject = excluded.subject, html = excluded.html,
                text = excluded.text, variants = excluded.variants,
                entitlement_url = excluded.entitlement_url,
                entitlement_timeout_ms = excluded.entitlement_timeout_ms, updated_at = excluded.updated_at",
        )
        .bind(&p.name)
        .bind(&p.subject)
        .bind(&p.html)
        .bind(&p.text)
        .bind(variants)
        .bind(&p.entitlement_url)
        .bind(p.entitlement_timeout_ms)
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("topic put", e))?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{TOPIC_COLS} WHERE name = ?1")))
            .bind(&p.name)
            .fetch_one(&self.write)
            .await
            .map_err(|e| map_err("topic put", e))?;
        topic_from_row(&row)
    }

    pub(crate) async fn topic_get_impl(&self, name: &str) -> Result<Option<Topic>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{TOPIC_COLS} WHERE name = ?1")))
            .bind(name)
            .fetch_optional(&self.read)
            .await
            .map_err(|e| map_err("topic get", e))?;
        row.as_ref().map(topic_from_row).transpose()
    }

    pub(crate) async fn topic_list_impl(&self) -> Result<Vec<Topic>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{TOPIC_COLS} ORDER BY name LIMIT 1000"
        )))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("topic list", e))?;
        rows.iter().map(topic_from_row).collect()
    }

    pub(crate) async fn subscription_put_impl(&self, p: SubscriptionPut) -> Result<Subscription> {
        let channels = serde_json::to_string(&p.channels).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO subscriptions (recipient_id, topic, target, channels, enabled, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
             ON CONFLICT (recipient_id, topic) DO UPDATE SET target = excluded.target,
                channels = excluded.channels, enabled = excluded.enabled, updated_at = excluded.updated_at",
        )
        .bind(&p.recipient_id)
        .bind(&p.topic)
        .bind(&p.target)
        .bind(channels)
        .bind(i64::from(p.enabled))
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("subscription put", e))?;
        self.subscription_get_on(&self.write, &p.recipient_id, &p.topic)
            .await?
            .ok_or_else(|| Error::new(ErrorKind::Database, "subscription vanished after put"))
    }

    async fn subscription_get_on(
        &self,
        pool: &sqlx::SqlitePool,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SUB_COLS} WHERE s.recipient_id = ?1 AND s.topic = ?2"
        )))
        .bind(recipient_id)
        .bind(topic)
        .fetch_optional(pool)
        .await
        .map_err(|e| map_err("subscription get", e))?;
        row.as_ref().map(subscription_from_row).transpose()
    }

    pub(crate) async fn subscription_get_impl(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>> {
        self.subscription_get_on(&self.read, recipient_id, topic)
            .await
    }

    pub(crate) async fn subscription_list_impl(
        &self,
        p: SubscriptionList,
    ) -> Result<Vec<Subscription>> {
        let (after_r, after_t) = p.after.unzip();
        // Row-value comparison keeps the keyset on the (recipient_id, topic) primary key and,
        // with a topic filter, on the (topic, recipient_id) index.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SUB_COLS} JOIN recipients r ON r.id = s.recipient_id
             WHERE (?1 IS NULL OR s.topic = ?1) AND (?2 IS NULL OR s.recipient_id = ?2)
               AND (?3 = 0 OR (s.enabled = 1 AND r.state = 'active'))
               AND (?4 IS NULL OR (s.recipient_id, s.topic) > (?4, ?5))
             ORDER BY s.recipient_id, s.topic LIMIT ?6"
        )))
        .bind(p.topic)
        .bind(p.recipient_id)
        .bind(i64::from(p.active_only))
        .bind(after_r)
        .bind(after_t)
        .bind(p.limit.unwrap_or(100))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("subscription list", e))?;
        rows.iter().map(subscription_from_row).collect()
    }

    pub(crate) async fn suppression_add_impl(&self, p: SuppressionAdd) -> Result<bool> {
        let mut conn = self
            .write
            .acquire()
            .await
            .map_err(|e| map_err("suppression add", e))?;
        let address = normalize_address(&p.address);
        // An erased address is suppressed already, as its keyed hash.
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let n = sqlx::query(
            "INSERT INTO suppressions (address, reason, source_event_id, created_at)
             SELECT ?1, ?2, ?3, ?4
             WHERE ?5 IS NULL OR NOT EXISTS (SELECT 1 FROM suppressions WHERE address_hash = ?5)
             ON CONFLICT (address) DO NOTHING",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(to_millis(p.now))
        .bind(&hash)
        .execute(&mut *conn)
        .await
        .map_err(|e| map_err("suppression add", e))?
        .rows_affected();
        Ok(n > 0)
    }

    /// The suppression of an address: stored as it is, or — erased — as its keyed hash.
    pub(crate) async fn suppression_get_impl(&self, address: &str) -> Result<Option<Suppression>> {
        let mut conn = self
            .read
            .acquire()
            .await
            .map_err(|e| map_err("suppression get", e))?;
        let address = normalize_address(address);
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let row = sqlx::query(
            "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions
             WHERE address = ?1 OR (?2 IS NOT NULL AND address_hash = ?2)
             ORDER BY address_hash IS NULL DESC LIMIT 1",
        )
        .bind(&address)
        .bind(&hash)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map_err("suppression get", e))?;
        row.map(|r| {
            Ok(Suppression {
                address: get(&r, "address")?,
                erased: get::<Option<String>>(&r, "address_hash")?.is_some(),
                reason: get(&r, "reason")?,
                source_event_id: get(&r, "source_event_id")?,
                created_at: from_millis(get(&r, "created_at")?),
            })
        })
        .transpose()
    }

    pub(crate) async fn expansion_begin_impl(&self, p: ExpansionBegin) -> Result<bool> {
        let n = sqlx::query(
            "INSERT INTO expansions (schedule_id, period_key, fire_at, updated_at)
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT (schedule_id, period_key) DO NOTHING",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(to_millis(p.fire_at))
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("expansion begin", e))?
        .rows_affected();
        Ok(n > 0)
    }

    pub(crate) async fn expansion_pending_impl(&self, limit: i64) -> Result<Vec<Expansion>> {
        let rows = sqlx::query(
            "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at
             FROM expansions WHERE done = 0 ORDER BY updated_at, schedule_id LIMIT ?1",
        )
        .bind(limit)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("expansion pending", e))?;
        rows.iter().map(expansion_from_row).collect()
    }

    pub(crate) async fn expansion_get_impl(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        let row = sqlx::query(
            "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at
             FROM expansions WHERE schedule_id = ?1 AND period_key = ?2",
        )
        .bind(schedule_id)
        .bind(period_key)
        .fetch_optional(&self.write)
        .await
        .map_err(|e| map_err("expansion get", e))?;
        row.as_ref().map(expansion_from_row).transpose()
    }

    pub(crate) async fn expansion_advance_impl(
        &self,
        p: ExpansionAdvance,
    ) -> Result<Option<Vec<String>>> {
        let mut tx = self.begin_write("expansion advance").await?;
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs).to_string())
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("expansion advance (jobs)", e))?
        };
        // `IS` is SQLite's null-safe equality (PostgreSQL: IS NOT DISTINCT FROM).
        let moved = sqlx::query(
            "UPDATE expansions SET cursor = ?4, done = ?5, created = created + ?6, updated_at = ?7
             WHERE schedule_id = ?1 AND period_key = ?2 AND cursor IS ?3 AND done = 0",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(&p.expected_cursor)
        .bind(&p.cursor)
        .bind(i64::from(p.done))
        .bind(created.len() as i64)
        .bind(to_millis(p.now))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("expansion advance", e))?
        .rows_affected();
        if moved == 0 {
            // Another node took this page: roll back (our inserts would be duplicates anyway).
            return Ok(None);
        }
        tx.commit()
            .await
            .map_err(|e| map_err("expansion advance", e))?;
        Ok(Some(created))
    }

    pub(crate) async fn exposure_counts_impl(&self, topic: &str) -> Result<Vec<ExposureCount>> {
        let rows = sqlx::query(
            "SELECT variant, COUNT(*) AS n FROM exposures WHERE topic = ?1 GROUP BY variant ORDER BY variant",
        )
        .bind(topic)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("exposure counts", e))?;
        rows.iter()
            .map(|r| {
                Ok(ExposureCount {
                    variant: get(r, "variant")?,
                    count: get(r, "n")?,
                })
            })
            .collect()
    }

    pub(crate) async fn occurrence_list_impl(
        &self,
        p: OccurrenceList,
    ) -> Result<Vec<OccurrenceCount>> {
        let rows = sqlx::query(
            "WITH periods AS (
                 SELECT period_key, MIN(fire_at) AS fire_at FROM jobs
                 WHERE schedule_id = ?1 AND period_key IS NOT NULL AND (?2 IS NULL OR period_key = ?2)
                 GROUP BY period_key ORDER BY fire_at DESC, period_key DESC LIMIT ?3)
             SELECT j.period_key, p.fire_at, COALESCE(j.channel, j.kind) AS channel, j.state, COUNT(*) AS n
             FROM jobs j JOIN periods p ON p.period_key = j.period_key
             WHERE j.schedule_id = ?1
             GROUP BY j.period_key, p.fire_at, COALESCE(j.channel, j.kind), j.state
             ORDER BY p.fire_at DESC, j.period_key DESC, channel, j.state",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(p.limit.unwrap_or(20))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("occurrence list", e))?;
        rows.iter()
            .map(|r| {
                Ok(OccurrenceCount {
                    period_key: get(r, "period_key")?,
                    fire_at: get::<Option<i64>>(r, "fire_at")?.map(from_millis),
                    channel: get(r, "channel")?,
                    state: get(r, "state")?,
                    count: get(r, "n")?,
                })
            })
            .collect()
    }
}

/// Record A/B exposures for the jobs of `applied` (a JSON array of ids of succeeded jobs whose
/// completion asked for it): called inside the completion's transaction.
pub(crate) const EXPOSE_SUCCEEDED: &str = "INSERT INTO exposures (job_id, topic, variant, recipient_id, period_key, created_at)
     SELECT j.id, j.payload ->> 'topic', j.payload ->> 'variant', j.payload ->> 'recipient_id', j.period_key, j.finished_at
     FROM json_each(?1) AS a CROSS JOIN jobs j
     WHERE j.id = a.value AND j.state = 'succeeded'
       AND j.payload ->> 'variant' IS NOT NULL AND j.payload ->> 'topic' IS NOT NULL
     ON CONFLICT (job_id) DO NOTHING";
