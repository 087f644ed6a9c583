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
    ended(
        s,
        kind,
        payload,
        at,
        Transition::Succeeded,
        (Some(pid), exposed),
    )
    .await;
}

/// Insert a job of `kind` with `payload`, claim it and complete it at `at` by `transition`,
/// with a provider message id and its exposure recorded when asked (`sent`).
async fn ended(
    s: &S,
    kind: &str,
    payload: Value,
    at: DateTime<Utc>,
    transition: Transition,
    (pid, exposed): (Option<&str>, bool),
) {
    let outcome = crate::fixtures::outcome_of(&transition);
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
            outcome: outcome.parse().expect("outcome"),
            error_class: (outcome == "failed").then_some(kairos_core::ErrorClass::Permanent),
            status_code: pid.map(|_| 200),
            error: None,
            response: None,
            provider_id: pid.map(str::to_string),
            node: Some("n1".into()),
        },
        transition,
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

fn topic(kind: &str, topic: &str, counts: [i64; 3]) -> TopicCount {
    let [succeeded, bounced, complained] = counts;
    TopicCount {
        kind: kind.into(),
        topic: topic.into(),
        succeeded,
        bounced,
        complained,
    }
}

/// The jobs with a topic that succeeded in a window, per kind and topic, with how many of them
/// have a bounce and a complaint, counted once per mail (two bounces of one mail are one
/// bounced mail). Jobs outside the window or without a topic are not counted, and an event
/// whose message id matches no attempt counts toward no topic.
pub async fn topic_count_range_counts_mails_per_topic_with_their_bounces_and_complaints(s: S) {
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
    event(&s, "e13", mail_event::BOUNCED, Some("m3"), r, later).await;
    let range = |since, until| TopicCountRange { since, until };
    assert_eq!(
        s.topic_count_range(range(t - Duration::hours(1), t + Duration::hours(1)))
            .await
            .unwrap(),
        vec![
            topic("email", "daily", [1, 1, 0]),
            topic("email", "weekly", [3, 1, 1]),
            topic("webhook", "weekly", [1, 1, 0]),
        ]
    );
    // The window's end is exclusive; the mail before the window has its own.
    assert_eq!(
        s.topic_count_range(range(t - Duration::hours(1), t))
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(
        s.topic_count_range(range(t - Duration::hours(3), t - Duration::hours(1)))
            .await
            .unwrap(),
        vec![topic("email", "weekly", [1, 1, 0])]
    );
}

/// A quarter hour's succeeded jobs with a topic are counted once, per kind and topic (its
/// skipped and dead jobs of a topic are not), and marked counted even without any; the list gives the quarters counted with their counts, and
/// the prune deletes the quarters before an instant, counts and marks.
pub async fn quarter_count_record_counts_a_quarter_once_and_lists_what_was_counted(s: S) {
    let q = quarter_of(t0());
    let mail = |topic: &str| json!({"topic": topic, "recipient_id": "r"});
    let m = Duration::minutes;
    sent(&s, "email", mail("weekly"), "m1", q, false).await;
    sent(&s, "email", mail("weekly"), "m2", q + m(14), false).await;
    sent(&s, "email", mail("daily"), "m3", q + m(3), false).await;
    sent(&s, "webhook", mail("weekly"), "w1", q + m(4), false).await;
    sent(&s, "email", json!({"n": 1}), "m4", q + m(5), false).await;
    // Jobs of the topic that did not succeed are not mails sent.
    let not_sent = |t: Transition| ended(&s, "email", mail("weekly"), q + m(6), t, (None, false));
    not_sent(Transition::Skipped("suppressed".into())).await;
    not_sent(Transition::Dead).await;
    // The next quarter's job, and one in the quarter before.
    sent(&s, "email", mail("weekly"), "m5", q + m(15), false).await;
    sent(&s, "email", mail("weekly"), "m6", q - m(1), false).await;
    let now = q + m(40);
    let record = |start| QuarterCountRecord { start, now };
    assert!(
        s.quarter_count_record(record(q + m(7))).await.unwrap(),
        "any instant of the quarter names it"
    );
    assert!(!s.quarter_count_record(record(q)).await.unwrap(), "once");
    let empty = q + Duration::hours(1);
    assert!(
        s.quarter_count_record(record(empty)).await.unwrap(),
        "a quarter without such jobs is counted too"
    );
    let list = |since, until| QuarterCountList {
        since,
        until,
        of: QuarterCountOf::Topics,
    };
    let listed = s
        .quarter_count_list(list(q - QUARTER, q + Duration::hours(2)))
        .await
        .unwrap();
    assert_eq!(
        listed.taken,
        vec![q, empty],
        "the quarters before and after were not counted"
    );
    let expected = vec![
        topic("email", "daily", [1, 0, 0]),
        topic("email", "weekly", [2, 0, 0]),
        topic("webhook", "weekly", [1, 0, 0]),
    ];
    assert_eq!(
        listed.topics,
        expected.iter().map(|c| (q, c.clone())).collect::<Vec<_>>()
    );
    let later = s
        .quarter_count_list(list(q + QUARTER, q + Duration::hours(2)))
        .await
        .unwrap();
    assert_eq!((later.taken, later.topics), (vec![empty], vec![]));
    let decided = |since, until| QuarterCountList {
        since,
        until,
        of: QuarterCountOf::Decided,
    };
    let before = s.quarter_count_list(decided(q, q + m(1))).await.unwrap();
    assert!(!before.decided.is_empty(), "the quarter's decided jobs");
    let pruned = s
        .quarter_count_prune(QuarterCountPrune {
            before: q + QUARTER,
        })
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    let left = s
        .quarter_count_list(list(q - Duration::hours(1), q + Duration::hours(2)))
        .await
        .unwrap();
    assert_eq!((left.taken, left.topics), (vec![empty], vec![]));
    let left = s
        .quarter_count_list(decided(q - Duration::hours(1), q + Duration::hours(2)))
        .await
        .unwrap();
    assert_eq!(
        (left.taken, left.decided),
        (vec![empty], vec![]),
        "the decided counts are pruned too"
    );
    assert!(
        s.quarter_count_record(record(q)).await.unwrap(),
        "a pruned quarter can be counted again"
    );
    let again = s.quarter_count_list(list(q, q + m(1))).await.unwrap();
    assert_eq!(
        again.topics,
        expected.into_iter().map(|c| (q, c)).collect::<Vec<_>>()
    );
}

/// A recorded bounce or complaint about a job with a topic is added to the quarter its mail
/// was sent in, once per mail and type (a second bounce of one mail, or the same event again,
/// adds nothing), before the quarter is counted as after; the count keeps it. Other event
/// types and events matching no mail add nothing.
pub async fn inbound_events_add_each_mails_first_bounce_and_complaint_to_its_quarter(s: S) {
    let q = quarter_of(t0());
    let m = Duration::minutes;
    let mail = json!({"topic": "weekly", "recipient_id": "r"});
    sent(&s, "email", mail.clone(), "m1", q + m(1), false).await;
    sent(&s, "email", mail.clone(), "m2", q + m(2), false).await;
    sent(&s, "email", mail.clone(), "m3", q + m(20), false).await;
    let at = q + m(16);
    let r = action::RECORDED;
    event(
        &s,
        "e1",
        mail_event::BOUNCED,
        Some("m1"),
        action::SUPPRESSED,
        at,
    )
    .await;
    event(&s, "e2", mail_event::BOUNCED, Some("m1"), r, at).await;
    event(&s, "e1", mail_event::BOUNCED, Some("m1"), r, at).await;
    event(&s, "e3", mail_event::COMPLAINED, Some("m2"), r, at).await;
    event(&s, "e4", mail_event::DELIVERED, Some("m2"), r, at).await;
    event(&s, "e5", mail_event::BOUNCED, Some("nobody"), r, at).await;
    event(&s, "e6", mail_event::BOUNCED, Some("m3"), r, q + m(25)).await;
    assert!(
        s.quarter_count_record(QuarterCountRecord { start: q, now: at })
            .await
            .unwrap()
    );
    let listed = s
        .quarter_count_list(QuarterCountList {
            since: q,
            until: q + m(30),
            of: QuarterCountOf::Topics,
        })
        .await
        .unwrap();
    assert_eq!(listed.taken, vec![q], "the next quarter is not counted yet");
    assert_eq!(
        listed.topics,
        vec![(q, topic("email", "weekly", [2, 1, 1]))]
    );
    let next = count_and_list(&*s, q + QUARTER, q + m(35)).await;
    assert_eq!(
        next.topics,
        vec![(q + QUARTER, topic("email", "weekly", [1, 1, 0]))]
    );
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

/// The counts of the quarters of a range summed per key, each kind of count: over two
/// counted quarters the mails, bounces, decided and finished jobs of both, over one only its
/// own, over none nothing.
pub async fn quarter_count_sum_adds_the_counts_of_a_range_of_quarters_per_key(s: S) {
    let q = quarter_of(t0());
    let m = Duration::minutes;
    let mail = |topic: &str| json!({"topic": topic, "recipient_id": "r"});
    sent(&s, "email", mail("weekly"), "m1", q + m(1), false).await;
    sent(&s, "email", mail("daily"), "m2", q + m(2), false).await;
    sent(&s, "email", mail("weekly"), "m3", q + m(16), false).await;
    sent(&s, "email", mail("weekly"), "m4", q + m(17), false).await;
    let at = q + m(20);
    event(
        &s,
        "b1",
        mail_event::BOUNCED,
        Some("m1"),
        action::RECORDED,
        at,
    )
    .await;
    event(
        &s,
        "b3",
        mail_event::BOUNCED,
        Some("m3"),
        action::RECORDED,
        at,
    )
    .await;
    for start in [q, q + QUARTER] {
        assert!(
            s.quarter_count_record(QuarterCountRecord {
                start,
                now: q + m(40)
            })
            .await
            .unwrap()
        );
    }
    let sum = |since, until, of| {
        let s = s.clone();
        async move {
            s.quarter_count_sum(QuarterCountSum { since, until, of })
                .await
                .unwrap()
        }
    };
    let both = sum(q, q + QUARTER * 2, QuarterCountOf::Topics).await;
    assert_eq!(
        both.topics,
        vec![
            topic("email", "daily", [1, 0, 0]),
            topic("email", "weekly", [3, 2, 0])
        ]
    );
    assert!(
        both.decided.is_empty() && both.kinds.is_empty(),
        "only what was asked for"
    );
    let second = sum(q + QUARTER, q + QUARTER * 2, QuarterCountOf::Topics).await;
    assert_eq!(second.topics, vec![topic("email", "weekly", [2, 1, 0])]);
    let kinds = sum(q, q + QUARTER * 2, QuarterCountOf::Kinds).await;
    assert_eq!(
        kinds.kinds,
        vec![JobCount {
            kind: "email".into(),
            state: "succeeded".into(),
            count: 4
        }]
    );
    let decided = sum(q, q + QUARTER * 2, QuarterCountOf::Decided).await;
    let weekly: i64 = decided
        .decided
        .iter()
        .filter(|d| d.topic.as_deref() == Some("weekly") && d.kind.as_deref() == Some("email"))
        .map(|d| d.count)
        .sum();
    assert_eq!((weekly, decided.decided.len()), (3, 2), "{decided:?}");
    assert_eq!(
        sum(q + QUARTER * 2, q + QUARTER * 4, QuarterCountOf::Topics).await,
        QuarterSums::default(),
        "no quarter of the range was counted"
    );
    assert_eq!(
        sum(q, q + QUARTER * 2, QuarterCountOf::Marks).await,
        QuarterSums::default()
    );
}

/// Count the quarter `q` (at `now`) and list its mail counts.
async fn count_and_list(s: &dyn Store, q: DateTime<Utc>, now: DateTime<Utc>) -> QuarterCounts {
    assert!(
        s.quarter_count_record(QuarterCountRecord { start: q, now })
            .await
            .unwrap(),
        "the quarter was not counted yet"
    );
    s.quarter_count_list(QuarterCountList {
        since: q,
        until: q + QUARTER,
        of: QuarterCountOf::Topics,
    })
    .await
    .unwrap()
}

/// Two bounces of one mail recorded at the same moment, in two transactions, still count that
/// mail once: the second waits for the first (PostgreSQL locks the mail's job row; SQLite has
/// one writer) and then sees its bounce.
pub async fn concurrent_bounces_of_one_mail_count_it_once(s: S) {
    let q = quarter_of(t0());
    let mail = json!({"topic": "weekly", "recipient_id": "r"});
    const MAILS: usize = 20;
    for i in 0..MAILS {
        sent(
            &s,
            "email",
            mail.clone(),
            &format!("m{i}"),
            q + Duration::minutes(1),
            false,
        )
        .await;
    }
    let at = q + Duration::minutes(5);
    let mut tasks = Vec::new();
    for i in 0..MAILS {
        for copy in ["a", "b"] {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                event(
                    &s,
                    &format!("b{i}{copy}"),
                    mail_event::BOUNCED,
                    Some(&format!("m{i}")),
                    action::RECORDED,
                    at,
                )
                .await;
            }));
        }
    }
    for t in tasks {
        t.await.expect("a bounce recorded");
    }
    let listed = count_and_list(&*s, q, at).await;
    assert_eq!(
        listed.topics,
        vec![(q, topic("email", "weekly", [MAILS as i64, MAILS as i64, 0]))]
    );
}

/// The mails each store's migration test writes into a database of the release before 0038:
/// id, topic, minutes after `t0()` it succeeded (all `email`). j1 and j2 are of topic `weekly`,
/// j3 has none.
pub const BEFORE_0038_JOBS: [(&str, Option<&str>, i64); 3] = [
    ("j1", Some("weekly"), 1),
    ("j2", Some("weekly"), 2),
    ("j3", None, 3),
];
/// Their events: id, type, job. j1 bounced twice, j2 was complained about and delivered, j3
/// bounced.
pub const BEFORE_0038_EVENTS: [(&str, &str, &str); 5] = [
    ("b1", mail_event::BOUNCED, "j1"),
    ("b2", mail_event::BOUNCED, "j1"),
    ("c1", mail_event::COMPLAINED, "j2"),
    ("d1", mail_event::DELIVERED, "j2"),
    ("b3", mail_event::BOUNCED, "j3"),
];

/// After migration 0038 on a database holding [`BEFORE_0038_JOBS`] and their events, the
/// bounces and complaints recorded before are in their mails' quarter, each mail once; once
/// the sampler counts the quarter, its topic reads 2 sent, 1 bounced, 1 complained about.
pub async fn bounces_of_the_release_before_after_0038(store: &dyn Store) {
    let q = quarter_of(t0());
    let listed = count_and_list(store, q, q + Duration::minutes(20)).await;
    assert_eq!(listed.taken, vec![q]);
    assert_eq!(
        listed.topics,
        vec![(q, topic("email", "weekly", [2, 1, 1]))]
    );
}
