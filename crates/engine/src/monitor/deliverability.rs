//! Deliverability checks: mail that leaves kairos and does not arrive.
//!
//! - `bounce_rate` and `complaint_rate`, per topic over `deliverability_window` (default 7
//!   days): of the mails sent — mail jobs (`email`) with a `payload.topic` that succeeded in
//!   the window — the share with an `email.bounced` (any bounce type) or `email.complained`
//!   event. A warning above `bounce_rate` (5 %) or `complaint_rate` (0.3 %), the levels past
//!   which mailbox providers start to refuse a sender; below `deliverability_min_sent` (200)
//!   mails a topic has "insufficient data". The rate recovers (Ok) on the first pass where it
//!   is at or below its threshold again: more good sends, or bad ones leaving the window.
//!   Events are attributed to a mail by its provider message id (Resend's `data.email_id`),
//!   matched when the event is received against the provider ids the send attempts
//!   recorded: an event no attempt matches (a mail sent by something else, an attempt already
//!   pruned) counts toward no topic. The mails sent and their bounces and complaints come
//!   from the quarter-hour topic counts the sampler and the inbound path keep
//!   ([`super::quarters`]), so a pass reads a week of those rows and a few minutes of jobs, not a
//!   week of mail; the counts outlive the succeeded jobs (pruned after
//!   `KAIROS_RETENTION_SUCCEEDED`, 7 days by default) for the window, but a quarter never
//!   counted before its jobs were pruned counts only what is kept.
//! - `inbound_unknown`, per source over `inbound_unknown_window` (default 24 h): provider
//!   events kairos stored and acknowledged without acting on them — an unknown type, no type,
//!   or an `email.bounced` whose bounce type is missing or not one kairos knows (its address
//!   is then *not* suppressed). The message names the types and their counts; the warning
//!   clears once none arrived in the window.

use super::checks::{dur, human};
use super::quarters::Sent;
use super::{CheckResult, CheckStatus, MonitorConfig, names};
use chrono::{DateTime, Utc};
use kairos_store::{InboundEventCount, Store, action};
use std::collections::BTreeMap;

/// The end of a window that includes `now`.
fn until(now: DateTime<Utc>) -> DateTime<Utc> {
    now + chrono::Duration::milliseconds(1)
}

/// One rate check: its name, the outcome it counts, its threshold and the words for people.
struct Rate {
    check: &'static str,
    count: fn(&Sent) -> i64,
    threshold: f64,
    what: &'static str,
}

/// `bounce_rate` and `complaint_rate` per topic (the enabled ones).
pub(super) async fn rates(
    cfg: &MonitorConfig,
    store: &dyn Store,
    kinds: &crate::kinds::Kinds,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let checks: Vec<Rate> = [
        Rate {
            check: names::BOUNCE_RATE,
            count: |c| c.bounced,
            threshold: cfg.bounce_rate,
            what: "bounced",
        },
        Rate {
            check: names::COMPLAINT_RATE,
            count: |c| c.complained,
            threshold: cfg.complaint_rate,
            what: "were marked as spam",
        },
    ]
    .into_iter()
    .filter(|r| cfg.enabled(r.check))
    .collect();
    if checks.is_empty() {
        return Ok(Vec::new());
    }
    let window = human(cfg.deliverability_window);
    let since = now - dur(cfg.deliverability_window);
    let topics: Vec<(String, Sent)> =
        super::quarters::sent_per_topic(store, &kinds.mail_kinds(), since, until(now))
            .await?
            .into_iter()
            .collect();
    let mut out = Vec::new();
    for rate in &checks {
        if topics.is_empty() {
            out.push(CheckResult::new(
                rate.check,
                None,
                CheckStatus::InsufficientData,
                format!("no mail of a topic was sent in the last {window}"),
            ));
            continue;
        }
        for (key, t) in &topics {
            let n = (rate.count)(t);
            let value = if t.sent > 0 {
                n as f64 / t.sent as f64
            } else {
                0.0
            };
            let status = if (t.sent as u64) < cfg.deliverability_min_sent {
                CheckStatus::InsufficientData
            } else if value > rate.threshold {
                CheckStatus::Warning
            } else {
                CheckStatus::Ok
            };
            let mut text = format!(
                "{n} of {} mails of topic {:?} sent in the last {window} {} ({:.2}%; threshold {:.2}%)",
                t.sent,
                key,
                rate.what,
                value * 100.0,
                rate.threshold * 100.0
            );
            if status == CheckStatus::InsufficientData {
                text.push_str(&format!(
                    "; fewer than {} sent, too few to judge",
                    cfg.deliverability_min_sent
                ));
            }
            let mut r = CheckResult::new(rate.check, Some(key.clone()), status, text);
            r.value = Some(value);
            r.threshold = Some(rate.threshold);
            r.sample = Some(t.sent);
            out.push(r);
        }
    }
    Ok(out)
}

/// Longest event type quoted in a message (a type is the sender's text).
const MAX_TYPE_CHARS: usize = 60;
/// Most distinct types named in one message.
const MAX_TYPES_NAMED: usize = 10;

fn quoted_type(t: &str) -> String {
    if t.is_empty() {
        return "no type".into();
    }
    let short: String = t.chars().take(MAX_TYPE_CHARS).collect();
    if short.len() < t.len() {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}

/// `inbound_unknown`: one warning per source that sent events kairos did not act on in the
/// window; a single Ok when none did.
pub(super) async fn inbound_unknown(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let window = human(cfg.inbound_unknown_window);
    let rows = store
        .inbound_event_count(InboundEventCount {
            since: now - dur(cfg.inbound_unknown_window),
            until: until(now),
            action: action::UNKNOWN.into(),
        })
        .await?;
    if rows.is_empty() {
        return Ok(vec![CheckResult::new(
            names::INBOUND_UNKNOWN,
            None,
            CheckStatus::Ok,
            format!("every provider event of the last {window} was understood"),
        )]);
    }
    let mut by_source: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
    for r in rows {
        by_source
            .entry(r.source)
            .or_default()
            .push((r.event_type, r.count));
    }
    Ok(by_source
        .into_iter()
        .map(|(source, mut types)| {
            let total: i64 = types.iter().map(|(_, n)| n).sum();
            types.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let mut named: Vec<String> = types
                .iter()
                .take(MAX_TYPES_NAMED)
                .map(|(t, n)| format!("{} × {n}", quoted_type(t)))
                .collect();
            if types.len() > MAX_TYPES_NAMED {
                named.push(format!("{} more types", types.len() - MAX_TYPES_NAMED));
            }
            let text = format!(
                "{total} events from {source:?} in the last {window} were stored without action (unknown type, no type, or a bounce without a known bounce type: its address was not suppressed): {}",
                named.join(", ")
            );
            let mut r = CheckResult::new(
                names::INBOUND_UNKNOWN,
                Some(source),
                CheckStatus::Warning,
                text,
            );
            r.value = Some(total as f64);
            r.sample = Some(total);
            r
        })
        .collect())
}
