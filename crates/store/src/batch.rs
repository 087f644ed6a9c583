//! The JSON batches the stores bind as one parameter, so one statement inserts hundreds of
//! jobs (SQLite reads them with `jsonb_each`, PostgreSQL with `jsonb_to_recordset`). The shape
//! is defined once, here; each store says only how it encodes instants and embedded JSON.
//! (Completions: SQLite binds each one to a cached statement, PostgreSQL one array per column.)

use crate::JobInsert;
use chrono::{DateTime, Utc};
use kairos_core::RetryPolicy;
use serde_json::{Value, json};

/// How a store wants values encoded in a batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchEncoding {
    /// An instant (SQLite: integer milliseconds; PostgreSQL: RFC 3339 text).
    pub instant: fn(DateTime<Utc>) -> Value,
    /// Embedded JSON (payload, retry policy) as text (SQLite stores it as TEXT) or as a JSON
    /// value (PostgreSQL stores `jsonb`).
    pub json_as_text: bool,
}

impl BatchEncoding {
    /// SQLite's: integer milliseconds, JSON as TEXT.
    pub const SQLITE: BatchEncoding = BatchEncoding {
        instant: |t| Value::from(kairos_core::clock::to_millis(t)),
        json_as_text: true,
    };
    /// PostgreSQL's: RFC 3339 text in UTC with microseconds (its own precision, which
    /// `jsonb_to_recordset` reads into `timestamptz`), JSON as `jsonb` values.
    pub const POSTGRES: BatchEncoding = BatchEncoding {
        instant: |t| Value::from(t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        json_as_text: false,
    };

    /// Embedded JSON as this store holds it.
    pub fn json(&self, v: Value) -> Value {
        if self.json_as_text {
            Value::String(v.to_string())
        } else {
            v
        }
    }
}

/// The retry policy as stored: `None` when it is the kind's default (stored as NULL: smaller
/// rows, nothing to parse on every claim); readers report NULL as `retry: None`.
pub fn stored_retry(j: &JobInsert) -> Option<&RetryPolicy> {
    (!j.retry_is_kind_default).then_some(&j.retry)
}

/// Jobs to insert, as a JSON array of objects.
pub fn jobs_batch(jobs: &[JobInsert], enc: BatchEncoding) -> Value {
    Value::Array(
        jobs.iter()
            .map(|j| {
                json!({
                    "id": j.id,
                    "kind": j.kind.as_str(),
                    "payload": enc.json(j.payload.clone()),
                    "endpoint_id": j.endpoint_id,
                    "schedule_id": j.schedule_id,
                    "fire_at": j.fire_at.map(enc.instant),
                    "period_key": j.period_key,
                    "channel": j.channel,
                    "dedupe_key": j.dedupe_key,
                    "topic": j.audience.topic,
                    "recipient_id": j.audience.recipient_id,
                    "variant": j.audience.variant,
                    "max_attempts": j.retry.max_attempts(),
                    "retry": stored_retry(j)
                        .map(|r| enc.json(serde_json::to_value(r).unwrap_or_default())),
                    "run_at": (enc.instant)(j.run_at),
                    "created_at": (enc.instant)(j.now),
                    "concurrency_key": j.concurrency.as_ref().map(|c| &c.key),
                    "concurrency_max": j.concurrency.as_ref().map(|c| c.max),
                    "http_origin": j.http_origin,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::JobKind;

    fn job(retry: RetryPolicy, retry_is_kind_default: bool) -> JobInsert {
        let t = DateTime::<Utc>::from_timestamp_millis(1_700_000_000_123).unwrap_or_default();
        JobInsert {
            id: "job_1".into(),
            kind: JobKind::new("k"),
            payload: json!({"a": 1}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            retry,
            audience: Default::default(),
            retry_is_kind_default,
            run_at: t,
            now: t,
            concurrency: None,
            http_origin: None,
        }
    }

    const MS: BatchEncoding = BatchEncoding {
        instant: |t| json!(t.timestamp_millis()),
        json_as_text: true,
    };

    #[test]
    fn default_retry_is_stored_as_null() {
        let b = jobs_batch(&[job(RetryPolicy::notification(), true)], MS);
        assert_eq!(b[0]["retry"], Value::Null);
        assert_eq!(b[0]["max_attempts"], json!(3));
        assert_eq!(b[0]["payload"], json!("{\"a\":1}"));
        assert_eq!(b[0]["run_at"], json!(1_700_000_000_123_i64));
        let custom = RetryPolicy::uniform(vec![std::time::Duration::from_secs(1)], 2);
        let b = jobs_batch(
            &[job(custom.clone(), false)],
            BatchEncoding {
                json_as_text: false,
                ..MS
            },
        );
        let back: RetryPolicy = serde_json::from_value(b[0]["retry"].clone()).unwrap();
        assert_eq!(back, custom);
        // A policy that is not marked as the kind's default is stored, whatever it is.
        let b = jobs_batch(&[job(RetryPolicy::notification(), false)], MS);
        assert_ne!(b[0]["retry"], Value::Null);
    }
}
