//! The deliverability reads (of [`crate::InboundStore`]), written once over [`SqlRun`]:
//! mails and the provider events attributed to them, and the inbound events by action.

use super::SqlRun;
use crate::binds;
use crate::{
    ExposureOutcomeCount, InboundEventCount, InboundEventTally, MailOutcomeCount, Result,
    mail_event,
};

/// The outcome columns of a row set `m` with a job id column `job_id`: for each event type,
/// how many of its mails have at least one such event. Each `EXISTS` reads the
/// `inbound_events_job` index of migration 0025, so the cost follows the mails counted, not
/// the events stored.
fn outcome_columns() -> String {
    [
        ("delivered", mail_event::DELIVERED),
        ("opened", mail_event::OPENED),
        ("clicked", mail_event::CLICKED),
        ("bounced", mail_event::BOUNCED),
        ("complained", mail_event::COMPLAINED),
    ]
    .iter()
    .map(|(col, t)| {
        format!(
            "COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e
                 WHERE e.job_id = m.job_id AND e.type = '{t}') THEN 1 END) AS {col}"
        )
    })
    .collect::<Vec<_>>()
    .join(",\n")
}

fn mail_outcome_count<R: super::RowRead + ?Sized>(r: &R) -> Result<MailOutcomeCount> {
    Ok(MailOutcomeCount {
        key: r.text("k")?,
        sent: r.int("sent")?,
        delivered: r.int("delivered")?,
        opened: r.int("opened")?,
        clicked: r.int("clicked")?,
        bounced: r.int("bounced")?,
        complained: r.int("complained")?,
    })
}

/// A topic's A/B exposures per variant, with their outcomes.
pub async fn exposure_outcome_count(
    run: &mut impl SqlRun,
    p: ExposureOutcomeCount,
) -> Result<Vec<MailOutcomeCount>> {
    let sql = format!(
        "SELECT m.variant AS k, COUNT(*) AS sent,
                {}
         FROM (SELECT job_id, variant FROM exposures WHERE topic = $1) m
         GROUP BY m.variant ORDER BY m.variant",
        outcome_columns()
    );
    run.fetch("exposure outcome count", &sql, binds![p.topic], &|r| {
        mail_outcome_count(r)
    })
    .await
}

/// Inbound events of one action received in a window, per source and type.
pub async fn inbound_event_count(
    run: &mut impl SqlRun,
    p: InboundEventCount,
) -> Result<Vec<InboundEventTally>> {
    // Reads the inbound_events_action index of migration 0025.
    run.fetch(
        "inbound event count",
        "SELECT source, type, COUNT(*) AS n FROM inbound_events
         WHERE action = $1 AND received_at >= $2 AND received_at < $3
         GROUP BY source, type ORDER BY source, type",
        binds![p.action, p.since, p.until],
        &|r| {
            Ok(InboundEventTally {
                source: r.text("source")?,
                event_type: r.text("type")?,
                count: r.int("n")?,
            })
        },
    )
    .await
}
