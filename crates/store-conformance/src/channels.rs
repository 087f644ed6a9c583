//! Channel behaviours: a schedule's explicit channels round-trip, each job
//! carries its channel, occurrences count per channel name, and a recipient's webhook
//! endpoint is stored with it.

use crate::fixtures::{job, schedule, t0};
use kairos_core::{JobKind, RetryPolicy};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn channel(name: &str, kind: &str) -> ScheduleChannel {
    ScheduleChannel {
        name: name.into(),
        kind: JobKind(kind.into()),
        payload: None,
        endpoint_id: None,
        retry: None,
        concurrency: None,
    }
}

/// Explicit channels are stored and replaced with the schedule; a schedule without them
/// reads back none (its one channel is derived from its kind).
pub async fn schedule_channels_roundtrip_and_replace(s: S) {
    let ep = s
        .endpoint_upsert(EndpointUpsert {
            id: "ep_ch".into(),
            url: "https://example.com/h".into(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            now: t0(),
        })
        .await
        .unwrap();
    let mut def = schedule("multi", t0());
    let mut a = channel("primary", "webhook");
    a.endpoint_id = Some(ep.id.clone());
    a.retry = Some(RetryPolicy::notification());
    let mut b = channel("audit", "http");
    b.payload = Some(serde_json::json!({"target": "ht_1"}));
    def.channels = vec![a.clone(), b.clone()];
    let sch = s.schedule_create(def.clone()).await.unwrap();
    assert_eq!(sch.channels, vec![a.clone(), b.clone()]);
    let got = s.schedule_get(&sch.id).await.unwrap().unwrap();
    assert_eq!(got.channels, vec![a.clone(), b]);
    assert_eq!(got.channel_list().len(), 2);

    let mut def2 = def;
    def2.channels = vec![a.clone()];
    let upd = s
        .schedule_update(ScheduleUpdate {
            id: sch.id.clone(),
            def: def2,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(upd.channels, vec![a]);

    let plain = s.schedule_create(schedule("plain", t0())).await.unwrap();
    assert!(plain.channels.is_empty());
    let implicit = plain.channel_list();
    assert_eq!(implicit.len(), 1);
    assert_eq!(implicit[0].name, "webhook");
}

/// A job's channel round-trips (insert, get, claim), and the occurrence counts are per
/// channel name, falling back to the kind for jobs without one.
pub async fn job_channel_roundtrips_and_occurrences_count_per_channel(s: S) {
    let sch = s.schedule_create(schedule("fan", t0())).await.unwrap();
    let mut jobs = Vec::new();
    for (key, ch) in [
        ("k1", Some("primary")),
        ("k2", Some("backup")),
        ("k3", None),
    ] {
        let mut j = job(t0());
        j.schedule_id = Some(sch.id.clone());
        j.period_key = Some("2026-11-29".into());
        j.fire_at = Some(t0());
        j.dedupe_key = Some(key.into());
        j.channel = ch.map(str::to_string);
        jobs.push(j);
    }
    let ids = s.job_insert_many(jobs).await.unwrap();
    assert_eq!(ids.len(), 3);
    let one = s.job_get(&ids[0]).await.unwrap().unwrap();
    assert_eq!(one.channel.as_deref(), Some("primary"));
    let single = s
        .job_insert(JobInsert {
            channel: Some("solo".into()),
            ..job(t0())
        })
        .await
        .unwrap();
    assert_eq!(single.job.channel.as_deref(), Some("solo"));
    let claimed = s
        .job_claim(crate::fixtures::claim(t0(), 10, "n1"))
        .await
        .unwrap();
    assert!(
        claimed
            .iter()
            .any(|j| j.channel.as_deref() == Some("backup"))
    );

    let counts = s
        .occurrence_list(OccurrenceList {
            schedule_id: sch.id.clone(),
            period_key: None,
            limit: None,
            status: None,
        })
        .await
        .unwrap();
    let mut channels: Vec<&str> = counts.iter().map(|c| c.channel.as_str()).collect();
    channels.sort();
    assert_eq!(channels, ["backup", "primary", "webhook"]);
}

/// A recipient's webhook endpoint is stored, replaced and cleared with the recipient.
pub async fn recipient_endpoint_roundtrips(s: S) {
    let ep = s
        .endpoint_upsert(EndpointUpsert {
            id: "ep_r".into(),
            url: "https://example.com/r".into(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            now: t0(),
        })
        .await
        .unwrap();
    let mut r = RecipientUpsert {
        id: "usr_ep".into(),
        email: "ep@example.com".into(),
        timezone: "UTC".into(),
        locale: None,
        attributes: serde_json::json!({}),
        state: RecipientState::Active,
        endpoint_id: Some(ep.id.clone()),
        now: t0(),
    };
    let got = s.recipient_upsert(r.clone()).await.unwrap();
    assert_eq!(got.endpoint_id.as_deref(), Some("ep_r"));
    r.endpoint_id = None;
    s.recipient_upsert_many(vec![r]).await.unwrap();
    let got = s.recipient_get("usr_ep").await.unwrap().unwrap();
    assert_eq!(got.endpoint_id, None);
}
