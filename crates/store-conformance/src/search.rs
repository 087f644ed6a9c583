//! `job_search`: the admin's filters combine on every axis, and keyset pages cover every row
//! exactly once.

use crate::fixtures::{job, t0};
use chrono::Duration;
use kairos_store::*;
use std::collections::HashSet;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// Filters on state, kind, schedule, period and creation time combine; pages of 2 over 7 jobs
/// visit every job once, newest first.
pub async fn job_search_combines_filters_and_pages_by_keyset(s: S) {
    let mut ids = Vec::new();
    for i in 0..7i64 {
        let mut j = job(t0() + Duration::minutes(i));
        j.now = t0() + Duration::hours(i);
        j.schedule_id = Some(if i % 2 == 0 { "sch_even" } else { "sch_odd" }.into());
        j.period_key = Some(format!("2026-11-{:02}", 20 + i % 3));
        if i == 3 {
            j.kind = kairos_core::JobKind("http".into());
        }
        if i >= 4 {
            j.kind = kairos_core::JobKind("email".into());
            j.payload = serde_json::json!({"topic": if i == 6 { "weekly" } else { "daily" },
                                           "recipient_id": format!("rcp_{}", i % 2)});
            j.audience = kairos_core::JobAudience::of_payload(&j.payload);
        }
        ids.push(j.id.clone());
        s.job_insert(j).await.unwrap();
    }
    let search = |f: JobSearch| {
        let s = s.clone();
        async move { s.job_search(f).await.unwrap() }
    };
    // Two axes at once: schedule and period.
    let hits = search(JobSearch {
        schedule_id: Some("sch_even".into()),
        period_key: Some("2026-11-20".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    // i in {0, 6}: even, and i % 3 == 0.
    let got: Vec<_> = hits.iter().map(|j| j.id.clone()).collect();
    assert_eq!(got, vec![ids[6].clone(), ids[0].clone()]);

    let http = search(JobSearch {
        kind: Some("http".into()),
        state: Some("available".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(http.len(), 1);
    assert_eq!(http[0].id, ids[3]);
    let none = search(JobSearch {
        kind: Some("http".into()),
        state: Some("dead".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert!(none.is_empty());

    // Payload axes: topic and recipient (i = 4, 5 daily; 6 weekly; recipients rcp_0/rcp_1).
    let daily = search(JobSearch {
        topic: Some("daily".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        daily.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        vec![ids[5].clone(), ids[4].clone()]
    );
    let one = search(JobSearch {
        topic: Some("daily".into()),
        recipient_id: Some("rcp_0".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(
        one.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        vec![ids[4].clone()]
    );

    // Creation window [t0+2h, t0+5h): i = 2, 3, 4.
    let window = search(JobSearch {
        created_from: Some(t0() + Duration::hours(2)),
        created_to: Some(t0() + Duration::hours(5)),
        limit: 100,
        ..Default::default()
    })
    .await;
    let got: HashSet<_> = window.iter().map(|j| j.id.clone()).collect();
    let want: HashSet<_> = ids[2..5].iter().cloned().collect();
    assert_eq!(got, want);

    // Keyset pages of 2: 4 pages, every job once, strictly descending ids.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let page = search(JobSearch {
            before_id: cursor.clone(),
            limit: 2,
            ..Default::default()
        })
        .await;
        if page.is_empty() {
            break;
        }
        cursor = page.last().map(|j| j.id.clone());
        seen.extend(page.into_iter().map(|j| j.id));
    }
    let mut want = ids.clone();
    want.reverse();
    assert_eq!(seen, want, "every job once, newest first");
}

/// The admin's search: payload text matches anywhere in the payload's JSON, ASCII case
/// ignored, with `%` and `_` matching only themselves; the endpoint filter keeps the jobs
/// posting to one endpoint. Both combine with the other filters.
pub async fn job_search_finds_payload_text_and_filters_on_endpoint(s: S) {
    for (id, url) in [
        ("ep_a", "https://a.example/h"),
        ("ep_b", "https://b.example/h"),
    ] {
        let ep = s
            .endpoint_upsert(EndpointUpsert {
                id: id.into(),
                url: url.into(),
                secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
                now: t0(),
            })
            .await
            .unwrap();
        assert_eq!(ep.id, id);
    }
    let insert = |i: i64, payload: serde_json::Value, ep: Option<&str>| {
        let mut j = job(t0() + Duration::minutes(i));
        j.payload = payload;
        j.endpoint_id = ep.map(str::to_string);
        let id = j.id.clone();
        let s = s.clone();
        async move {
            s.job_insert(j).await.unwrap();
            id
        }
    };
    let order = insert(1, serde_json::json!({"order": "ORD-42_x"}), Some("ep_a")).await;
    let other = insert(2, serde_json::json!({"order": "ord-420"}), Some("ep_b")).await;
    let wild = insert(3, serde_json::json!({"note": "50% off"}), None).await;
    let search = |f: JobSearch| {
        let s = s.clone();
        async move {
            let mut ids: Vec<String> = s
                .job_search(f)
                .await
                .unwrap()
                .into_iter()
                .map(|j| j.id)
                .collect();
            ids.sort();
            ids
        }
    };
    let text = |t: &str| JobSearch {
        payload_text: Some(t.into()),
        limit: 100,
        ..Default::default()
    };
    let mut both = vec![order.clone(), other.clone()];
    both.sort();
    assert_eq!(search(text("ord-42")).await, both, "case ignored, anywhere");
    assert_eq!(
        search(text("ORD-42_")).await,
        vec![order.clone()],
        "`_` is itself"
    );
    assert_eq!(
        search(text("ord-42%")).await,
        Vec::<String>::new(),
        "`%` is itself"
    );
    assert_eq!(search(text("50%")).await, vec![wild.clone()]);
    assert_eq!(search(text("nowhere")).await, Vec::<String>::new());
    let ep = search(JobSearch {
        endpoint_id: Some("ep_b".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(ep, vec![other.clone()]);
    let combined = search(JobSearch {
        endpoint_id: Some("ep_a".into()),
        payload_text: Some("ord".into()),
        limit: 100,
        ..Default::default()
    })
    .await;
    assert_eq!(combined, vec![order]);
}

/// Issue 36: an endpoint's deliveries include its recipients' webhook notifications (jobs of
/// the given kinds without an endpoint of their own, naming a recipient whose webhook is the
/// endpoint), and only those: not another kind to the same recipient, not a recipient of
/// another endpoint. Without the kinds, only jobs naming the endpoint are found.
pub async fn job_search_on_an_endpoint_finds_its_recipients_webhook_jobs(s: S) {
    for id in ["ep_r1", "ep_r2"] {
        s.endpoint_upsert(EndpointUpsert {
            id: id.into(),
            url: format!("https://{id}.example/h"),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            now: t0(),
        })
        .await
        .unwrap();
    }
    for (id, ep) in [("rcp_1", "ep_r1"), ("rcp_2", "ep_r2")] {
        s.recipient_upsert(RecipientUpsert {
            id: id.into(),
            email: format!("{id}@example.com"),
            timezone: "UTC".into(),
            locale: None,
            attributes: serde_json::json!({}),
            state: RecipientState::Active,
            endpoint_id: Some(ep.into()),
            now: t0(),
        })
        .await
        .unwrap();
    }
    let insert = |i: i64, kind: &str, rcp: Option<&str>, ep: Option<&str>| {
        let mut j = job(t0() + Duration::minutes(i));
        j.kind = kairos_core::JobKind(kind.into());
        if let Some(r) = rcp {
            j.payload = serde_json::json!({"topic": "orders", "recipient_id": r});
            j.audience = kairos_core::JobAudience::of_payload(&j.payload);
        }
        j.endpoint_id = ep.map(str::to_string);
        let id = j.id.clone();
        let s = s.clone();
        async move {
            s.job_insert(j).await.unwrap();
            id
        }
    };
    let direct = insert(1, "webhook", None, Some("ep_r1")).await;
    let notify = insert(2, "webhook", Some("rcp_1"), None).await;
    let _mail = insert(3, "email", Some("rcp_1"), None).await;
    let _other = insert(4, "webhook", Some("rcp_2"), None).await;
    let search = |kinds: Vec<String>| {
        let s = s.clone();
        async move {
            let mut ids: Vec<String> = s
                .job_search(JobSearch {
                    endpoint_id: Some("ep_r1".into()),
                    recipient_endpoint_kinds: kinds,
                    limit: 50,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_iter()
                .map(|j| j.id)
                .collect();
            ids.sort();
            ids
        }
    };
    let mut want = vec![direct.clone(), notify];
    want.sort();
    assert_eq!(search(vec!["webhook".into()]).await, want);
    assert_eq!(search(Vec::new()).await, vec![direct]);
}
