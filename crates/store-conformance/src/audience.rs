//! Audience behaviours: recipients, topics, subscriptions, suppressions, the
//! resumable expansion cursor, exposures only for succeeded email jobs, and
//! the occurrence view.

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_core::{Job, JobKind};
use kairos_store::*;
use serde_json::json;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn recipient(id: &str, email: &str) -> RecipientUpsert {
    RecipientUpsert {
        id: id.into(),
        email: email.into(),
        timezone: "Asia/Tokyo".into(),
        locale: Some("ja-JP".into()),
        attributes: json!({"name": id, "plan": "pro"}),
        state: RecipientState::Active,
        endpoint_id: None,
        now: t0(),
    }
}

fn sub(r: &str, topic: &str, enabled: bool) -> SubscriptionPut {
    SubscriptionPut {
        recipient_id: r.into(),
        topic: topic.into(),
        targets: vec![format!("target-of-{r}")],
        channels: vec!["email".into()],
        enabled,
        now: t0(),
    }
}

/// Upsert creates then replaces; get, keyset list and a bulk upsert of thousands.
pub async fn recipient_upsert_get_list_and_bulk(s: S) {
    let a = s
        .recipient_upsert(recipient("r1", "a@example.com"))
        .await
        .unwrap();
    assert_eq!(a.email, "a@example.com");
    assert_eq!(a.attributes["plan"], "pro");
    assert_eq!(a.locale.as_deref(), Some("ja-JP"));
    let mut up = recipient("r1", "new@example.com");
    up.state = RecipientState::Disabled;
    up.now = t0() + Duration::hours(1);
    let b = s.recipient_upsert(up).await.unwrap();
    assert_eq!(b.email, "new@example.com");
    assert_eq!(b.state, RecipientState::Disabled);
    assert_eq!(b.created_at, t0(), "created_at kept on replace");
    assert_eq!(b.updated_at, t0() + Duration::hours(1));
    assert_eq!(s.recipient_get("r1").await.unwrap(), Some(b));
    assert_eq!(s.recipient_get("nope").await.unwrap(), None);

    let many: Vec<_> = (0..3000)
        .map(|i| recipient(&format!("u{i:05}"), &format!("u{i}@example.com")))
        .collect();
    assert_eq!(s.recipient_upsert_many(many).await.unwrap(), 3000);
    let page1 = s
        .recipient_list(RecipientList {
            after_id: None,
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(
        page1.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["r1", "u00000"]
    );
    let page2 = s
        .recipient_list(RecipientList {
            after_id: Some("u00000".into()),
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(
        page2.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["u00001", "u00002"]
    );
}

/// A topic is created then replaced whole, variants included.
pub async fn topic_put_get_replaces_variants(s: S) {
    let put = |subject: &str, variants: Vec<Variant>| TopicPut {
        name: "weekly".into(),
        subject: subject.into(),
        html: Some("<p>{{ recipient.id }}</p>".into()),
        text: None,
        variants,
        entitlement_url: Some("http://127.0.0.1:1/e".into()),
        entitlement_timeout_ms: Some(1500),
        now: t0(),
    };
    let v = Variant {
        name: "b".into(),
        weight: 3,
        subject: Some("B".into()),
        html: None,
        text: None,
    };
    let t = s.topic_put(put("A", vec![v.clone()])).await.unwrap();
    assert_eq!(t.variants, vec![v]);
    assert_eq!(t.entitlement_timeout_ms, Some(1500));
    let t2 = s.topic_put(put("A2", vec![])).await.unwrap();
    assert_eq!(t2.subject, "A2");
    assert!(t2.variants.is_empty());
    assert_eq!(s.topic_get("weekly").await.unwrap(), Some(t2));
    assert_eq!(s.topic_list().await.unwrap().len(), 1);
    assert_eq!(s.topic_get("none").await.unwrap(), None);
}

/// Subscriptions: unknown recipient is a conflict; `active_only` leaves out disabled
/// subscriptions and disabled recipients; keyset pages cover each subscription once.
pub async fn subscription_put_list_active_only_keyset(s: S) {
    let err = s
        .subscription_put(sub("ghost", "weekly", true))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    for i in 0..5 {
        s.recipient_upsert(recipient(&format!("r{i}"), "x@example.com"))
            .await
            .unwrap();
    }
    let mut off = recipient("r4", "x@example.com");
    off.state = RecipientState::Disabled;
    s.recipient_upsert(off).await.unwrap();
    for i in 0..5 {
        s.subscription_put(sub(&format!("r{i}"), "weekly", i != 2))
            .await
            .unwrap();
    }
    s.subscription_put(sub("r0", "daily", true)).await.unwrap();
    let got = s.subscription_get("r0", "weekly").await.unwrap().unwrap();
    assert_eq!(got.channels, vec!["email".to_string()]);
    assert_eq!(got.target.as_deref(), Some("target-of-r0"));
    // Replace: disable r0.
    let r0 = s
        .subscription_put(sub("r0", "weekly", false))
        .await
        .unwrap();
    assert!(!r0.enabled);
    s.subscription_put(sub("r0", "weekly", true)).await.unwrap();

    let mut seen = Vec::new();
    let mut after = None;
    for _ in 0..10 {
        let page = s
            .subscription_list(SubscriptionList {
                topic: Some("weekly".into()),
                recipient_id: None,
                active_only: true,
                after: after.clone(),
                limit: Some(2),
            })
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        after = page
            .last()
            .map(|x| (x.recipient_id.clone(), x.topic.clone()));
        seen.extend(page.into_iter().map(|x| x.recipient_id));
    }
    assert_eq!(
        seen,
        ["r0", "r1", "r3"],
        "r2 disabled, r4's recipient disabled"
    );
    let all = s
        .subscription_list(SubscriptionList {
            recipient_id: Some("r0".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
}

/// Suppressions: compared normalized, the first reason stays.
pub async fn suppression_add_is_idempotent_and_normalized(s: S) {
    let add = |a: &str, reason: &str| SuppressionAdd {
        address: a.into(),
        reason: reason.into(),
        source_event_id: Some("evt_1".into()),
        now: t0(),
    };
    assert!(
        s.suppression_add(add(" Bounce@Example.COM ", "hard_bounce"))
            .await
            .unwrap()
    );
    assert!(
        !s.suppression_add(add("bounce@example.com", "complaint"))
            .await
            .unwrap()
    );
    let got = s
        .suppression_get("BOUNCE@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.address, "bounce@example.com");
    assert_eq!(got.reason, "hard_bounce");
    assert_eq!(got.source_event_id.as_deref(), Some("evt_1"));
    assert_eq!(s.suppression_get("other@example.com").await.unwrap(), None);
}

fn email_job(key: &str, variant: Option<&str>) -> JobInsert {
    let mut j = job(t0());
    j.kind = JobKind("email".into());
    j.schedule_id = Some("sch_a".into());
    j.period_key = Some("2026-W48".into());
    j.fire_at = Some(t0());
    j.dedupe_key = Some(key.into());
    j.payload = json!({"topic": "weekly", "recipient_id": key, "variant": variant});
    j.audience = kairos_core::JobAudience::of_payload(&j.payload);
    if variant.is_none() {
        j.payload = json!({"topic": "weekly", "recipient_id": key});
        j.audience = kairos_core::JobAudience::of_payload(&j.payload);
    }
    j
}

/// The expansion cursor: begin is idempotent, a page advances only from the expected cursor
/// (a second node's copy of the page writes nothing), done leaves the pending list.
pub async fn expansion_cursor_resumes_and_fences(s: S) {
    let begin = ExpansionBegin {
        schedule_id: "sch_a".into(),
        period_key: "2026-W48".into(),
        fire_at: t0(),
        now: t0(),
    };
    assert!(s.expansion_begin(begin.clone()).await.unwrap());
    assert!(!s.expansion_begin(begin).await.unwrap());
    let pending = s.expansion_pending(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].cursor, None);
    let page = |expected: Option<&str>, cursor: &str, done: bool, keys: &[&str]| ExpansionAdvance {
        schedule_id: "sch_a".into(),
        period_key: "2026-W48".into(),
        expected_cursor: expected.map(str::to_string),
        cursor: Some(cursor.into()),
        done,
        jobs: keys.iter().map(|k| email_job(k, None)).collect(),
        now: t0(),
    };
    let first = s
        .expansion_advance(page(None, "b", false, &["a", "b"]))
        .await
        .unwrap();
    assert_eq!(first.map(|v| v.len()), Some(2));
    // The same page again (a second node, or a retry after a lost answer): nothing written.
    assert_eq!(
        s.expansion_advance(page(None, "b", false, &["a", "b"]))
            .await
            .unwrap(),
        None
    );
    // A page whose jobs exist already (a manual re-run got there first) advances, creates 0.
    let second = s
        .expansion_advance(page(Some("b"), "c", true, &["b", "c"]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.len(), 1);
    let e = s.expansion_get("sch_a", "2026-W48").await.unwrap().unwrap();
    assert!(e.done);
    assert_eq!(e.created, 3);
    assert_eq!(e.cursor.as_deref(), Some("c"));
    assert!(s.expansion_pending(10).await.unwrap().is_empty());
    assert_eq!(
        s.expansion_advance(page(Some("c"), "d", true, &["d"]))
            .await
            .unwrap(),
        None,
        "a done expansion does not advance"
    );
}

async fn run_to(s: &S, n: usize) -> Vec<Job> {
    let got = s.job_claim(claim(t0(), n as i64, "node-a")).await.unwrap();
    assert_eq!(got.len(), n);
    got
}

fn done(j: &Job, t: Transition) -> JobComplete {
    let outcome = crate::fixtures::outcome_of(&t);
    JobComplete {
        id: j.id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: Attempt {
            job_id: j.id.clone(),
            attempt: j.attempt,
            started_at: t0(),
            finished_at: t0(),
            outcome: outcome.parse().expect("outcome"),
            error_class: None,
            status_code: None,
            error: None,
            response: None,
            provider_id: None,
            node: None,
        },
        transition: t,
        record_exposure: false,
    }
}

/// A completion that asks for the job's A/B exposure (what the engine's `email` kind does).
fn done_exposed(j: &Job, t: Transition) -> JobComplete {
    JobComplete {
        record_exposure: true,
        ..done(j, t)
    }
}

/// Exposures are recorded with the completion, only for succeeded jobs whose completion asks
/// for one and that carry a variant: skipped, retried and other jobs record none.
pub async fn exposure_recorded_only_for_succeeded_email_jobs(s: S) {
    let keys = ["e1", "e2", "e3", "e4", "e5"];
    let variants = [Some("a"), Some("a"), Some("b"), Some("b"), None];
    for (k, v) in keys.iter().zip(variants) {
        s.job_insert(email_job(k, v)).await.unwrap();
    }
    let mut hook = job(t0());
    hook.payload = json!({"topic": "weekly", "variant": "a"});
    hook.audience = kairos_core::JobAudience::of_payload(&hook.payload);
    s.job_insert(hook).await.unwrap();
    let mut jobs = run_to(&s, 6).await;
    jobs.sort_by_key(|j| {
        j.payload["recipient_id"]
            .as_str()
            .unwrap_or("~")
            .to_string()
    });
    let later = t0() + Duration::minutes(1);
    let cs = vec![
        done_exposed(&jobs[0], Transition::Succeeded),
        done_exposed(&jobs[1], Transition::Skipped("suppressed".into())),
        done_exposed(&jobs[2], Transition::Succeeded),
        done_exposed(
            &jobs[3],
            Transition::Retry {
                run_at: later,
                refund_attempt: false,
            },
        ),
        done_exposed(&jobs[4], Transition::Succeeded),
        done(&jobs[5], Transition::Succeeded), // the webhook job
    ];
    let r = s.job_complete_many(cs.clone()).await.unwrap();
    assert_eq!(r.applied, 6);
    let counts = s.exposure_counts("weekly").await.unwrap();
    assert_eq!(
        counts,
        vec![
            ExposureCount {
                variant: "a".into(),
                count: 1
            },
            ExposureCount {
                variant: "b".into(),
                count: 1
            },
        ]
    );
    // A stale repeat of the completions records nothing more.
    let r = s.job_complete_many(cs).await.unwrap();
    assert_eq!(r.applied, 0);
    assert_eq!(s.exposure_counts("weekly").await.unwrap().len(), 2);
}

/// The store does not know which kinds record exposures: a completion decides. A job of any
/// kind whose completion asks records its exposure; an `email` job whose completion does not
/// ask records none.
pub async fn exposure_follows_the_completion_not_the_kind(s: S) {
    let mut other = job(t0());
    other.kind = JobKind("notice".into());
    other.payload = json!({"topic": "weekly", "recipient_id": "r1", "variant": "a"});
    other.audience = kairos_core::JobAudience::of_payload(&other.payload);
    s.job_insert(other).await.unwrap();
    s.job_insert(email_job("e9", Some("b"))).await.unwrap();
    let mut jobs = run_to(&s, 2).await;
    jobs.sort_by_key(|j| j.kind.as_str().to_string());
    assert_eq!(jobs[0].kind.as_str(), "email");
    let r = s
        .job_complete_many(vec![
            done(&jobs[0], Transition::Succeeded),
            done_exposed(&jobs[1], Transition::Succeeded),
        ])
        .await
        .unwrap();
    assert_eq!(r.applied, 2);
    assert_eq!(
        s.exposure_counts("weekly").await.unwrap(),
        vec![ExposureCount {
            variant: "a".into(),
            count: 1
        }]
    );
}

/// The occurrence view counts a schedule's jobs per period, channel and state.
pub async fn occurrence_list_counts_by_period_channel_state(s: S) {
    for k in ["o1", "o2", "o3"] {
        s.job_insert(email_job(k, None)).await.unwrap();
    }
    let mut other = email_job("o4", None);
    other.period_key = Some("2026-W47".into());
    other.fire_at = Some(t0() - Duration::days(7));
    s.job_insert(other).await.unwrap();
    let claimed = s.job_claim(claim(t0(), 1, "n")).await.unwrap();
    s.job_complete_many(vec![done(&claimed[0], Transition::Succeeded)])
        .await
        .unwrap();
    let all = s
        .occurrence_list(OccurrenceList {
            schedule_id: "sch_a".into(),
            period_key: None,
            limit: None,
            status: None,
        })
        .await
        .unwrap();
    let periods: Vec<_> = all.iter().map(|c| c.period_key.as_str()).collect();
    assert_eq!(periods.first(), Some(&"2026-W48"), "newest first: {all:?}");
    let w48: i64 = all
        .iter()
        .filter(|c| c.period_key == "2026-W48")
        .map(|c| c.count)
        .sum();
    assert_eq!(w48 + 1, 4);
    let one = s
        .occurrence_list(OccurrenceList {
            schedule_id: "sch_a".into(),
            period_key: Some("2026-W47".into()),
            limit: None,
            status: None,
        })
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].channel, "email");
    assert_eq!(one[0].count, 1);
    assert_eq!(one[0].fire_at, Some(t0() - Duration::days(7)));
}
