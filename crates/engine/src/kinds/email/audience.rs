//! Audience schedules: a schedule of kind `email` with a `topic` fires once per
//! period, and each firing **expands** into one job per active subscription × channel.
//!
//! - The job's `dedupe_key` is (topic, subscriber, target, period key in the schedule's
//!   zone, channel), the seed's `(subscriber, target, ISO week)` key: a double-fired
//!   clock, two nodes, a manual re-run, a re-created schedule or a second schedule on the
//!   topic create each job once (`ON CONFLICT DO NOTHING`). A subscription with several
//!   targets gets one job per target × channel.
//! - A firing does not expand inside the scheduler's transaction: the scheduler records an
//!   *expansion* (schedule, period key) with a cursor, and the [`Expander`] pages through the
//!   topic's subscribers by recipient id (keyset), inserting one page of jobs and moving the
//!   cursor in one transaction. A crash half way resumes after the last committed page on
//!   the next tick; a page done twice (two nodes) writes nothing the second time.
//! - Jobs carry ids only — recipient, topic, target, channel, variant; the handler reads
//!   the address when it runs.
//! - The A/B variant is assigned here, deterministically from (recipient, period), so a
//!   re-run assigns the same one; exposures are recorded when the send succeeds.

use crate::kinds::{Kinds, TopicUse};
use chrono::{DateTime, Utc};
use kairos_core::JobKind;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::period_key;
use kairos_store::{
    ExpansionAdvance, ExpansionBegin, JobInsert, Schedule, Store, SubscriptionList, Topic, Variant,
};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The channels an audience job can go to (one job kind each).
pub const CHANNELS: &[&str] = &["email", "webhook"];

/// The topic of an audience schedule: a kind whose topic is an audience (`email`) with
/// `payload.topic`.
pub fn topic_of<'a>(kinds: &Kinds, s: &'a Schedule) -> Option<&'a str> {
    (kinds.get(s.kind.as_str()).topic() == TopicUse::Audience)
        .then(|| payload_topic(s))
        .flatten()
}

/// A schedule's `payload.topic`, whatever its kind.
pub fn payload_topic(s: &Schedule) -> Option<&str> {
    s.payload.get("topic").and_then(|t| t.as_str())
}

/// The topic a schedule's product fans out to: a kind whose topic is a fan-out (`digest`)
/// with `payload.topic`. Its firings build the product; the product's creation starts the
/// expansion (the digest handler calls [`begin`]), not the firing.
pub fn fan_out_topic<'a>(kinds: &Kinds, s: &'a Schedule) -> Option<&'a str> {
    (kinds.get(s.kind.as_str()).topic() == TopicUse::FanOut)
        .then(|| payload_topic(s))
        .flatten()
}

/// The audience of an expansion: an email schedule's topic, or a digest's fan-out topic.
pub fn audience_topic<'a>(kinds: &Kinds, s: &'a Schedule) -> Option<&'a str> {
    topic_of(kinds, s).or_else(|| fan_out_topic(kinds, s))
}

/// The unique key of one audience job: (topic, recipient, target, period key, channel) and,
/// for a digest's fan-out, its product (the artifact's name), which two digests on one topic
/// differ by. No schedule id: re-creating a schedule, or a second schedule on the topic,
/// finds the keys the first one wrote and mails nobody a period twice. Each part is
/// length-prefixed (in bytes) so that ids containing `:` or `|` cannot make two different
/// jobs collide; migration 0024 rewrites the keys written before (`aud:` with the schedule
/// id first) into this form with the same arithmetic in SQL.
pub fn dedupe_key(
    topic: &str,
    product: Option<&str>,
    recipient_id: &str,
    target: &str,
    period_key: &str,
    channel: &str,
) -> String {
    let part = |s: &str| format!("{}:{s}", s.len());
    let mut key = format!(
        "aud2:{}|{}|{}|{}|{}",
        part(topic),
        part(recipient_id),
        part(target),
        part(period_key),
        part(channel)
    );
    if let Some(p) = product {
        key.push('|');
        key.push_str(&part(p));
    }
    key
}

/// The variant of (recipient, period): a weighted pick by a hash of both, so the same pair
/// always gets the same variant. `None` without variants (or all weights 0).
pub fn pick_variant(variants: &[Variant], recipient_id: &str, period_key: &str) -> Option<String> {
    let total: u64 = variants.iter().map(|v| u64::from(v.weight)).sum();
    if total == 0 {
        return None;
    }
    let h = Sha256::digest(format!("{recipient_id}\n{period_key}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[..8]);
    let mut x = u64::from_be_bytes(b) % total;
    for v in variants {
        let w = u64::from(v.weight);
        if x < w {
            return Some(v.name.clone());
        }
        x -= w;
    }
    None
}

/// One page of an expansion.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page's jobs.
    pub jobs: Vec<JobInsert>,
    /// The last recipient of the page.
    pub cursor: Option<String>,
    /// Whether this was the last page.
    pub done: bool,
}

/// Read one page of `topic`'s subscriptions after `after` and build their jobs for the
/// firing at `fire_at`.
///
/// Disabled subscriptions (unsubscribed, or cascaded by a suppression) and inactive
/// recipients get their job too: the handler's entitlement check ends it `skipped` with the
/// reason. So each period's occurrence shows who was not mailed and why ("the
/// next week's firing for that recipient is skipped"), at the cost of one row per such
/// subscription per period, which the pruner removes with the other finished jobs.
#[allow(clippy::too_many_arguments)]
pub async fn expand_page(
    store: &dyn Store,
    kinds: &Kinds,
    s: &Schedule,
    topic_name: &str,
    topic: Option<&Topic>,
    tz: chrono_tz::Tz,
    fire_at: DateTime<Utc>,
    after: Option<String>,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<Page, kairos_store::Error> {
    let subs = store
        .subscription_list(SubscriptionList {
            topic: Some(topic_name.to_string()),
            recipient_id: None,
            active_only: false,
            after: after.map(|r| (r, topic_name.to_string())),
            limit: Some(limit),
        })
        .await?;
    let key = period_key(s.period, tz, fire_at);
    // A digest's fan-out mails carry the artifact's key, not the digest definition, and retry
    // like any notification; an email schedule's policy is its own.
    let fan_out = fan_out_topic(kinds, s).is_some();
    let retry_for = |channel: &str| match (&s.retry, fan_out) {
        (Some(r), false) => (r.clone(), false),
        _ => (kinds.default_retry(channel), true),
    };
    let base = if fan_out {
        serde_json::json!({"artifact": {"name": s.payload.get("name"), "period_key": key}})
    } else {
        s.payload.clone()
    };
    let variants = topic.map(|t| t.variants.as_slice()).unwrap_or(&[]);
    let product = fan_out
        .then(|| s.payload.get("name").and_then(|n| n.as_str()))
        .flatten();
    let mut jobs = Vec::with_capacity(subs.len());
    for sub in &subs {
        let variant = pick_variant(variants, &sub.recipient_id, &key);
        // One mail per target: a subscription about nothing in particular is one with no
        // target (`null` in the payload, as before targets were a list).
        let targets: Vec<Option<&str>> = if sub.targets.is_empty() {
            vec![None]
        } else {
            sub.targets.iter().map(|t| Some(t.as_str())).collect()
        };
        for target in targets {
            for channel in sub
                .channels
                .iter()
                .filter(|c| CHANNELS.contains(&c.as_str()))
            {
                let (retry, retry_is_kind_default) = retry_for(channel);
                let mut payload = base.clone();
                if let Some(o) = payload.as_object_mut() {
                    o.insert("topic".into(), topic_name.into());
                    o.insert("recipient_id".into(), sub.recipient_id.clone().into());
                    o.insert("target".into(), target.into());
                    o.insert("channel".into(), channel.clone().into());
                    if let Some(v) = &variant {
                        o.insert("variant".into(), v.clone().into());
                    }
                }
                let dedupe = dedupe_key(
                    topic_name,
                    product,
                    &sub.recipient_id,
                    target.unwrap_or_default(),
                    &key,
                    channel,
                );
                // Keys see the recipient's id only: no personal data in a key.
                let concurrency = s.concurrency.as_ref().map(|c| {
                    let who = serde_json::json!({"id": sub.recipient_id});
                    crate::concurrency::render(c, &payload, Some(&who))
                });
                jobs.push(JobInsert {
                    id: new_id(IdPrefix::Job, now),
                    kind: JobKind(channel.clone()),
                    payload,
                    endpoint_id: None,
                    schedule_id: Some(s.id.clone()),
                    fire_at: Some(fire_at),
                    period_key: Some(key.clone()),
                    channel: Some(channel.clone()),
                    dedupe_key: Some(dedupe),
                    retry,
                    audience: kairos_core::JobAudience {
                        topic: Some(topic_name.to_string()),
                        recipient_id: Some(sub.recipient_id.clone()),
                        variant: variant.clone(),
                    },
                    retry_is_kind_default,
                    run_at: fire_at,
                    now,
                    concurrency,
                    http_origin: None,
                });
            }
        }
    }
    Ok(Page {
        jobs,
        cursor: subs.last().map(|x| x.recipient_id.clone()),
        done: (subs.len() as i64) < limit,
    })
}

/// Record the firing of an audience schedule at `fire_at` as an expansion to run (idempotent).
pub async fn begin(
    store: &dyn Store,
    s: &Schedule,
    tz: chrono_tz::Tz,
    fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<String, kairos_store::Error> {
    let key = period_key(s.period, tz, fire_at);
    store
        .expansion_begin(ExpansionBegin {
            schedule_id: s.id.clone(),
            period_key: key.clone(),
            fire_at,
            now,
        })
        .await?;
    Ok(key)
}

/// Expand a whole firing now, page by page from the start (a manual re-run): subscribers
/// whose jobs exist get none (the dedupe key), subscribers added since get theirs. Returns
/// the ids created. Bounded by the number of subscriptions.
pub async fn expand_all(
    store: &dyn Store,
    kinds: &Kinds,
    s: &Schedule,
    tz: chrono_tz::Tz,
    fire_at: DateTime<Utc>,
    page: i64,
    now: DateTime<Utc>,
) -> Result<Vec<String>, kairos_store::Error> {
    let Some(topic_name) = audience_topic(kinds, s) else {
        return Ok(vec![]);
    };
    let topic = store.topic_get(topic_name).await?;
    let mut created = Vec::new();
    let mut after = None;
    loop {
        let mut p = expand_page(
            store,
            kinds,
            s,
            topic_name,
            topic.as_ref(),
            tz,
            fire_at,
            after,
            page,
            now,
        )
        .await?;
        for j in &mut p.jobs {
            // A manual run runs now, even when its occurrence is in the future.
            j.run_at = j.run_at.min(now);
        }
        created.extend(store.job_insert_many(p.jobs).await?);
        if p.done {
            return Ok(created);
        }
        after = p.cursor;
    }
}

/// Expander settings.
#[derive(Debug, Clone)]
pub struct ExpanderConfig {
    /// Subscriptions per page (one transaction). Default 1000.
    pub page: i64,
    /// Most pages per tick across all expansions, so one huge audience does not hold the
    /// scheduler (the rest goes on at the next tick). Default 50.
    pub pages_per_tick: usize,
}

impl Default for ExpanderConfig {
    fn default() -> Self {
        ExpanderConfig {
            page: 1000,
            pages_per_tick: 50,
        }
    }
}

impl ExpanderConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        if !(1..=10_000).contains(&self.page) {
            return Err(kairos_core::Error::invalid(
                "expander.page",
                "must be between 1 and 10000",
            ));
        }
        if self.pages_per_tick == 0 {
            return Err(kairos_core::Error::invalid(
                "expander.pages_per_tick",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// What one expander tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpanderReport {
    /// Pages written.
    pub pages: usize,
    /// Jobs created.
    pub jobs_created: usize,
    /// Expansions finished.
    pub finished: usize,
    /// Whether work is left (the page budget ran out).
    pub more: bool,
    /// Expansions that failed this tick (logged; tried again next tick).
    pub errors: usize,
}

/// Runs pending expansions, a bounded number of pages per tick.
#[derive(Clone)]
pub struct Expander {
    cfg: ExpanderConfig,
    store: Arc<dyn Store>,
    kinds: Arc<Kinds>,
}

impl std::fmt::Debug for Expander {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expander")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Expander {
    /// An expander over `store`. Fails if the config is not valid.
    pub fn new(cfg: ExpanderConfig, store: Arc<dyn Store>) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Expander {
            cfg,
            store,
            kinds: Arc::default(),
        })
    }

    /// Expand the schedules of `kinds` (the built-in kinds without this call).
    pub fn with_kinds(mut self, kinds: Arc<Kinds>) -> Self {
        self.kinds = kinds;
        self
    }

    /// One tick at `now`.
    pub async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<ExpanderReport, kairos_store::Error> {
        let mut report = ExpanderReport::default();
        let pending = self.store.expansion_pending(16).await?;
        for e in pending {
            if report.pages >= self.cfg.pages_per_tick {
                report.more = true;
                break;
            }
            if let Err(err) = self.run_one(&e, now, &mut report).await {
                report.errors += 1;
                tracing::error!(schedule_id = %e.schedule_id, period = %e.period_key, error = %err,
                    "expanding an audience firing failed");
            }
        }
        Ok(report)
    }

    async fn run_one(
        &self,
        e: &kairos_store::Expansion,
        now: DateTime<Utc>,
        report: &mut ExpanderReport,
    ) -> Result<(), kairos_store::Error> {
        let store = self.store.as_ref();
        let finish = |cursor: Option<String>| ExpansionAdvance {
            schedule_id: e.schedule_id.clone(),
            period_key: e.period_key.clone(),
            expected_cursor: cursor.clone(),
            cursor,
            done: true,
            jobs: vec![],
            now,
        };
        // A schedule deleted (or turned into another kind) since its firing: nothing to send.
        let Some(s) = store.schedule_get(&e.schedule_id).await? else {
            store.expansion_advance(finish(e.cursor.clone())).await?;
            return Ok(());
        };
        let (Some(topic_name), Ok(tz)) = (audience_topic(&self.kinds, &s), crate::zone::tz_of(&s))
        else {
            store.expansion_advance(finish(e.cursor.clone())).await?;
            return Ok(());
        };
        let topic = store.topic_get(topic_name).await?;
        let mut cursor = e.cursor.clone();
        while report.pages < self.cfg.pages_per_tick {
            let page = expand_page(
                store,
                &self.kinds,
                &s,
                topic_name,
                topic.as_ref(),
                tz,
                e.fire_at,
                cursor.clone(),
                self.cfg.page,
                now,
            )
            .await?;
            let next = page.cursor.clone().or(cursor.clone());
            let done = page.done;
            let adv = store
                .expansion_advance(ExpansionAdvance {
                    schedule_id: e.schedule_id.clone(),
                    period_key: e.period_key.clone(),
                    expected_cursor: cursor.clone(),
                    cursor: next.clone(),
                    done,
                    jobs: page.jobs,
                    now,
                })
                .await?;
            report.pages += 1;
            let Some(created) = adv else {
                // Another node moved this expansion: leave it to them.
                return Ok(());
            };
            report.jobs_created += created.len();
            if done {
                report.finished += 1;
                tracing::info!(schedule_id = %s.id, period = %e.period_key, "audience expansion finished");
                return Ok(());
            }
            cursor = next;
        }
        report.more = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(name: &str, weight: u32) -> Variant {
        Variant {
            name: name.into(),
            weight,
            subject: None,
            html: None,
            text: None,
        }
    }

    #[test]
    fn variant_is_deterministic_and_follows_weights() {
        let vs = [v("a", 1), v("b", 3)];
        let mut b = 0;
        for i in 0..4000 {
            let r = format!("r{i}");
            let x = pick_variant(&vs, &r, "2026-W48").unwrap();
            assert_eq!(Some(x.clone()), pick_variant(&vs, &r, "2026-W48"));
            b += usize::from(x == "b");
        }
        // 3/4 expected; a wide band, the point is the weighting, not the hash's quality.
        assert!((2700..3300).contains(&b), "{b}");
        assert_eq!(pick_variant(&[v("a", 0)], "r", "p"), None);
        assert_eq!(pick_variant(&[], "r", "p"), None);
    }

    #[test]
    fn dedupe_key_parts_cannot_collide() {
        assert_ne!(
            dedupe_key("t", None, "a:b", "", "p", "email"),
            dedupe_key("t", None, "a", "b:", "p", "email")
        );
        assert_ne!(
            dedupe_key("t", None, "r", "a|1:b", "p", "email"),
            dedupe_key("t", None, "r", "a", "1:b|p", "email")
        );
        assert_eq!(
            dedupe_key("weekly", None, "r", "t", "2026-W48", "email"),
            dedupe_key("weekly", None, "r", "t", "2026-W48", "email")
        );
    }

    /// The key names no schedule: two schedules on one topic (or one re-created) write the
    /// same key for a (recipient, target, period, channel); targets, channels, topics and
    /// digest products each make their own key.
    #[test]
    fn dedupe_key_is_topic_recipient_target_period_channel_s3_3() {
        let k = dedupe_key("weekly", None, "u1", "rep-a", "2026-W48", "email");
        assert_eq!(k, "aud2:6:weekly|2:u1|5:rep-a|8:2026-W48|5:email");
        for other in [
            dedupe_key("weekly", None, "u1", "rep-b", "2026-W48", "email"),
            dedupe_key("weekly", None, "u1", "rep-a", "2026-W48", "webhook"),
            dedupe_key("monthly", None, "u1", "rep-a", "2026-W48", "email"),
            dedupe_key("weekly", Some("news"), "u1", "rep-a", "2026-W48", "email"),
            dedupe_key("weekly", None, "u1", "rep-a", "2026-W49", "email"),
        ] {
            assert_ne!(k, other);
        }
    }
}
