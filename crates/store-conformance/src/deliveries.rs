//! The delivery log (`delivery_list`) and the channel filter of the job lists: audience jobs
//! grouped by (topic, recipient, target, period) with each channel's state, filtered on
//! several state axes at once, keyset pages covering every row once.

use crate::fixtures::{claim, job, t0};
use crate::jobs::complete;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// An audience job as expansion writes it: ids in the payload, period and channel as columns.
fn audience_job(topic: &str, rcp: &str, target: Option<&str>, period: &str, ch: &str) -> JobInsert {
    let mut j = job(t0());
    j.kind = kairos_core::JobKind(ch.into());
    j.payload = serde_json::json!({"topic": topic, "recipient_id": rcp, "target": target,
                                   "channel": ch});
    j.audience = kairos_core::JobAudience::of_payload(&j.payload);
    j.period_key = Some(period.into());
    j.fire_at = Some(t0());
    j.channel = Some(ch.into());
    j.dedupe_key = Some(format!("{topic}/{rcp}/{target:?}/{period}/{ch}"));
    j
}

/// Insert the jobs, run each once and move it where `ends` says.
async fn seed(s: &S, jobs: Vec<(JobInsert, &str)>) -> Vec<String> {
    let mut ids = Vec::new();
    for (j, _) in &jobs {
        ids.push(s.job_insert(j.clone()).await.unwrap().job.id);
    }
    let claimed = s.job_claim(claim(t0(), 100, "n1")).await.unwrap();
    let mut done = Vec::new();
    for c in &claimed {
        let Some(pos) = ids.iter().position(|id| *id == c.id) else {
            continue;
        };
        let transition = match jobs[pos].1 {
            "succeeded" => Transition::Succeeded,
            "dead" => Transition::Dead,
            "skipped" => Transition::Skipped("not_entitled".into()),
            _ => continue,
        };
        done.push(complete(c, transition));
    }
    s.job_complete_many(done).await.unwrap();
    ids
}

fn keys(rows: &[Delivery]) -> Vec<String> {
    rows.iter()
        .map(|d| {
            let k = &d.key;
            format!(
                "{}/{}/{}/{}",
                k.topic, k.recipient_id, k.target, k.period_key
            )
        })
        .collect()
}

/// S3-14: one row per (topic, recipient, target, period) with each channel's state, attempts
/// and last error; "email dead and webhook succeeded" is one question; plain `state` matches
/// any channel (or the given `channel`); every key filter narrows; pages of 2 visit each row
/// once, newest period first. Jobs that are not audience jobs are not rows.
pub async fn delivery_list_groups_channels_and_filters_on_several_state_axes_s3_14(s: S) {
    let a = |t, r, tg, p, c| audience_job(t, r, tg, p, c);
    seed(
        &s,
        vec![
            // A: mail died, webhook sent.
            (a("news", "r1", Some("t1"), "2026-W48", "email"), "dead"),
            (
                a("news", "r1", Some("t1"), "2026-W48", "webhook"),
                "succeeded",
            ),
            // B: both sent.
            (
                a("news", "r2", Some("t1"), "2026-W48", "email"),
                "succeeded",
            ),
            (
                a("news", "r2", Some("t1"), "2026-W48", "webhook"),
                "succeeded",
            ),
            // C: a second target of r1, both died.
            (a("news", "r1", Some("t2"), "2026-W48", "email"), "dead"),
            (a("news", "r1", Some("t2"), "2026-W48", "webhook"), "dead"),
            // D: the week before, mail sent, webhook died.
            (
                a("news", "r1", Some("t1"), "2026-W47", "email"),
                "succeeded",
            ),
            (a("news", "r1", Some("t1"), "2026-W47", "webhook"), "dead"),
            // E: another topic without a target, skipped.
            (a("other", "r3", None, "2026-W48", "email"), "skipped"),
            // Not an audience job.
            (job(t0()), "succeeded"),
        ],
    )
    .await;
    let list = |f: DeliveryList| {
        let s = s.clone();
        async move {
            s.delivery_list(DeliveryList {
                limit: if f.limit == 0 { 100 } else { f.limit },
                ..f
            })
            .await
            .unwrap()
        }
    };
    let (ka, kb, kc, kd, ke) = (
        "news/r1/t1/2026-W48",
        "news/r2/t1/2026-W48",
        "news/r1/t2/2026-W48",
        "news/r1/t1/2026-W47",
        "other/r3//2026-W48",
    );
    let all = list(DeliveryList::default()).await;
    assert_eq!(keys(&all), [ke, kb, kc, ka, kd], "key order, descending");
    let row_a = &all[3];
    assert_eq!(row_a.fire_at, Some(t0()));
    let chans: Vec<(&str, &str, i64, Option<&str>)> = row_a
        .channels
        .iter()
        .map(|c| {
            (
                c.channel.as_str(),
                c.state.as_str(),
                c.attempts,
                c.last_error.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        chans,
        [
            ("email", "dead", 1, Some("HTTP 503")),
            ("webhook", "succeeded", 1, None)
        ]
    );
    assert_eq!(all[0].channels[0].reason.as_deref(), Some("not_entitled"));

    let pair = |c: &str, st: &str| (c.to_string(), st.to_string());
    let both = list(DeliveryList {
        channel_states: vec![pair("email", "dead"), pair("webhook", "succeeded")],
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&both), [ka]);
    let mail_sent = list(DeliveryList {
        channel_states: vec![pair("email", "succeeded")],
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&mail_sent), [kb, kd]);
    let any_dead = list(DeliveryList {
        state: Some("dead".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&any_dead), [kc, ka, kd]);
    let webhook_dead = list(DeliveryList {
        channel: Some("webhook".into()),
        state: Some("dead".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&webhook_dead), [kc, kd]);
    let has_webhook = list(DeliveryList {
        channel: Some("webhook".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&has_webhook), [kb, kc, ka, kd]);

    let r1 = list(DeliveryList {
        topic: Some("news".into()),
        recipient_id: Some("r1".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&r1), [kc, ka, kd]);
    let t2 = list(DeliveryList {
        target: Some("t2".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&t2), [kc]);
    let untargeted = list(DeliveryList {
        target: Some(String::new()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&untargeted), [ke]);
    let w47 = list(DeliveryList {
        period_key: Some("2026-W47".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(keys(&w47), [kd]);

    let mut seen = Vec::new();
    let mut after = None;
    for _ in 0..10 {
        let page = list(DeliveryList {
            after: after.clone(),
            limit: 2,
            ..Default::default()
        })
        .await;
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2);
        after = page.last().map(|d| d.key.clone());
        seen.extend(keys(&page));
    }
    assert_eq!(seen, [ke, kb, kc, ka, kd], "every row once, in order");
}

/// `job_list` and `job_search` filter by channel (the `channel` column).
pub async fn job_list_and_search_filter_by_channel(s: S) {
    let mail = s
        .job_insert(audience_job("news", "r1", None, "2026-W48", "email"))
        .await
        .unwrap()
        .job;
    s.job_insert(audience_job("news", "r1", None, "2026-W48", "webhook"))
        .await
        .unwrap();
    s.job_insert(job(t0())).await.unwrap();
    let listed = s
        .job_list(JobList {
            channel: Some("email".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [mail.id.as_str()]
    );
    let found = s
        .job_search(JobSearch {
            channel: Some("email".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        found.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [mail.id.as_str()]
    );
    assert_eq!(s.job_list(JobList::default()).await.unwrap().len(), 3);
}
