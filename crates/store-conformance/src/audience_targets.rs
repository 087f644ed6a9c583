//! Several targets per subscription, and the audience dedupe key of migration 0024: the
//! keys of jobs and tombstones written before it (schedule id first) are rewritten to
//! (topic, recipient, target, period, channel[, product]), so an upgraded node finds them.

use crate::fixtures::{job, schedule, t0};
use crate::raw::RawSql;
use kairos_core::JobKind;
use kairos_store::*;
use serde_json::json;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn recipient(id: &str) -> RecipientUpsert {
    RecipientUpsert {
        id: id.into(),
        email: format!("{id}@example.com"),
        timezone: "UTC".into(),
        locale: None,
        attributes: json!({}),
        state: RecipientState::Active,
        endpoint_id: None,
        now: t0(),
    }
}

fn sub(r: &str, targets: &[&str]) -> SubscriptionPut {
    SubscriptionPut {
        recipient_id: r.into(),
        topic: "weekly".into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        channels: vec!["email".into()],
        enabled: true,
        now: t0(),
    }
}

/// A subscription keeps its targets in order (the first also as `target`), a replace
/// replaces them, none reads as an empty list and no `target`; erasing the recipient removes
/// the subscription with all its targets.
pub async fn subscription_targets_roundtrip_replace_and_erase(s: S) {
    s.recipient_upsert(recipient("r1")).await.unwrap();
    let got = s
        .subscription_put(sub("r1", &["rep-b", "rep-a"]))
        .await
        .unwrap();
    assert_eq!(got.targets, ["rep-b", "rep-a"]);
    assert_eq!(got.target.as_deref(), Some("rep-b"));
    let read = s.subscription_get("r1", "weekly").await.unwrap().unwrap();
    assert_eq!(read, got);
    let listed = s
        .subscription_list(SubscriptionList {
            topic: Some("weekly".into()),
            active_only: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed, vec![got]);
    let none = s.subscription_put(sub("r1", &[])).await.unwrap();
    assert!(none.targets.is_empty());
    assert_eq!(none.target, None);
    let one = s.subscription_put(sub("r1", &["rep-c"])).await.unwrap();
    assert_eq!(one.targets, ["rep-c"]);
    s.subscription_put(sub("r1", &["rep-a", "rep-b", "rep-c"]))
        .await
        .unwrap();
    let erased = s
        .recipient_erase(RecipientErase {
            id: "r1".into(),
            new_key: vec![7; 32],
            now: t0(),
        })
        .await
        .unwrap()
        .expect("erased");
    assert_eq!(erased.subscriptions, 1);
    assert_eq!(s.subscription_get("r1", "weekly").await.unwrap(), None);
}

/// Length-prefixed parts, as the engine writes them.
fn part(s: &str) -> String {
    format!("{}:{s}", s.len())
}

/// Migration 0024 on a database an older version left: a job's old key (schedule id first)
/// becomes the new key (topic first; a digest's fan-out ends with its artifact name); of two
/// old jobs of one (recipient, target, period, channel) from two schedules, the earliest
/// takes the new key; a tombstone's old key gains its new form (the topic read from the
/// schedule); subscriptions get `targets` from `target`. An insert under a rewritten key then
/// creates nothing: the week of the upgrade is not mailed again (S3-3).
pub async fn audience_keys_of_an_older_version_are_rewritten_by_migration_0024(s: S, raw: RawSql) {
    s.recipient_upsert(recipient("u1")).await.unwrap();
    s.subscription_put(sub("u1", &["rep-a"])).await.unwrap();
    let mut weekly = schedule("weekly", t0());
    weekly.kind = JobKind::new("email");
    weekly.payload = json!({"topic": "weekly"});
    let a = s.schedule_create(weekly.clone()).await.unwrap().id;
    weekly.id = format!("{a}x");
    weekly.name = "weekly-too".into();
    let b = s.schedule_create(weekly).await.unwrap().id;
    let old = |sch: &str, r: &str, target: &str, channel: &str| {
        format!(
            "aud:{}|{}|{}|{}|{}",
            part(sch),
            part(r),
            part(target),
            part("2026-W48"),
            part(channel)
        )
    };
    let new = |topic: &str, r: &str, target: &str, channel: &str| {
        format!(
            "aud2:{}|{}|{}|{}|{}",
            part(topic),
            part(r),
            part(target),
            part("2026-W48"),
            part(channel)
        )
    };
    let audience_job = |key: String, payload: serde_json::Value, ms: i64| {
        let mut j = job(t0() + chrono::Duration::milliseconds(ms));
        j.kind = JobKind::new("email");
        j.payload = payload;
        j.audience = kairos_core::JobAudience::of_payload(&j.payload);
        j.period_key = Some("2026-W48".into());
        j.channel = Some("email".into());
        j.dedupe_key = Some(key);
        j
    };
    let payload = json!({"topic": "weekly", "recipient_id": "u1", "target": "rep-a"});
    // Two schedules on the topic already mailed u1 the week (the bug being fixed).
    let first = audience_job(old(&a, "u1", "rep-a", "email"), payload.clone(), 0);
    let second = audience_job(old(&b, "u1", "rep-a", "email"), payload, 1);
    // A digest's fan-out mail.
    let fan_out = audience_job(
        old("sch_digest", "u1", "", "email"),
        json!({"topic": "weekly", "recipient_id": "u1", "target": null,
               "artifact": {"name": "tech", "period_key": "2026-W48"}}),
        2,
    );
    for j in [&first, &second, &fan_out] {
        s.job_insert(j.clone()).await.unwrap();
    }
    // u2's job was pruned: only its tombstone is left; one of a deleted schedule stays.
    // Only the key is read here; CURRENT_TIMESTAMP is a value both databases take.
    for key in [
        old(&a, "u2", "", "webhook"),
        old("sch_gone", "u3", "", "email"),
    ] {
        raw(format!(
            "INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at) VALUES ('{key}', 'job_x', CURRENT_TIMESTAMP)"
        ))
        .await;
    }
    raw("ALTER TABLE subscriptions DROP COLUMN targets".into()).await;
    raw("DELETE FROM _sqlx_migrations WHERE version = 24".into()).await;

    s.migrate().await.expect("migrate to 0024");

    let key_of = |id: &str| {
        let (raw, id) = (raw.clone(), id.to_string());
        async move { raw(format!("SELECT dedupe_key FROM jobs WHERE id = '{id}'")).await }
    };
    let k = new("weekly", "u1", "rep-a", "email");
    assert_eq!(key_of(&first.id).await, Some(k.clone()), "the earliest");
    assert_eq!(
        key_of(&second.id).await,
        Some(old(&b, "u1", "rep-a", "email")),
        "the later keeps its old key"
    );
    assert_eq!(
        key_of(&fan_out.id).await,
        Some(format!(
            "{}|{}",
            new("weekly", "u1", "", "email"),
            part("tech")
        ))
    );
    let tombstone = |key: String| {
        let raw = raw.clone();
        async move {
            raw(format!(
                "SELECT job_id FROM dedupe_tombstones WHERE dedupe_key = '{key}'"
            ))
            .await
        }
    };
    assert_eq!(
        tombstone(new("weekly", "u2", "", "webhook")).await,
        Some("job_x".into())
    );
    assert_eq!(
        tombstone(old("sch_gone", "u3", "", "email")).await,
        Some("job_x".into()),
        "a tombstone of a deleted schedule keeps its old key"
    );
    let got = s.subscription_get("u1", "weekly").await.unwrap().unwrap();
    assert_eq!(got.targets, ["rep-a"], "targets from target");

    // The upgraded engine's inserts for the week create nothing.
    let again = vec![
        audience_job(k, json!({}), 10),
        audience_job(new("weekly", "u2", "", "webhook"), json!({}), 11),
    ];
    assert!(s.job_insert_many(again).await.unwrap().is_empty());
}
