//! Deliverability reads: mails sent per topic and per A/B variant with the provider events
//! attributed to them by provider message id, and inbound events counted by action.

use crate::fixtures::{claim, job, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_core::JobKind;
use kairos_store::*;
use serde_json::{Value, json};
use std::sync::Arc;

type S = Arc<dyn Store>;

/// Insert a job of `kind` with `payload`, claim it and complete it `succeeded` at `at` with
/// the provider message id `pid`, recording its exposure when asked.
async fn sent(s: &S, kind: &str, payload: Value, pid: &str, at: DateTime<Utc>, exposed: bool) {
    let mut j = job(at);
    j.kind = JobKind::new(kind);
    j.payload = payload;
    j.audience = kairos_core::JobAudience::of_payload(&j.payload);
    let id = j.id.clone();
    s.job_insert(j).await.unwrap();
    let claimed = s.job_claim(claim(at, 1, "n1")).await.unwrap();
    assert_eq!(claimed.len(), 1, "one job due");
    s.job_complete_many(vec![JobComplete {
        id: id.clone(),
        lease_token: claimed[0].lease_token.clone().unwrap(),
        attempt: Attempt {
            job_id: id,
            attempt: 1,
            started_at: at,
            finished_at: at,
            outcome: "succeeded".parse().expect("outcome"),
            error_class: None,
            status_code: Some(200),
            error: None,
            response: None,
            provider_id: Some(pid.into()),
            node: Some("n1".into()),
        },
        transition: Transition::Succeeded,
        record_exposure: exposed,
    }])
    .await
    .unwrap();
}

/// Record a provider event `id` of `event_type` about the message `pid`.
async fn event(s: &S, id: &str, event_type: &str, pid: Option<&str>, act: &str, at: DateTime<Utc>) {
    s.inbound_event_record(InboundEventRecord {
        source: "resend".into(),
        id: id.into(),
        event_type: event_type.into(),
        provider_message_id: pid.map(str::to_string),
        action: act.into(),
        payload: json!({"type": event_type}),
        suppress: Vec::new(),
        reason: String::new(),
        now: at,
    })
    .await
    .unwrap();
}

fn row(key: &str, counts: [i64; 6]) -> MailOutcomeCount {
    let [sent, delivered, opened, clicked, bounced, complained] = counts;
    MailOutcomeCount {
        key: key.into(),
        sent,
        delivered,
        opened,
        clicked,
        bounced,
        complained,
    }
}

/// Per topic: the mail jobs that succeeded in the window, and how many of those mails each
/// outcome reached, counted once per mail (two opens of one mail are one opened mail). Jobs of
/// other kinds, outside the window or without a topic are not counted, and an event whose
/// message id matches no attempt counts toward no topic.
pub async fn sent_mail_count_counts_mails_per_topic_with_their_outcomes(s: S) {
    let mail = |topic: &str| json!({"topic": topic, "recipient_id": "r"});
    let t = t0();
    sent(&s, "email", mail("weekly"), "m1", t, false).await;
    sent(
        &s,
        "email",
        mail("weekly"),
        "m2",
        t + Duration::seconds(1),
        false,
    )
    .await;
    sent(
        &s,
        "email",
        mail("weekly"),
        "m3",
        t + Duration::seconds(2),
        false,
    )
    .await;
    sent(
        &s,
        "email",
        mail("daily"),
        "m4",
        t + Duration::seconds(3),
        false,
    )
    .await;
    // Not counted: another kind, no topic, and a mail before the window.
    sent(
        &s,
        "webhook",
        mail("weekly"),
        "w1",
        t + Duration::seconds(4),
        false,
    )
    .await;
    sent(
        &s,
        "email",
        json!({"n": 1}),
        "m5",
        t + Duration::seconds(5),
        false,
    )
    .await;
    sent(
        &s,
        "email",
        mail("weekly"),
        "m0",
        t - Duration::hours(2),
        false,
    )
    .await;
    let later = t + Duration::minutes(1);
    let r = action::RECORDED;
    event(&s, "e1", mail_event::DELIVERED, Some("m1"), r, later).await;
    event(&s, "e2", mail_event::DELIVERED, Some("m2"), r, later).await;
    event(&s, "e3", mail_event::OPENED, Some("m1"), r, later).await;
    event(&s, "e4", mail_event::OPENED, Some("m1"), r, later).await;
    event(&s, "e5", mail_event::CLICKED, Some("m1"), r, later).await;
    event(
        &s,
        "e6",
        mail_event::BOUNCED,
        Some("m3"),
        action::SUPPRESSED,
        later,
    )
    .await;
    event(&s, "e7", mail_event::COMPLAINED, Some("m2"), r, later).await;
    event(
        &s,
        "e8",
        mail_event::BOUNCED,
        Some("m4"),
        action::UNKNOWN,
        later,
    )
    .await;
    event(&s, "e9", mail_event::BOUNCED, Some("w1"), r, later).await;
    event(&s, "e10", mail_event::BOUNCED, Some("m0"), r, later).await;
    event(&s, "e11", mail_event::BOUNCED, Some("nobody"), r, later).await;
    event(&s, "e12", mail_event::BOUNCED, None, r, later).await;
    let counts = s
        .sent_mail_count(SentMailCount {
            since: t - Duration::hours(1),
            until: t + Duration::hours(1),
            mail_kinds: vec!["email".into()],
        })
        .await
        .unwrap();
    assert_eq!(
        counts,
        vec![
            row("daily", [1, 0, 0, 0, 1, 0]),
            row("weekly", [3, 2, 1, 1, 1, 1]),
        ]
    );
    // The window's end is exclusive, and no mail kind counts nothing.
    let none = s
        .sent_mail_count(SentMailCount {
            since: t - Duration::hours(1),
            until: t,
            mail_kinds: vec!["email".into()],
        })
        .await
        .unwrap();
    assert_eq!(none, vec![]);
    let other = s
        .sent_mail_count(SentMailCount {
            since: t - Duration::hours(1),
            until: t + Duration::hours(1),
            mail_kinds: vec!["sms".into()],
        })
        .await
        .unwrap();
    assert_eq!(other, vec![]);
}

/// Per A/B variant of a topic: its exposures (successful sends whose completion recorded
/// one) and their outcomes; another topic's exposures and mails without one are not counted.
pub async fn exposure_outcome_count_counts_variants_with_their_outcomes(s: S) {
    let ab = |topic: &str, v: &str| json!({"topic": topic, "variant": v, "recipient_id": "r"});
    let t = t0();
    sent(&s, "email", ab("weekly", "a"), "a1", t, true).await;
    sent(&s, "email", ab("weekly", "a"), "a2", t, true).await;
    sent(&s, "email", ab("weekly", "b"), "b1", t, true).await;
    sent(&s, "email", ab("daily", "a"), "d1", t, true).await;
    sent(&s, "email", ab("weekly", "b"), "b2", t, false).await;
    let later = t + Duration::minutes(1);
    let r = action::RECORDED;
    event(&s, "e1", mail_event::DELIVERED, Some("a1"), r, later).await;
    event(&s, "e2", mail_event::OPENED, Some("a1"), r, later).await;
    event(&s, "e3", mail_event::CLICKED, Some("a1"), r, later).await;
    event(&s, "e4", mail_event::CLICKED, Some("a1"), r, later).await;
    event(&s, "e5", mail_event::BOUNCED, Some("a2"), r, later).await;
    event(&s, "e6", mail_event::DELIVERED, Some("b1"), r, later).await;
    event(&s, "e7", mail_event::COMPLAINED, Some("b1"), r, later).await;
    event(&s, "e8", mail_event::DELIVERED, Some("d1"), r, later).await;
    event(&s, "e9", mail_event::DELIVERED, Some("b2"), r, later).await;
    let counts = s
        .exposure_outcome_count(ExposureOutcomeCount {
            topic: "weekly".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        counts,
        vec![row("a", [2, 1, 1, 1, 1, 0]), row("b", [1, 1, 0, 0, 0, 1])]
    );
    let none = s
        .exposure_outcome_count(ExposureOutcomeCount {
            topic: "nothing".into(),
        })
        .await
        .unwrap();
    assert_eq!(none, vec![]);
}

/// Inbound events of one action in a window, per source and type (an untyped event has the
/// type `""`); other actions and events outside the window are not counted.
pub async fn inbound_event_count_groups_one_action_by_source_and_type(s: S) {
    let t = t0();
    let u = action::UNKNOWN;
    event(&s, "u1", "contact.updated", None, u, t).await;
    event(
        &s,
        "u2",
        "contact.updated",
        None,
        u,
        t + Duration::seconds(1),
    )
    .await;
    event(&s, "u3", "", None, u, t + Duration::seconds(2)).await;
    event(
        &s,
        "u4",
        mail_event::BOUNCED,
        None,
        u,
        t + Duration::seconds(3),
    )
    .await;
    event(
        &s,
        "old",
        "contact.updated",
        None,
        u,
        t - Duration::hours(2),
    )
    .await;
    event(&s, "r1", mail_event::DELIVERED, None, action::RECORDED, t).await;
    let tally = |source: &str, event_type: &str, count: i64| InboundEventTally {
        source: source.into(),
        event_type: event_type.into(),
        count,
    };
    let counts = s
        .inbound_event_count(InboundEventCount {
            since: t - Duration::hours(1),
            until: t + Duration::hours(1),
            action: u.into(),
        })
        .await
        .unwrap();
    assert_eq!(
        counts,
        vec![
            tally("resend", "", 1),
            tally("resend", "contact.updated", 2),
            tally("resend", mail_event::BOUNCED, 1),
        ]
    );
    let recorded = s
        .inbound_event_count(InboundEventCount {
            since: t - Duration::hours(1),
            until: t + Duration::hours(1),
            action: action::RECORDED.into(),
        })
        .await
        .unwrap();
    assert_eq!(recorded, vec![tally("resend", mail_event::DELIVERED, 1)]);
}
