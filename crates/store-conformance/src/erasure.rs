//! Erasure of a person (issue 15): the recipient and their subscriptions go, the suppression
//! of their address stays as a keyed hash that the address still finds, stored events and
//! job texts lose the address; topics and subscriptions can be deleted.

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_store::*;
use serde_json::json;
use std::sync::Arc;

type S = Arc<dyn Store>;

const ADDRESS: &str = "alice.o_neil@example.com";

fn recipient(id: &str, email: &str) -> RecipientUpsert {
    RecipientUpsert {
        id: id.into(),
        email: email.into(),
        timezone: "UTC".into(),
        locale: None,
        attributes: json!({"name": "Alice O'Neil"}),
        state: RecipientState::Active,
        endpoint_id: None,
        now: t0(),
    }
}

fn sub(r: &str, topic: &str) -> SubscriptionPut {
    SubscriptionPut {
        recipient_id: r.into(),
        topic: topic.into(),
        targets: vec![],
        channels: vec!["email".into()],
        enabled: true,
        now: t0(),
    }
}

fn erase(id: &str, key: u8) -> RecipientErase {
    RecipientErase {
        id: id.into(),
        new_key: vec![key; 32],
        now: t0() + Duration::hours(1),
    }
}

fn event(id: &str, payload: serde_json::Value) -> InboundEventRecord {
    InboundEventRecord {
        source: "resend".into(),
        id: id.into(),
        event_type: "email.bounced".into(),
        provider_message_id: None,
        action: action::RECORDED.into(),
        payload,
        suppress: Vec::new(),
        reason: "hard_bounce".into(),
        now: t0(),
    }
}

/// A job of recipient `rid` that died with `error` as its attempt's error and response.
async fn dead_job_quoting(s: &S, rid: &str, error: &str) -> String {
    let mut p = job(t0());
    p.payload = json!({"topic": "weekly", "recipient_id": rid});
    p.audience = kairos_core::JobAudience::of_payload(&p.payload);
    let id = p.id.clone();
    s.job_insert(p).await.unwrap();
    let j = s.job_claim(claim(t0(), 1, "a")).await.unwrap().remove(0);
    assert_eq!(j.id, id);
    s.job_complete_many(vec![JobComplete {
        id: id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: Attempt {
            job_id: id.clone(),
            attempt: j.attempt,
            started_at: t0(),
            finished_at: t0(),
            outcome: "failed".parse().expect("outcome"),
            error_class: Some("permanent".parse().expect("class")),
            status_code: Some(550),
            error: Some(error.into()),
            response: Some(format!("{{\"echo\":\"{error}\"}}")),
            provider_id: None,
            node: None,
        },
        transition: Transition::Dead,
        record_exposure: false,
    }])
    .await
    .unwrap();
    id
}

/// Erasing deletes the recipient and their subscriptions, keeps the suppression as a keyed
/// hash (listed as erased, found by the address in any case, removable by the address), and
/// replaces the address in stored events and in the recipient's job texts. A second erase
/// finds nothing.
pub async fn recipient_erase_keeps_only_a_keyed_hash_of_the_address(s: S) {
    s.recipient_upsert(recipient("r1", "Alice.O_Neil@Example.com"))
        .await
        .unwrap();
    s.recipient_upsert(recipient("r2", "bob@example.com"))
        .await
        .unwrap();
    s.subscription_put(sub("r1", "weekly")).await.unwrap();
    s.subscription_put(sub("r1", "daily")).await.unwrap();
    s.subscription_put(sub("r2", "weekly")).await.unwrap();
    s.suppression_apply(SuppressionApply {
        address: ADDRESS.into(),
        reason: "hard_bounce".into(),
        source_event_id: Some("evt_1".into()),
        now: t0(),
    })
    .await
    .unwrap();
    s.suppression_apply(SuppressionApply {
        address: "bob@example.com".into(),
        reason: "complaint".into(),
        source_event_id: None,
        now: t0(),
    })
    .await
    .unwrap();
    s.inbound_event_record(event(
        "evt_1",
        json!({"type": "email.bounced", "data": {"to": ["ALICE.O_NEIL@example.com"], "subject": "hi"}}),
    ))
    .await
    .unwrap();
    s.inbound_event_record(event("evt_2", json!({"data": {"to": ["bob@example.com"]}})))
        .await
        .unwrap();
    let job_id = dead_job_quoting(&s, "r1", "550 5.1.1 <alice.o_neil@EXAMPLE.com> unknown").await;

    let out = s
        .recipient_erase(erase("r1", 7))
        .await
        .unwrap()
        .expect("erased");
    assert_eq!(out.address, ADDRESS);
    assert_eq!(out.subscriptions, 2);
    assert_eq!(out.suppressions_hashed, 1);
    assert_eq!(out.events_redacted, 1);
    assert!(out.texts_redacted >= 1, "{out:?}");

    assert_eq!(s.recipient_get("r1").await.unwrap(), None);
    assert_eq!(s.subscription_get("r1", "weekly").await.unwrap(), None);
    assert!(s.subscription_get("r2", "weekly").await.unwrap().is_some());
    let list = s
        .suppression_list(SuppressionList::default())
        .await
        .unwrap();
    assert_eq!(list.len(), 2);
    let hashed = list.iter().find(|x| x.erased).expect("an erased entry");
    assert!(
        hashed.address.starts_with(ERASED_PREFIX),
        "{}",
        hashed.address
    );
    assert!(!hashed.address.contains('@'));
    assert_eq!(hashed.reason, "hard_bounce", "the reason stays");
    let bob = list.iter().find(|x| !x.erased).expect("bob stays");
    assert_eq!(bob.address, "bob@example.com");
    // The send path's check: the address (in any case) still finds the suppression.
    for a in [ADDRESS, " Alice.O_Neil@EXAMPLE.com "] {
        let got = s
            .suppression_get(a)
            .await
            .unwrap()
            .expect("still suppressed");
        assert!(got.erased);
    }
    let ev = s
        .inbound_event_get("resend", "evt_1")
        .await
        .unwrap()
        .unwrap();
    let text = ev.payload.to_string().to_lowercase();
    assert!(!text.contains("alice"), "{text}");
    assert_eq!(
        ev.payload["data"]["subject"], "hi",
        "the rest of the event stays"
    );
    let ev2 = s
        .inbound_event_get("resend", "evt_2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev2.payload["data"]["to"][0], "bob@example.com");
    let j = s.job_get(&job_id).await.unwrap().unwrap();
    assert!(
        !j.last_error
            .unwrap_or_default()
            .to_lowercase()
            .contains("alice")
    );
    for a in s.attempt_list(&job_id).await.unwrap() {
        let t = format!("{:?} {:?}", a.error, a.response).to_lowercase();
        assert!(!t.contains("alice") && t.contains("[erased]"), "{t}");
    }
    assert_eq!(s.recipient_erase(erase("r1", 7)).await.unwrap(), None);

    // The address comes back as a new recipient: still suppressed, no plain entry is added.
    s.recipient_upsert(recipient("r3", ADDRESS)).await.unwrap();
    assert!(s.suppression_get(ADDRESS).await.unwrap().unwrap().erased);
    let again = s
        .suppression_apply(SuppressionApply {
            address: ADDRESS.into(),
            reason: "complaint".into(),
            source_event_id: None,
            now: t0(),
        })
        .await
        .unwrap();
    assert!(!again.created);
    assert!(
        !s.suppression_add(SuppressionAdd {
            address: ADDRESS.into(),
            reason: "manual".into(),
            source_event_id: None,
            now: t0(),
        })
        .await
        .unwrap()
    );
    assert_eq!(
        s.suppression_list(SuppressionList::default())
            .await
            .unwrap()
            .len(),
        2
    );
    // Removal by the address finds the hash; once.
    let remove = || SuppressionRemove {
        address: ADDRESS.to_uppercase(),
        reason: "asked to".into(),
        now: t0(),
    };
    assert!(s.suppression_remove(remove()).await.unwrap());
    assert!(!s.suppression_remove(remove()).await.unwrap());
    assert_eq!(s.suppression_get(ADDRESS).await.unwrap(), None);
}

/// The erasure key is created once: a later erase with another candidate key hashes with the
/// first, so earlier erased addresses are still found.
pub async fn recipient_erase_creates_the_key_once(s: S) {
    for (id, email) in [("a", "a@example.com"), ("b", "b@example.com")] {
        s.recipient_upsert(recipient(id, email)).await.unwrap();
        s.suppression_add(SuppressionAdd {
            address: email.into(),
            reason: "manual".into(),
            source_event_id: None,
            now: t0(),
        })
        .await
        .unwrap();
    }
    s.recipient_erase(erase("a", 1)).await.unwrap().unwrap();
    s.recipient_erase(erase("b", 2)).await.unwrap().unwrap();
    for a in ["a@example.com", "b@example.com"] {
        assert!(s.suppression_get(a).await.unwrap().unwrap().erased, "{a}");
    }
    // A recipient without a suppression: erased, nothing hashed.
    s.recipient_upsert(recipient("c", "c@example.com"))
        .await
        .unwrap();
    let out = s.recipient_erase(erase("c", 3)).await.unwrap().unwrap();
    assert_eq!(out.suppressions_hashed, 0);
    assert_eq!(s.suppression_get("c@example.com").await.unwrap(), None);
}

/// Deleting a subscription deletes that one; deleting a topic deletes it and every
/// subscription to it. Each reports whether there was anything to delete.
pub async fn topic_and_subscription_delete(s: S) {
    for r in ["r1", "r2"] {
        s.recipient_upsert(recipient(r, &format!("{r}@example.com")))
            .await
            .unwrap();
    }
    s.topic_put(TopicPut {
        name: "weekly".into(),
        subject: "Weekly".into(),
        html: None,
        text: Some("hi".into()),
        variants: Vec::new(),
        entitlement_url: None,
        entitlement_timeout_ms: None,
        now: t0(),
    })
    .await
    .unwrap();
    for (r, t) in [("r1", "weekly"), ("r2", "weekly"), ("r1", "daily")] {
        s.subscription_put(sub(r, t)).await.unwrap();
    }
    let del = |r: &str, t: &str| SubscriptionDelete {
        recipient_id: r.into(),
        topic: t.into(),
    };
    assert!(s.subscription_delete(del("r1", "daily")).await.unwrap());
    assert!(!s.subscription_delete(del("r1", "daily")).await.unwrap());
    assert_eq!(s.subscription_get("r1", "daily").await.unwrap(), None);
    assert!(s.topic_delete("weekly").await.unwrap());
    assert!(!s.topic_delete("weekly").await.unwrap());
    assert_eq!(s.topic_get("weekly").await.unwrap(), None);
    for r in ["r1", "r2"] {
        assert_eq!(s.subscription_get(r, "weekly").await.unwrap(), None);
        assert!(
            s.recipient_get(r).await.unwrap().is_some(),
            "recipients stay"
        );
    }
}
