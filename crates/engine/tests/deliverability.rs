//! Deliverability checks on a real SQLite file and a manual clock: mails sent by the
//! executor with a provider message id, provider events received through the inbound path
//! (classified and attributed to the job by that id), and the monitor's `bounce_rate`,
//! `complaint_rate` and `inbound_unknown` checks over them.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_core::{JobState, Outcome};
use kairos_engine::monitor::{CheckResult, CheckStatus, Monitor, MonitorConfig, SloReport, names};
use serde_json::json;
use std::sync::Arc;

/// A stand-in for the mail transport: every `email` job is accepted by the provider, whose
/// message id is the payload's `pid`.
fn provider() -> Arc<TestHandler> {
    TestHandler::new(|job, _| Outcome::Delivered {
        provider_id: job.payload["pid"].as_str().map(str::to_string),
        status_code: Some(200),
        response: None,
    })
}

async fn harness(t0: DateTime<Utc>) -> Harness {
    Harness::new(t0, &[("email", provider())]).await
}

/// Send mails `from..to` of `topic` at `at` (provider ids `{topic}-{i}`), through the
/// executor until none is due.
async fn send(h: &Harness, topic: &str, from: usize, to: usize, at: DateTime<Utc>) {
    for i in from..to {
        h.enqueue(
            "email",
            json!({"topic": topic, "recipient_id": format!("r{i}"), "pid": format!("{topic}-{i}")}),
            Some(at),
            None,
        )
        .await;
    }
    for _ in 0..100 {
        if h.count_in_state(JobState::Available).await == 0 {
            break;
        }
        h.exec(at).await;
    }
    assert_eq!(h.count_in_state(JobState::Available).await, 0, "all sent");
}

/// Receive a Resend-style event `id` about message `pid` at `at`.
async fn receive(h: &Harness, id: &str, body: serde_json::Value, at: DateTime<Utc>) {
    h.clock.set(at);
    h.kairos
        .inbound_receive("resend", id, body.to_string().as_bytes())
        .await
        .expect("inbound event");
}

fn bounce(pid: &str) -> serde_json::Value {
    json!({"type": "email.bounced", "data": {"email_id": pid, "to": [format!("{pid}@example.com")],
        "bounce": {"type": "Permanent", "subType": "General"}}})
}

fn complaint(pid: &str) -> serde_json::Value {
    json!({"type": "email.complained", "data": {"email_id": pid, "to": [format!("{pid}@example.com")]}})
}

fn find<'a>(r: &'a SloReport, check: &str, subject: Option<&str>) -> &'a CheckResult {
    r.checks
        .iter()
        .find(|c| c.check == check && c.subject.as_deref() == subject)
        .unwrap_or_else(|| panic!("no {check} {subject:?} in {r:#?}"))
}

fn monitor(h: &Harness) -> Monitor {
    Monitor::new(MonitorConfig::default(), h.store.clone()).expect("monitor config")
}

async fn alert_active(h: &Harness, key: &str) -> bool {
    h.store
        .slo_alert_list()
        .await
        .unwrap()
        .iter()
        .any(|a| a.key == key && a.active)
}

/// Seed 003's warning — bounces pile up quietly until mail stops arriving — made visible
/// (S3-9, S3-17): 11 permanent bounces of 200 mails sent (5.5 %) is a `bounce_rate`
/// warning for that topic, raised as an alert; a topic under 200 mails sent is
/// insufficient data whatever its rate; 40 more good sends bring the rate to 4.6 % and the
/// alert recovers on the next pass.
#[tokio::test]
async fn bounce_rate_over_five_percent_of_200_sent_warns_and_recovers_when_it_falls_s3_17() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = harness(t0).await;
    send(&h, "weekly", 0, 200, t0).await;
    send(&h, "daily", 0, 100, t0).await;
    for i in 0..11 {
        receive(
            &h,
            &format!("b-w{i}"),
            bounce(&format!("weekly-{i}")),
            t0 + mins(5),
        )
        .await;
    }
    for i in 0..50 {
        receive(
            &h,
            &format!("b-d{i}"),
            bounce(&format!("daily-{i}")),
            t0 + mins(5),
        )
        .await;
    }
    let m = monitor(&h);
    let run = m.run_once(t0 + mins(10)).await.unwrap();
    let weekly = find(&run.slo, names::BOUNCE_RATE, Some("weekly"));
    assert_eq!(weekly.status, CheckStatus::Warning, "{weekly:?}");
    assert_eq!(weekly.sample, Some(200));
    assert_eq!(weekly.value, Some(0.055));
    assert_eq!(weekly.threshold, Some(0.05));
    assert!(weekly.message.contains("11 of 200"), "{}", weekly.message);
    let daily = find(&run.slo, names::BOUNCE_RATE, Some("daily"));
    assert_eq!(daily.status, CheckStatus::InsufficientData, "{daily:?}");
    assert!(alert_active(&h, "bounce_rate:weekly").await);
    assert!(!alert_active(&h, "bounce_rate:daily").await);
    // No complaint: the complaint rate of the same mails is fine.
    let c = find(&run.slo, names::COMPLAINT_RATE, Some("weekly"));
    assert_eq!(c.status, CheckStatus::Ok);

    send(&h, "weekly", 200, 240, t0 + mins(20)).await;
    let run = m.run_once(t0 + mins(30)).await.unwrap();
    let weekly = find(&run.slo, names::BOUNCE_RATE, Some("weekly"));
    assert_eq!(weekly.status, CheckStatus::Ok, "{weekly:?}");
    assert_eq!(weekly.sample, Some(240));
    assert!(
        run.alerts
            .cleared
            .contains(&"bounce_rate:weekly".to_string())
    );
    assert!(!alert_active(&h, "bounce_rate:weekly").await);

    // Seven days later the window holds no mail: insufficient data, no warning.
    let r = m.evaluate(t0 + mins(30) + secs(7 * 86_400)).await.unwrap();
    assert_eq!(
        find(&r, names::BOUNCE_RATE, None).status,
        CheckStatus::InsufficientData
    );
}

/// Complaints at 0.3 % (S3-9, S3-17): one complaint among 200 mails (0.5 %) warns; below
/// 200 mails the same share is insufficient data; 140 more sends (1 of 340, 0.29 %) clear it.
#[tokio::test]
async fn complaint_rate_over_point_three_percent_warns_and_recovers_when_it_falls_s3_17() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = harness(t0).await;
    send(&h, "weekly", 0, 199, t0).await;
    receive(&h, "c-1", complaint("weekly-7"), t0 + mins(5)).await;
    let m = monitor(&h);
    let r = m.evaluate(t0 + mins(10)).await.unwrap();
    let c = find(&r, names::COMPLAINT_RATE, Some("weekly"));
    assert_eq!(c.status, CheckStatus::InsufficientData, "199 sent: {c:?}");

    send(&h, "weekly", 199, 200, t0 + mins(11)).await;
    let run = m.run_once(t0 + mins(12)).await.unwrap();
    let c = find(&run.slo, names::COMPLAINT_RATE, Some("weekly"));
    assert_eq!(c.status, CheckStatus::Warning, "{c:?}");
    assert_eq!(c.value, Some(0.005));
    assert!(alert_active(&h, "complaint_rate:weekly").await);
    // The complaint is not a bounce.
    let b = find(&run.slo, names::BOUNCE_RATE, Some("weekly"));
    assert_eq!(b.status, CheckStatus::Ok, "{b:?}");

    send(&h, "weekly", 200, 340, t0 + mins(20)).await;
    let run = m.run_once(t0 + mins(30)).await.unwrap();
    let c = find(&run.slo, names::COMPLAINT_RATE, Some("weekly"));
    assert_eq!(c.status, CheckStatus::Ok, "{c:?}");
    assert!(!alert_active(&h, "complaint_rate:weekly").await);
}

/// A pass reads the mails sent from the sampler's quarter-hour topic counts, and counts from
/// the job table only what they do not cover: the window's start up to its first quarter, the
/// quarters not counted yet, and the quarter in progress. Mails in a gap or in the current
/// quarter count once, and the result is the one a count of the whole window gives.
#[tokio::test]
async fn bounce_rate_sums_the_counted_quarters_and_reads_only_the_rest_of_the_window() {
    let t0 = t("2026-11-29T08:00:00Z");
    let mut cfg = kairos_engine::EngineConfig::default();
    cfg.monitor.deliverability_window = std::time::Duration::from_secs(2 * 3600);
    let h = Harness::with_config(t0, cfg.clone(), &[("email", provider())]).await;
    // 30 mails at 08:20 (a quarter the first sampler run leaves uncounted), 170 at 09:01,
    // 11 of them bounced, and 40 at 10:05 (the quarter in progress at 10:10).
    send(&h, "weekly", 0, 30, t0 + mins(20)).await;
    send(&h, "weekly", 30, 200, t0 + mins(61)).await;
    for i in 0..11 {
        let pid = format!("weekly-{}", i * 3);
        receive(&h, &format!("b-{i}"), bounce(&pid), t0 + mins(65)).await;
    }
    send(&h, "weekly", 200, 240, t0 + mins(125)).await;
    let now = t0 + mins(130);
    let r = h.engine.sampler().run_once(now).await.unwrap();
    assert_eq!(r.quarters, 5, "09:45, then 09:30 back to 08:45");

    let counting = CountingStore::new(h.store.clone());
    let m = Monitor::new(cfg.monitor.clone(), counting.clone())
        .expect("monitor config")
        .with_kinds(h.engine.kinds());
    let expect = |r: &SloReport| {
        let b = find(r, names::BOUNCE_RATE, Some("weekly"));
        assert_eq!(b.status, CheckStatus::Ok, "{b:?}");
        assert_eq!(b.sample, Some(240), "every mail once: {b:?}");
        assert_eq!(b.value, Some(11.0 / 240.0));
    };
    expect(&m.evaluate(now).await.unwrap());
    let until = now + ms(1);
    assert_eq!(
        std::mem::take(&mut *counting.topic_ranges.lock().unwrap()),
        vec![(now - mins(120), t0 + mins(45)), (t0 + mins(120), until)],
        "the window's start and the uncounted 08:00-08:45, and the quarter in progress"
    );

    let r = h.engine.sampler().run_once(now + secs(10)).await.unwrap();
    assert_eq!(
        r.quarters, 4,
        "the gaps 08:30, 08:15, 08:00, and 07:45 of the skip rate's day"
    );
    expect(&m.evaluate(now).await.unwrap());
    assert_eq!(
        std::mem::take(&mut *counting.topic_ranges.lock().unwrap()),
        vec![(now - mins(120), t0 + mins(15)), (t0 + mins(120), until)],
        "five minutes before the first quarter, and the quarter in progress"
    );
    // A bounce recorded after its quarter was counted is added to it.
    receive(&h, "b-late", bounce("weekly-100"), now).await;
    let r = m.evaluate(now).await.unwrap();
    let b = find(&r, names::BOUNCE_RATE, Some("weekly"));
    assert_eq!(b.value, Some(12.0 / 240.0), "{b:?}");
    // The mails at 08:20 leave the window: counted in their quarter no more.
    let later = t0 + mins(160);
    let r = m.evaluate(later).await.unwrap();
    assert_eq!(
        find(&r, names::BOUNCE_RATE, Some("weekly")).sample,
        Some(210)
    );
}

/// An event kairos stores without acting on — an unknown type, no type at all, a bounce
/// without a bounce type (its address is not suppressed) — is an `inbound_unknown` warning
/// for its source naming the types and counts; events kairos acts on are not. Once the
/// window (24 h) holds none, the check is Ok again.
#[tokio::test]
async fn unknown_and_untyped_inbound_events_warn_until_none_arrive_in_the_window_s3_9() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = harness(t0).await;
    let m = monitor(&h);
    let r = m.evaluate(t0).await.unwrap();
    assert_eq!(
        find(&r, names::INBOUND_UNKNOWN, None).status,
        CheckStatus::Ok
    );

    receive(&h, "ok-1", bounce("x-1"), t0).await;
    receive(
        &h,
        "u-1",
        json!({"type": "contact.updated", "data": {}}),
        t0,
    )
    .await;
    receive(
        &h,
        "u-2",
        json!({"type": "contact.updated", "data": {}}),
        t0,
    )
    .await;
    receive(&h, "u-3", json!({"data": {"email_id": "x-2"}}), t0).await;
    receive(
        &h,
        "u-4",
        json!({"type": "email.bounced", "data": {"email_id": "x-3", "to": ["a@example.com"]}}),
        t0,
    )
    .await;
    let run = m.run_once(t0 + mins(1)).await.unwrap();
    let u = find(&run.slo, names::INBOUND_UNKNOWN, Some("resend"));
    assert_eq!(u.status, CheckStatus::Warning, "{u:?}");
    assert_eq!(u.sample, Some(4));
    for part in [
        "\"contact.updated\" × 2",
        "\"email.bounced\" × 1",
        "no type × 1",
    ] {
        assert!(u.message.contains(part), "{part} in {}", u.message);
    }
    assert!(alert_active(&h, "inbound_unknown:resend").await);

    let run = m.run_once(t0 + mins(2) + secs(86_400)).await.unwrap();
    assert_eq!(
        find(&run.slo, names::INBOUND_UNKNOWN, None).status,
        CheckStatus::Ok
    );
    assert!(!alert_active(&h, "inbound_unknown:resend").await);
}

/// A rate above 1 or below 0, a zero window or a zero minimum is refused, naming the field.
#[test]
fn deliverability_settings_are_validated_by_field() {
    for (cfg, field) in [
        (
            MonitorConfig {
                bounce_rate: 1.5,
                ..Default::default()
            },
            "monitor.bounce_rate",
        ),
        (
            MonitorConfig {
                complaint_rate: -0.1,
                ..Default::default()
            },
            "monitor.complaint_rate",
        ),
        (
            MonitorConfig {
                deliverability_window: std::time::Duration::ZERO,
                ..Default::default()
            },
            "monitor.deliverability_window",
        ),
        (
            MonitorConfig {
                deliverability_min_sent: 0,
                ..Default::default()
            },
            "monitor.deliverability_min_sent",
        ),
        (
            MonitorConfig {
                inbound_unknown_window: std::time::Duration::ZERO,
                ..Default::default()
            },
            "monitor.inbound_unknown_window",
        ),
    ] {
        assert_eq!(cfg.validate().unwrap_err().field(), field);
    }
}
