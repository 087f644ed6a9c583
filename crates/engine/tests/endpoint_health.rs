//! Issue 15 §3 end to end on the manual clock, against the real `TestReceiver`: a rotated
//! endpoint signs with both secrets inside its window and with the new one only after it;
//! health is folded from the attempt log by the endpoint health service; a sustained failure
//! streak disables the endpoint only when configured, raises the `endpoint_disabled` alert,
//! and enabling again resets the streak and resolves the alert.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_channels::{WebhookConfig, WebhookSender};
use kairos_core::Job;
use kairos_engine::EngineConfig;
use kairos_engine::endpoint_health::EndpointHealthConfig;
use kairos_engine::monitor::AlertSink;
use kairos_engine::ops::{NewJob, SecretRotation, WebhookTarget};
use kairos_store::FAILURE_STREAK;
use kairos_testkit::{Reply, TestReceiver, verify_standard_webhook};

const NEW_SECRET: &str = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC";

/// A webhook job to `url` signed with [`SECRET`], dead after one failed attempt.
async fn one_shot(h: &Harness, url: &str) -> Job {
    let (job, _) = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("webhook".into()),
            webhook: Some(WebhookTarget {
                url: url.into(),
                secret: SECRET.into(),
            }),
            payload: Some(serde_json::json!({"n": 1})),
            retry: Some(max_attempts(1)),
            ..Default::default()
        })
        .await
        .expect("enqueue");
    job
}

fn signatures(r: &kairos_testkit::Received) -> Vec<String> {
    r.header("webhook-signature")
        .unwrap_or_default()
        .split(' ')
        .map(str::to_string)
        .collect()
}

/// I15-3c: during the rotation window `webhook-signature` carries the new secret's signature
/// and then the old one's (a receiver holding either verifies it); after the window only the
/// new one, and the old secret no longer verifies.
#[tokio::test]
async fn i15_3c_rotation_signs_with_both_secrets_inside_the_window_and_the_new_one_after() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let first = one_shot(&h, &rx.url("/hook")).await;
    let ep = first.endpoint_id.clone().expect("endpoint");
    let r = h
        .kairos
        .endpoint_rotate(
            &ep,
            SecretRotation {
                secret: Some(NEW_SECRET.into()),
                window_secs: Some(3600),
            },
        )
        .await
        .expect("rotate");
    assert_eq!(r.generated_secret, None);
    assert_eq!(r.endpoint.previous_secret_expires_at, Some(t0 + secs(3600)));

    let inside = t0 + secs(3599);
    assert_eq!(h.exec(inside).await.succeeded, 1);
    let got = rx.last().expect("a request");
    let sigs = signatures(&got);
    assert_eq!(sigs.len(), 2, "{sigs:?}");
    assert!(sigs.iter().all(|s| s.starts_with("v1,")));
    assert!(verify_standard_webhook(
        NEW_SECRET,
        &got,
        inside.timestamp()
    ));
    assert!(verify_standard_webhook(SECRET, &got, inside.timestamp()));
    // The new secret's signature first.
    let mut only_new = got.clone();
    only_new
        .headers
        .insert("webhook-signature".into(), sigs[0].clone());
    assert!(verify_standard_webhook(
        NEW_SECRET,
        &only_new,
        inside.timestamp()
    ));

    // After the window: a job to the rotated endpoint (found by its new pair) is signed by
    // the new secret only.
    let after = t0 + secs(3600);
    h.clock.set(after);
    let (second, _) = h
        .kairos
        .job_enqueue(NewJob {
            kind: Some("webhook".into()),
            webhook: Some(WebhookTarget {
                url: rx.url("/hook"),
                secret: NEW_SECRET.into(),
            }),
            payload: Some(serde_json::json!({"n": 2})),
            ..Default::default()
        })
        .await
        .expect("enqueue");
    assert_eq!(second.endpoint_id.as_deref(), Some(ep.as_str()));
    assert_eq!(h.exec(after).await.succeeded, 1);
    let got = rx.last().expect("a request");
    assert_eq!(signatures(&got).len(), 1);
    assert!(verify_standard_webhook(NEW_SECRET, &got, after.timestamp()));
    assert!(!verify_standard_webhook(SECRET, &got, after.timestamp()));
}

async fn status(h: &Harness, ep: &str) -> kairos_engine::ops::EndpointStatus {
    h.kairos.endpoint_status(ep).await.expect("status")
}

async fn health_run(
    h: &Harness,
    at: DateTime<Utc>,
) -> kairos_engine::endpoint_health::EndpointHealthReport {
    h.clock.set(at);
    h.engine
        .endpoint_health()
        .run_once(at)
        .await
        .expect("endpoint health run")
}

fn auto_disable(failures: u64, after_secs: u64) -> EngineConfig {
    EngineConfig {
        endpoint_health: EndpointHealthConfig {
            disable_after_failures: failures,
            disable_after: std::time::Duration::from_secs(after_secs),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Three failed sends over a few minutes; health is folded in by the service (not by the
/// send), and the endpoint is disabled only with auto-disable configured and only once the
/// streak has lasted long enough.
async fn fail_three_times(h: &Harness, rx: &TestReceiver, t0: DateTime<Utc>) -> String {
    rx.set_default(Reply::status(500));
    let mut ep = String::new();
    for i in 0..3 {
        let at = t0 + mins(i);
        h.clock.set(at);
        let j = one_shot(h, &rx.url("/down")).await;
        ep = j.endpoint_id.expect("endpoint");
        assert_eq!(h.exec(at).await.dead, 1);
    }
    ep
}

/// I15-3a / I15-3b: health from the attempt log, and no auto-disable when it is off (the
/// default), however long the streak.
#[tokio::test]
async fn i15_3a_health_is_folded_from_attempts_and_off_by_default_nothing_is_disabled() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let ep = fail_three_times(&h, &rx, t0).await;
    // Not on the send path: nothing yet.
    let before = status(&h, &ep).await;
    assert_eq!(before.endpoint.health.consecutive_failures, 0);
    assert_eq!(before.attempts_24h, 0);
    let r = health_run(&h, t0 + mins(3)).await;
    assert_eq!(r.attempts, 3);
    let s = status(&h, &ep).await;
    assert_eq!(s.endpoint.health.consecutive_failures, 3);
    assert_eq!(s.endpoint.health.failing_since, Some(t0));
    assert_eq!((s.attempts_24h, s.failures_24h), (3, 3));
    assert_eq!(s.failure_rate_24h(), Some(1.0));

    let r = health_run(&h, t0 + mins(600)).await;
    assert!(r.disabled.is_empty());
    assert_eq!(status(&h, &ep).await.endpoint.disabled_at, None);

    // A success ends the streak.
    rx.set_default(Reply::ok());
    let at = t0 + mins(601);
    h.clock.set(at);
    one_shot(&h, &rx.url("/down")).await;
    assert_eq!(h.exec(at).await.succeeded, 1);
    health_run(&h, at + mins(1)).await;
    let s = status(&h, &ep).await;
    assert_eq!(s.endpoint.health.consecutive_failures, 0);
    assert_eq!(s.endpoint.health.last_success_at, Some(at));
    // Every send of the last 24 h counts.
    assert_eq!((s.attempts_24h, s.failures_24h), (4, 3));
}

/// I15-3b: with auto-disable configured, the streak disables the endpoint (reason
/// `failure_streak`) once it has both the count and the duration; later jobs are skipped
/// without a request; the monitor raises `endpoint_disabled` once, delivered to the alert
/// webhook; enabling again resets the streak and the alert recovers.
#[tokio::test]
async fn i15_3b_failure_streak_disables_the_endpoint_alerts_and_enabling_resets() {
    let rx = TestReceiver::start().await;
    let alerts = TestReceiver::start().await;
    let t0 = t("2026-05-01T09:00:00Z");
    let h = Harness::with_config(t0, auto_disable(3, 600), &[]).await;
    let ep = fail_three_times(&h, &rx, t0).await;

    // Three failures, but the streak is 3 minutes old: not yet.
    let r = health_run(&h, t0 + mins(3)).await;
    assert!(r.disabled.is_empty(), "{r:?}");
    let r = health_run(&h, t0 + mins(10)).await;
    assert_eq!(r.disabled, vec![ep.clone()]);
    let s = status(&h, &ep).await;
    assert_eq!(s.endpoint.disabled_reason.as_deref(), Some(FAILURE_STREAK));
    assert_eq!(s.endpoint.disabled_at, Some(t0 + mins(10)));

    // Later jobs to it are skipped as for a 410-disabled endpoint.
    let sent = rx.count();
    let at = t0 + mins(11);
    h.clock.set(at);
    one_shot(&h, &rx.url("/down")).await;
    assert_eq!(h.exec(at).await.skipped, 1);
    assert_eq!(rx.count(), sent, "no request to a disabled endpoint");

    kairos_testkit::init_crypto();
    let sender = WebhookSender::new(WebhookConfig {
        allow_private_targets: true,
        ..Default::default()
    })
    .expect("sender");
    let sink = AlertSink::new(&alerts.url("/alerts"), SECRET, sender).expect("sink");
    let m = h.engine.monitor().clone().with_alerts(sink);
    let key = format!("endpoint_disabled:{ep}");
    for i in 0..2 {
        let r = m.run_once(t0 + mins(12 + i)).await.expect("monitor");
        let raised = r.alerts.raised.iter().filter(|k| **k == key).count();
        assert_eq!(raised, usize::from(i == 0), "run {i}: {r:?}");
        let c = r
            .slo
            .checks
            .iter()
            .find(|c| c.key() == key)
            .expect("the check result");
        assert!(
            c.message.contains("3 consecutive failed sends"),
            "{}",
            c.message
        );
        assert!(!c.message.contains("127.0.0.1"), "no URL in the alert");
    }
    let warned: Vec<_> = alerts
        .received()
        .into_iter()
        .filter(|r| r.body_text().contains(&key))
        .collect();
    assert_eq!(warned.len(), 1);
    assert!(warned[0].body_text().contains("slo.warning"));

    let e = h.kairos.endpoint_enable(&ep).await.expect("enable");
    assert_eq!(e.disabled_at, None);
    assert_eq!(e.health.consecutive_failures, 0);
    let r = m.run_once(t0 + mins(20)).await.expect("monitor");
    assert_eq!(r.alerts.cleared, vec![key.clone()]);
    assert!(
        alerts
            .received()
            .iter()
            .any(|r| r.body_text().contains(&key) && r.body_text().contains("slo.recovered"))
    );
    // The streak starts over: the next failures alone count.
    let r = health_run(&h, t0 + mins(30)).await;
    assert!(r.disabled.is_empty());
}

/// A batch enqueue stores each distinct webhook target once: three jobs to one receiver and
/// one to another make two endpoint upserts, and the three share their endpoint.
#[tokio::test]
async fn batch_enqueue_stores_each_endpoint_once() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let (_dir, sqlite) = open_store().await;
    let counting = CountingStore::new(sqlite);
    let store: Arc<dyn kairos_store::Store> = counting.clone();
    let clock = Arc::new(kairos_core::ManualClock::new(t("2026-10-01T06:00:00Z")));
    let kinds = Arc::new(registry_with(&store, clock.clone(), &[]));
    let kairos = kairos_engine::Kairos::new(store, clock, Default::default(), kinds)
        .allow_private_targets(true);
    let to = |url: &str, n: i64| NewJob {
        kind: Some("webhook".into()),
        webhook: Some(WebhookTarget {
            url: url.into(),
            secret: SECRET.into(),
        }),
        payload: Some(serde_json::json!({"n": n})),
        ..Default::default()
    };
    let made = kairos
        .job_enqueue_many(vec![
            to("http://127.0.0.1:9/a", 0),
            to("http://127.0.0.1:9/a", 1),
            to("http://127.0.0.1:9/b", 2),
            to("http://127.0.0.1:9/a", 3),
        ])
        .await
        .expect("batch");
    assert_eq!(made.len(), 4);
    assert!(made.iter().all(|(_, created)| *created));
    assert_eq!(counting.endpoint_upserts.load(Ordering::SeqCst), 2);
    let ids: Vec<Option<String>> = made.iter().map(|(j, _)| j.endpoint_id.clone()).collect();
    assert!(ids.iter().all(Option::is_some), "{ids:?}");
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0], ids[3]);
    assert_ne!(ids[0], ids[2]);
}
