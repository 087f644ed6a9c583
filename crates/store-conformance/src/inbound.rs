//! Inbound behaviours: an event stored once by its id and matched to its
//! job by the provider message id, suppression that cascades to every subscription of an
//! address in one transaction, the suppression list's pages and removals, the
//! one-click unsubscribe, and settings (maintenance mode).

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_store::*;
use serde_json::json;
use std::sync::Arc;

type S = Arc<dyn Store>;

async fn recipient(s: &S, id: &str, email: &str) {
    s.recipient_upsert(RecipientUpsert {
        id: id.into(),
        email: email.into(),
        timezone: "UTC".into(),
        locale: None,
        attributes: json!({}),
        state: RecipientState::Active,
        endpoint_id: None,
        now: t0(),
    })
    .await
    .unwrap();
}

async fn subscribe(s: &S, r: &str, topic: &str) {
    s.subscription_put(SubscriptionPut {
        recipient_id: r.into(),
        topic: topic.into(),
        targets: vec![],
        channels: vec!["email".into()],
        enabled: true,
        now: t0(),
    })
    .await
    .unwrap();
}

async fn enabled(s: &S, r: &str, topic: &str) -> bool {
    s.subscription_get(r, topic).await.unwrap().unwrap().enabled
}

fn event(id: &str, event_type: &str, suppress: &[&str]) -> InboundEventRecord {
    InboundEventRecord {
        source: "resend".into(),
        id: id.into(),
        event_type: event_type.into(),
        provider_message_id: None,
        action: if suppress.is_empty() {
            action::RECORDED.into()
        } else {
            action::SUPPRESSED.into()
        },
        payload: json!({"type": event_type, "data": {"n": 1}}),
        suppress: suppress.iter().map(|a| a.to_string()).collect(),
        reason: "complaint".into(),
        now: t0(),
    }
}

/// The first delivery is stored and acts; the same id again changes nothing, even with
/// another payload. The same id from another source is another event.
pub async fn inbound_event_record_is_idempotent_by_event_id(s: S) {
    recipient(&s, "r1", "a@example.com").await;
    subscribe(&s, "r1", "weekly").await;
    let first = s
        .inbound_event_record(event("msg_1", "email.complained", &["a@example.com"]))
        .await
        .unwrap();
    assert!(first.created);
    assert_eq!(first.suppressions_created, 1);
    assert_eq!(first.subscriptions_disabled, 1);
    let stored = s
        .inbound_event_get("resend", "msg_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.event_type, "email.complained");
    assert_eq!(stored.action, action::SUPPRESSED);
    assert_eq!(stored.payload["data"]["n"], 1);
    assert_eq!(stored.received_at, t0());

    // The subscription is enabled again; a repeat of the event must not touch it.
    subscribe(&s, "r1", "weekly").await;
    let mut again = event("msg_1", "email.complained", &["a@example.com"]);
    again.payload = json!({"changed": true});
    again.now = t0() + Duration::minutes(5);
    let repeat = s.inbound_event_record(again).await.unwrap();
    assert_eq!(
        repeat,
        InboundEventRecorded::default(),
        "a repeat does nothing"
    );
    assert!(enabled(&s, "r1", "weekly").await);
    let stored = s
        .inbound_event_get("resend", "msg_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.payload["data"]["n"], 1, "the first payload stays");

    let mut other = event("msg_1", "x.y", &[]);
    other.source = "acme".into();
    assert!(s.inbound_event_record(other).await.unwrap().created);
    assert!(
        s.inbound_event_get("nope", "msg_1")
            .await
            .unwrap()
            .is_none()
    );
}

/// An event is matched to the job whose attempt recorded its provider message id; an
/// unknown id matches nothing and is still stored.
pub async fn inbound_event_matches_job_by_provider_message_id(s: S) {
    let j = job(t0());
    let id = j.id.clone();
    s.job_insert(j).await.unwrap();
    let claimed = s.job_claim(claim(t0(), 1, "n1")).await.unwrap();
    let token = claimed[0].lease_token.clone().unwrap();
    s.job_complete_many(vec![JobComplete {
        id: id.clone(),
        lease_token: token,
        attempt: Attempt {
            job_id: id.clone(),
            attempt: 1,
            started_at: t0(),
            finished_at: t0(),
            outcome: "succeeded".parse().expect("outcome"),
            error_class: None,
            status_code: Some(200),
            error: None,
            response: None,
            provider_id: Some("re_msg_42".into()),
            node: Some("n1".into()),
        },
        transition: Transition::Succeeded,
        record_exposure: false,
    }])
    .await
    .unwrap();
    let mut e = event("evt_a", "email.delivered", &[]);
    e.provider_message_id = Some("re_msg_42".into());
    let r = s.inbound_event_record(e.clone()).await.unwrap();
    assert_eq!(r.job_id.as_deref(), Some(id.as_str()));
    let stored = s
        .inbound_event_get("resend", "evt_a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.job_id.as_deref(), Some(id.as_str()));
    assert_eq!(stored.provider_message_id.as_deref(), Some("re_msg_42"));
    // A repeat reports the stored match too.
    assert_eq!(s.inbound_event_record(e).await.unwrap().job_id, Some(id));

    let mut unknown = event("evt_b", "email.delivered", &[]);
    unknown.provider_message_id = Some("re_unknown".into());
    let r = s.inbound_event_record(unknown).await.unwrap();
    assert!(r.created);
    assert_eq!(r.job_id, None);
}

/// A complaint about one address disables all three subscriptions of its recipient and the
/// subscriptions of a second recipient with the same address in another case, and leaves
/// other addresses alone. Applying again adds nothing new.
pub async fn suppression_apply_cascades_to_every_subscription_of_the_address(s: S) {
    recipient(&s, "r1", "Ann@Example.com").await;
    recipient(&s, "r2", "ann@example.com").await;
    recipient(&s, "r3", "bob@example.com").await;
    for t in ["weekly", "daily", "news"] {
        subscribe(&s, "r1", t).await;
    }
    subscribe(&s, "r2", "weekly").await;
    subscribe(&s, "r3", "weekly").await;
    let applied = s
        .suppression_apply(SuppressionApply {
            address: " ANN@example.com ".into(),
            reason: "complaint".into(),
            source_event_id: Some("msg_c".into()),
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(
        applied,
        SuppressionApplied {
            created: true,
            subscriptions_disabled: 4
        }
    );
    for t in ["weekly", "daily", "news"] {
        assert!(!enabled(&s, "r1", t).await, "r1 {t}");
    }
    assert!(!enabled(&s, "r2", "weekly").await);
    assert!(
        enabled(&s, "r3", "weekly").await,
        "another address is untouched"
    );
    let sup = s.suppression_get("ann@example.com").await.unwrap().unwrap();
    assert_eq!(sup.reason, "complaint");
    assert_eq!(sup.source_event_id.as_deref(), Some("msg_c"));
    assert_eq!(sup.created_at, t0());

    let again = s
        .suppression_apply(SuppressionApply {
            address: "ann@example.com".into(),
            reason: "hard_bounce".into(),
            source_event_id: None,
            now: t0() + Duration::hours(1),
        })
        .await
        .unwrap();
    assert_eq!(again, SuppressionApplied::default());
    assert_eq!(
        s.suppression_get("ann@example.com")
            .await
            .unwrap()
            .unwrap()
            .reason,
        "complaint",
        "the first reason stays"
    );
}

/// The list pages by address; removal takes an address off once and leaves subscriptions
/// disabled.
pub async fn suppression_list_pages_and_remove_is_once(s: S) {
    for a in ["c@x.io", "a@x.io", "b@x.io"] {
        s.suppression_apply(SuppressionApply {
            address: a.into(),
            reason: "manual".into(),
            source_event_id: None,
            now: t0(),
        })
        .await
        .unwrap();
    }
    let page = s
        .suppression_list(SuppressionList {
            after: None,
            limit: Some(2),
        })
        .await
        .unwrap();
    let names: Vec<_> = page.iter().map(|x| x.address.as_str()).collect();
    assert_eq!(names, ["a@x.io", "b@x.io"]);
    let rest = s
        .suppression_list(SuppressionList {
            after: Some("b@x.io".into()),
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].address, "c@x.io");

    let remove = |a: &str| SuppressionRemove {
        address: a.into(),
        reason: "the recipient asked again".into(),
        now: t0() + Duration::minutes(1),
    };
    assert!(s.suppression_remove(remove("B@x.io")).await.unwrap());
    assert!(!s.suppression_remove(remove("b@x.io")).await.unwrap());
    assert!(s.suppression_get("b@x.io").await.unwrap().is_none());
    assert_eq!(
        s.suppression_list(SuppressionList::default())
            .await
            .unwrap()
            .len(),
        2
    );
}

/// Disabling a subscription reports a change once; unknown ones report none.
pub async fn subscription_disable_is_idempotent(s: S) {
    recipient(&s, "r1", "a@example.com").await;
    subscribe(&s, "r1", "weekly").await;
    subscribe(&s, "r1", "daily").await;
    let d = |t: &str| SubscriptionDisable {
        recipient_id: "r1".into(),
        topic: t.into(),
        now: t0() + Duration::minutes(1),
    };
    assert!(s.subscription_disable(d("weekly")).await.unwrap());
    assert!(!s.subscription_disable(d("weekly")).await.unwrap());
    assert!(!s.subscription_disable(d("nope")).await.unwrap());
    assert!(!enabled(&s, "r1", "weekly").await);
    assert!(enabled(&s, "r1", "daily").await, "other topics stay");
    let sub = s.subscription_get("r1", "weekly").await.unwrap().unwrap();
    assert_eq!(sub.updated_at, t0() + Duration::minutes(1));
}

/// A setting is set, replaced and cleared.
pub async fn setting_put_get_and_clear(s: S) {
    assert_eq!(s.setting_get(SETTING_MAINTENANCE).await.unwrap(), None);
    let put = |v: Option<&str>, m: i64| SettingPut {
        name: SETTING_MAINTENANCE.into(),
        value: v.map(str::to_string),
        now: t0() + Duration::minutes(m),
    };
    s.setting_put(put(Some("on"), 0)).await.unwrap();
    s.setting_put(put(Some("on"), 1)).await.unwrap();
    let got = s.setting_get(SETTING_MAINTENANCE).await.unwrap().unwrap();
    assert_eq!(got.value, "on");
    assert_eq!(got.updated_at, t0() + Duration::minutes(1));
    s.setting_put(put(None, 2)).await.unwrap();
    assert_eq!(s.setting_get(SETTING_MAINTENANCE).await.unwrap(), None);
}

/// `setting_create` stores a setting only when it is absent: the first value stays, a
/// second create returns it unchanged (two nodes storing the cluster's API token at once
/// agree on one).
pub async fn setting_create_keeps_the_first_value(s: S) {
    let create = |v: &str, m: i64| SettingPut {
        name: "api_token".into(),
        value: Some(v.into()),
        now: t0() + Duration::minutes(m),
    };
    let first = s.setting_create(create("first", 0)).await.unwrap().unwrap();
    assert_eq!(first.value, "first");
    let second = s
        .setting_create(create("second", 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.value, "first");
    assert_eq!(second.updated_at, t0());
    let got = s.setting_get("api_token").await.unwrap().unwrap();
    assert_eq!(got.value, "first");
    assert_eq!(s.setting_get("other").await.unwrap(), None);
}

/// Retention: events received before the cut-off go, oldest first, at most `limit` per
/// call; newer ones and the suppressions the old ones caused stay.
pub async fn inbound_event_prune_is_bounded_and_keeps_suppressions(s: S) {
    recipient(&s, "r1", "old@example.com").await;
    subscribe(&s, "r1", "weekly").await;
    for (i, age_days) in [(1, 40), (2, 35), (3, 31), (4, 1)] {
        let mut e = event(
            &format!("msg_p{i}"),
            "email.complained",
            if i == 1 { &["old@example.com"] } else { &[] },
        );
        e.now = t0() - Duration::days(age_days);
        assert!(s.inbound_event_record(e).await.unwrap().created);
    }
    let cut = t0() - Duration::days(30);
    let first = s
        .inbound_event_prune(InboundEventPrune {
            before: cut,
            limit: 2,
        })
        .await
        .unwrap();
    assert_eq!(first, 2, "bounded by the limit");
    assert!(
        s.inbound_event_get("resend", "msg_p1")
            .await
            .unwrap()
            .is_none(),
        "oldest first"
    );
    assert!(
        s.inbound_event_get("resend", "msg_p3")
            .await
            .unwrap()
            .is_some()
    );
    let second = s
        .inbound_event_prune(InboundEventPrune {
            before: cut,
            limit: 2,
        })
        .await
        .unwrap();
    assert_eq!(second, 1);
    assert!(
        s.inbound_event_get("resend", "msg_p4")
            .await
            .unwrap()
            .is_some(),
        "newer stays"
    );
    assert!(
        s.suppression_get("old@example.com")
            .await
            .unwrap()
            .is_some(),
        "the suppression an old event caused stays"
    );
}

/// Scoped API tokens: created once per name (a second with the name is a `Conflict`), found by
/// the hash, listed oldest first with revoked ones, revoked once by id or name, and their last
/// use recorded at most once per `skip_after` window.
pub async fn api_token_create_get_list_revoke_and_touch(s: S) {
    let token = |id: &str, name: &str, hash: &str, m: i64| ApiTokenRecord {
        id: id.into(),
        name: name.into(),
        scope: "read".into(),
        token_hash: hash.into(),
        created_at: t0() + Duration::minutes(m),
        last_used_at: None,
        revoked_at: None,
    };
    assert_eq!(s.api_token_get("h1").await.unwrap(), None);
    let ci = token("tok_1", "ci", "h1", 0);
    s.api_token_create(ApiTokenCreate { token: ci.clone() })
        .await
        .unwrap();
    s.api_token_create(ApiTokenCreate {
        token: token("tok_2", "deploy", "h2", 1),
    })
    .await
    .unwrap();
    let dup = s
        .api_token_create(ApiTokenCreate {
            token: token("tok_3", "ci", "h3", 2),
        })
        .await
        .unwrap_err();
    assert_eq!(dup.kind(), kairos_store::ErrorKind::Conflict, "{dup}");
    assert_eq!(s.api_token_get("h1").await.unwrap(), Some(ci.clone()));
    let names: Vec<String> = s
        .api_token_list()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["ci", "deploy"]);

    // Touch: recorded, then skipped inside the window, then recorded again after it.
    let touch = |m: i64, skip_m: i64| ApiTokenTouch {
        token_hash: "h1".into(),
        now: t0() + Duration::minutes(m),
        skip_after: t0() + Duration::minutes(skip_m),
    };
    s.api_token_touch(touch(5, 4)).await.unwrap();
    let used = |t: Option<ApiTokenRecord>| t.unwrap().last_used_at;
    assert_eq!(
        used(s.api_token_get("h1").await.unwrap()),
        Some(t0() + Duration::minutes(5))
    );
    s.api_token_touch(touch(5, 4)).await.unwrap();
    s.api_token_touch(touch(6, 4)).await.unwrap();
    assert_eq!(
        used(s.api_token_get("h1").await.unwrap()),
        Some(t0() + Duration::minutes(5)),
        "a use inside the window is not written again"
    );
    s.api_token_touch(touch(7, 6)).await.unwrap();
    assert_eq!(
        used(s.api_token_get("h1").await.unwrap()),
        Some(t0() + Duration::minutes(7))
    );

    // Revoke by name, then by id: once each.
    let revoke = |who: &str| ApiTokenRevoke {
        id_or_name: who.into(),
        now: t0() + Duration::minutes(9),
    };
    assert!(s.api_token_revoke(revoke("ci")).await.unwrap());
    assert!(
        !s.api_token_revoke(revoke("ci")).await.unwrap(),
        "revoked once"
    );
    assert!(!s.api_token_revoke(revoke("tok_1")).await.unwrap());
    assert!(s.api_token_revoke(revoke("tok_2")).await.unwrap());
    assert!(!s.api_token_revoke(revoke("nope")).await.unwrap());
    let got = s.api_token_get("h1").await.unwrap().unwrap();
    assert_eq!(got.revoked_at, Some(t0() + Duration::minutes(9)));
    assert_eq!(
        s.api_token_list().await.unwrap().len(),
        2,
        "revoked tokens stay listed"
    );
}

/// An admin session is stored, read and deleted once (logout); storing a new one deletes the
/// sessions that have expired by then (issue 12).
pub async fn admin_session_create_get_delete_and_prune(s: S) {
    let session = |id: &str, created_min: i64, life_min: i64| AdminSession {
        id_hash: id.into(),
        created_at: t0() + Duration::minutes(created_min),
        expires_at: t0() + Duration::minutes(created_min + life_min),
    };
    assert_eq!(s.admin_session_get("h1").await.unwrap(), None);
    let a = session("h1", 0, 60);
    s.admin_session_create(AdminSessionCreate { session: a.clone() })
        .await
        .unwrap();
    s.admin_session_create(AdminSessionCreate {
        session: session("h2", 0, 10),
    })
    .await
    .unwrap();
    assert_eq!(s.admin_session_get("h1").await.unwrap(), Some(a.clone()));
    assert!(s.admin_session_delete("h1").await.unwrap());
    assert!(!s.admin_session_delete("h1").await.unwrap(), "deleted once");
    assert_eq!(s.admin_session_get("h1").await.unwrap(), None);
    // h2 expires at minute 10: a login at minute 10 deletes it, a live one stays.
    let live = session("h3", 5, 60);
    s.admin_session_create(AdminSessionCreate {
        session: live.clone(),
    })
    .await
    .unwrap();
    assert!(s.admin_session_get("h2").await.unwrap().is_some());
    s.admin_session_create(AdminSessionCreate {
        session: session("h4", 10, 60),
    })
    .await
    .unwrap();
    assert_eq!(
        s.admin_session_get("h2").await.unwrap(),
        None,
        "expired, pruned"
    );
    assert_eq!(s.admin_session_get("h3").await.unwrap(), Some(live));
    assert!(s.admin_session_get("h4").await.unwrap().is_some());
}
