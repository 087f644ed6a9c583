//! `delivery_list` ([`crate::JobAdminStore::delivery_list`]), written once over [`SqlRun`].
//!
//! Audience jobs carry `topic`, `recipient_id` and `target` in their payload and the period
//! and channel as columns. One statement picks a page of row keys — the groups matching every
//! filter, the per-channel state axes checked on the group as a whole (`HAVING`) so that
//! "email dead and webhook succeeded" is one question — then reads those groups' jobs. The
//! order is the key descending (newest period first), and the keyset cursor is the last key
//! of the previous page; both databases compare the row values with the same collation they
//! sort by, so a page never skips or repeats a row. Like the admin's job search, the payload
//! fields have no index: an operator's page walks the jobs.

use super::job_admin::in_list;
use super::{Dialect, SqlRun};
use crate::binds;
use crate::{Delivery, DeliveryChannel, DeliveryKey, DeliveryList, Result};

/// The statement; `{t}` is the dialect's text cast, `{pairs}` the membership test of a job's
/// `channel=state` in the bound list `$11`.
const DELIVERY_LIST: &str = "WITH d AS (
    SELECT id, topic, recipient_id AS recipient,
           COALESCE(payload ->> 'target', '') AS target, period_key AS period,
           COALESCE(channel, kind) AS ch, state, attempt, last_error, reason, fire_at, finished_at
    FROM jobs
    WHERE period_key IS NOT NULL
      AND topic IS NOT NULL AND recipient_id IS NOT NULL
      AND ($1{t} IS NULL OR topic = $1)
      AND ($2{t} IS NULL OR recipient_id = $2)
      AND ($3{t} IS NULL OR COALESCE(payload ->> 'target', '') = $3)
      AND ($4{t} IS NULL OR period_key = $4)
 ),
 g AS (
    SELECT period, topic, recipient, target FROM d
    WHERE ($7{t} IS NULL OR (period, topic, recipient, target) < ($7{t}, $8{t}, $9{t}, $10{t}))
    GROUP BY period, topic, recipient, target
    HAVING ($5{t} IS NULL OR SUM(CASE WHEN ch = $5 THEN 1 ELSE 0 END) > 0)
       AND ($6{t} IS NULL OR SUM(CASE WHEN state = $6 AND ($5{t} IS NULL OR ch = $5)
                                      THEN 1 ELSE 0 END) > 0)
       AND COUNT(DISTINCT CASE WHEN {pairs} THEN ch END) = $12
    ORDER BY period DESC, topic DESC, recipient DESC, target DESC
    LIMIT $13
 )
 SELECT d.id, d.topic, d.recipient, d.target, d.period, d.ch, d.state, d.attempt,
        d.last_error, d.reason, d.fire_at, d.finished_at
 FROM d JOIN g ON g.period = d.period AND g.topic = d.topic AND g.recipient = d.recipient
               AND g.target = d.target
 ORDER BY d.period DESC, d.topic DESC, d.recipient DESC, d.target DESC, d.ch, d.id DESC";

/// One job of a page, before grouping.
struct Row {
    key: DeliveryKey,
    fire_at: Option<chrono::DateTime<chrono::Utc>>,
    channel: DeliveryChannel,
}

/// `delivery_list`.
pub async fn delivery_list(run: &mut impl SqlRun, p: DeliveryList) -> Result<Vec<Delivery>> {
    let d = run.dialect();
    let t = match d {
        Dialect::Sqlite => "",
        Dialect::Postgres => "::text",
    };
    let pairs = in_list(d, "(ch || '=' || state)", "$11");
    let sql = DELIVERY_LIST.replace("{t}", t).replace("{pairs}", &pairs);
    let wanted: Vec<String> = p
        .channel_states
        .iter()
        .map(|(c, s)| format!("{c}={s}"))
        .collect();
    let n_wanted = wanted.len() as i64;
    let after = p.after;
    let mut b = binds![
        p.topic,
        p.recipient_id,
        p.target,
        p.period_key,
        p.channel,
        p.state,
        after.as_ref().map(|k| k.period_key.clone()),
        after.as_ref().map(|k| k.topic.clone()),
        after.as_ref().map(|k| k.recipient_id.clone()),
        after.as_ref().map(|k| k.target.clone()),
    ];
    b.push(crate::sql::Bind::TextList(wanted));
    b.extend(binds![n_wanted, p.limit.clamp(1, 1000)]);
    let rows = run
        .fetch("delivery list", &sql, b, &|r| {
            Ok(Row {
                key: DeliveryKey {
                    period_key: r.text("period")?,
                    topic: r.text("topic")?,
                    recipient_id: r.text("recipient")?,
                    target: r.text("target")?,
                },
                fire_at: r.opt_ts("fire_at")?,
                channel: DeliveryChannel {
                    channel: r.text("ch")?,
                    state: r.text("state")?,
                    attempts: r.int("attempt")?,
                    last_error: r.opt_text("last_error")?,
                    reason: r.opt_text("reason")?,
                    job_id: r.text("id")?,
                    finished_at: r.opt_ts("finished_at")?,
                },
            })
        })
        .await?;
    Ok(group(rows))
}

/// Rows in key order, then channel, then newest job first → one delivery per key with each
/// channel's newest job.
fn group(rows: Vec<Row>) -> Vec<Delivery> {
    let mut out: Vec<Delivery> = Vec::new();
    for row in rows {
        match out.last_mut() {
            Some(last) if last.key == row.key => {
                last.fire_at = match (last.fire_at, row.fire_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                if last
                    .channels
                    .last()
                    .is_none_or(|c| c.channel != row.channel.channel)
                {
                    last.channels.push(row.channel);
                }
            }
            _ => out.push(Delivery {
                key: row.key,
                fire_at: row.fire_at,
                channels: vec![row.channel],
            }),
        }
    }
    out
}
