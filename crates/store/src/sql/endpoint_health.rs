//! Endpoint health and secret rotation, written once over [`SqlDb`]: the flush that folds the
//! attempt log into streaks and hourly counters, the counts, the streak disable, and the
//! rotation of a secret.

use super::{Dialect, ENDPOINT_COLS, SqlDb, SqlRun, rows};
use crate::binds;
use crate::sealing;
use crate::{
    Endpoint, EndpointHealthCount, EndpointHealthCounts, EndpointHealthFlush,
    EndpointHealthFlushed, EndpointSecretRotate, EndpointStreakDisable, FAILURE_STREAK, Result,
    hour_of,
};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// One attempt past the cursor.
struct Read {
    id: i64,
    outcome: String,
    finished_at: DateTime<Utc>,
    endpoint_id: Option<String>,
    kind: Option<String>,
}

/// What a flush batch changes for one endpoint.
#[derive(Default)]
struct Delta {
    /// hour → (sends, failures).
    hours: BTreeMap<DateTime<Utc>, (i64, i64)>,
    /// The latest success in the batch.
    last_success: Option<DateTime<Utc>>,
    /// Failures after that success (or all of them without one).
    failures_after: i64,
    /// The first of those failures.
    first_failure_after: Option<DateTime<Utc>>,
}

/// `endpoint_health_flush`.
pub async fn flush<D: SqlDb>(db: &D, p: EndpointHealthFlush) -> Result<EndpointHealthFlushed> {
    if p.limit <= 0 {
        return Ok(EndpointHealthFlushed::default());
    }
    let mut tx = db.begin("endpoint health flush").await?;
    let mut r = D::in_tx(&mut tx);
    let run = &mut r;
    // On PostgreSQL the row lock makes two flushes (a leadership change) take turns instead
    // of folding the same attempts twice.
    let lock = match run.dialect() {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE",
    };
    let cursor = run
        .fetch_one(
            "endpoint health cursor",
            &format!("SELECT last_attempt_id FROM endpoint_health_cursor WHERE id = 1{lock}"),
            vec![],
            &|r| r.int("last_attempt_id"),
        )
        .await?;
    let read = run
        .fetch(
            "endpoint health attempts",
            // A notification to a recipient's webhook carries no endpoint of its own: it
            // posts to its recipient's, which is where its sends count.
            "SELECT a.id, a.outcome, a.finished_at,
                    COALESCE(j.endpoint_id, r.endpoint_id) AS endpoint_id, j.kind
             FROM job_attempts a LEFT JOIN jobs j ON j.id = a.job_id
             LEFT JOIN recipients r
               ON j.endpoint_id IS NULL AND r.id = (j.payload ->> 'recipient_id')
             WHERE a.id > $1 ORDER BY a.id LIMIT $2",
            binds![cursor, p.limit],
            &|r| {
                Ok(Read {
                    id: r.int("id")?,
                    outcome: r.text("outcome")?,
                    finished_at: r.ts("finished_at")?,
                    endpoint_id: r.opt_text("endpoint_id")?,
                    kind: r.opt_text("kind")?,
                })
            },
        )
        .await?;
    // Stop at the first attempt not yet settled: everything after it waits too.
    let settled: Vec<Read> = read
        .into_iter()
        .take_while(|a| a.finished_at < p.settled_before)
        .collect();
    let Some(last) = settled.last().map(|a| a.id) else {
        return Ok(EndpointHealthFlushed::default());
    };
    let mut deltas: BTreeMap<String, Delta> = BTreeMap::new();
    for a in &settled {
        let Some(ep) = &a.endpoint_id else { continue };
        // Only kinds that post to their endpoint count (not a digest's feed fetch).
        if !a.kind.as_ref().is_some_and(|k| p.kinds.contains(k)) {
            continue;
        }
        let failed = match a.outcome.as_str() {
            "succeeded" => false,
            "failed" => true,
            // Skipped (a disabled endpoint), lost (a crashed node), cancelled: not sends.
            _ => continue,
        };
        let d = deltas.entry(ep.clone()).or_default();
        let h = d.hours.entry(hour_of(a.finished_at)).or_default();
        h.0 += 1;
        if failed {
            h.1 += 1;
            d.failures_after += 1;
            d.first_failure_after.get_or_insert(a.finished_at);
        } else {
            d.last_success = Some(
                d.last_success
                    .map_or(a.finished_at, |t| t.max(a.finished_at)),
            );
            d.failures_after = 0;
            d.first_failure_after = None;
        }
    }
    for (ep, d) in &deltas {
        for (hour, (sends, failures)) in &d.hours {
            run.execute(
                "endpoint health hour",
                "INSERT INTO endpoint_health_hours (endpoint_id, hour, attempts, failures)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (endpoint_id, hour) DO UPDATE SET
                     attempts = endpoint_health_hours.attempts + excluded.attempts,
                     failures = endpoint_health_hours.failures + excluded.failures",
                binds![ep, *hour, *sends, *failures],
            )
            .await?;
        }
        match d.last_success {
            // A success ends the streak: what follows it in the batch is the new one.
            Some(ok) => {
                run.execute(
                    "endpoint health streak",
                    "UPDATE endpoints SET
                         last_success_at = CASE WHEN last_success_at IS NULL OR last_success_at < $2
                                                THEN $2 ELSE last_success_at END,
                         consecutive_failures = $3, failing_since = $4
                     WHERE id = $1",
                    binds![ep, ok, d.failures_after, d.first_failure_after],
                )
                .await?;
            }
            None => {
                run.execute(
                    "endpoint health streak",
                    "UPDATE endpoints SET consecutive_failures = consecutive_failures + $2,
                         failing_since = COALESCE(failing_since, $3)
                     WHERE id = $1",
                    binds![ep, d.failures_after, d.first_failure_after],
                )
                .await?;
            }
        }
    }
    run.execute(
        "endpoint health cursor",
        "UPDATE endpoint_health_cursor SET last_attempt_id = $1 WHERE id = 1",
        binds![last],
    )
    .await?;
    drop(r);
    db.commit(tx, "endpoint health flush").await?;
    Ok(EndpointHealthFlushed {
        attempts: settled.len() as u64,
        endpoints: deltas.len() as u64,
    })
}

/// `endpoint_health_counts`.
pub async fn counts(
    run: &mut impl SqlRun,
    p: EndpointHealthCounts,
) -> Result<Vec<EndpointHealthCount>> {
    if p.ids.is_empty() {
        return Ok(Vec::new());
    }
    let in_ids = super::job_admin::in_list(run.dialect(), "endpoint_id", "$1");
    run.fetch(
        "endpoint health counts",
        &format!(
            "SELECT endpoint_id, CAST(SUM(attempts) AS BIGINT) AS attempts,
                    CAST(SUM(failures) AS BIGINT) AS failures
             FROM endpoint_health_hours WHERE {in_ids} AND hour >= $2
             GROUP BY endpoint_id ORDER BY endpoint_id"
        ),
        vec![crate::sql::Bind::TextList(p.ids), hour_of(p.since).into()],
        &|r| {
            Ok(EndpointHealthCount {
                endpoint_id: r.text("endpoint_id")?,
                attempts: r.int("attempts")?,
                failures: r.int("failures")?,
            })
        },
    )
    .await
}

/// `endpoint_streak_disable`.
pub async fn streak_disable(
    run: &mut impl SqlRun,
    p: EndpointStreakDisable,
) -> Result<Vec<String>> {
    run.fetch(
        "endpoint streak disable",
        "UPDATE endpoints SET disabled_at = $1, disabled_reason = $4
         WHERE disabled_at IS NULL AND consecutive_failures >= $2
           AND failing_since IS NOT NULL AND failing_since <= $3
         RETURNING id",
        binds![
            p.now,
            p.min_failures.max(1),
            p.failing_before,
            FAILURE_STREAK
        ],
        &|r| r.text("id"),
    )
    .await
}

/// `endpoint_secret_rotate`: the row as stored (its secrets still sealed).
pub async fn secret_rotate<D: SqlDb>(db: &D, p: EndpointSecretRotate) -> Result<Option<Endpoint>> {
    let mut tx = db.begin("endpoint secret rotate").await?;
    let mut r = D::in_tx(&mut tx);
    let run = &mut r;
    let lock = match run.dialect() {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE",
    };
    let Some((url, current)) = run
        .fetch_optional(
            "endpoint secret rotate",
            &format!("SELECT url, secret FROM endpoints WHERE id = $1{lock}"),
            binds![&p.id],
            &|r| Ok((r.text("url")?, r.text("secret")?)),
        )
        .await?
    else {
        return Ok(None);
    };
    let url = sealing::url_from_store(db.sealer(), url, sealing::ENDPOINT_URL_AAD)?;
    let (secret, hash) = sealing::endpoint_secret_to_store(db.sealer(), &url, &p.secret);
    // The current secret becomes the previous one, sealed if it was still plaintext (the
    // row's new hash takes it out of the sealing pass, which would not seal it later). A
    // unique violation (another endpoint has this URL and new secret) is a Conflict, and the
    // transaction rolls back. One previous secret is kept: a second rotation inside the
    // window replaces the first one's.
    let previous = sealing::endpoint_secret_resealed(db.sealer(), current);
    let e = run
        .fetch_one(
            "endpoint secret rotate",
            &format!(
                "UPDATE endpoints SET previous_secret = $5, previous_secret_expires_at = $2,
                     secret = $3, secret_hash = $4
                 WHERE id = $1
                 RETURNING {ENDPOINT_COLS}"
            ),
            binds![&p.id, p.previous_expires_at, secret, hash, previous],
            &|r| rows::endpoint(r),
        )
        .await?;
    drop(r);
    db.commit(tx, "endpoint secret rotate").await?;
    Ok(Some(e))
}
