//! One-click unsubscribe end to end (RFC 8058): a weekly mail goes through the SMTP
//! transport to a real SMTP server (aiosmtpd), the `List-Unsubscribe` URL is taken out of the
//! received message and POSTed as a mail client does (`List-Unsubscribe=One-Click`), and the
//! next week's firing mails the others but not that recipient.

use chrono::{DateTime, Utc};
use kairos_channels::email::unsubscribe::UnsubscribeKey;
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, JobState, ManualClock};
use kairos_engine::handlers::email::EmailConfig;
use kairos_engine::ops::{NewRecipient, NewSchedule, NewSubscription, NewTopic};
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::routes::hooks::InboundConfig;
use kairos_server::{ApiToken, AppState, app};
use kairos_store::{JobList, Store};
use kairos_store_sqlite::SqliteStore;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "unsubscribe-secret-for-the-test-of-32+";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// The `List-Unsubscribe` URL of a raw message (headers unfolded).
fn list_unsubscribe(raw: &str) -> Option<String> {
    let head = raw.split("\r\n\r\n").next()?;
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
    let line = unfolded
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("list-unsubscribe:"))?;
    let (a, b) = (line.find('<')?, line.rfind('>')?);
    Some(line[a + 1..b].replace(' ', ""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_click_from_a_received_mail_stops_next_weeks_mail_for_that_recipient_only() {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().unwrap();
    let Some(sink) = kairos_testkit::smtp::SmtpSink::start(&dir.path().join("sink")).await else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let public_url = format!("http://{}", listener.local_addr().unwrap());
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("kairos.db"))
            .await
            .unwrap(),
    );
    let clock = Arc::new(ManualClock::new(t("2026-11-29T00:00:00Z")));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let transport = EmailTransport::new(TransportConfig::Smtp {
        url: sink.url(),
        timeout: Duration::from_secs(10),
    })
    .unwrap();
    let email = EmailConfig {
        public_url: public_url.clone(),
        unsubscribe_key: UnsubscribeKey::new(SECRET),
        ..Default::default()
    };
    let registry = kairos_engine::handlers::builtin(kairos_engine::KindSettings {
        email: Some((transport, email)),
        ..kairos_engine::KindSettings::new(store.clone(), dyn_clock.clone(), Default::default())
    })
    .expect("built-in kinds");
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        dyn_clock.clone(),
        kinds.clone(),
    )
    .unwrap();
    let kairos = Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds);
    let inbound = InboundConfig::from_config(&kairos_app::config::Config {
        unsubscribe_secret: Some(SECRET.into()),
        ..Default::default()
    })
    .unwrap();
    let router = app(AppState::new(kairos.clone(), ApiToken::new("t")).with_inbound(inbound));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });

    kairos
        .topic_put(
            "weekly",
            NewTopic {
                subject: "Your week {{ period.key }}".into(),
                html: None,
                text: Some("Hello {{ recipient.id }}".into()),
                variants: vec![],
                entitlement_url: None,
                entitlement_timeout_ms: None,
            },
        )
        .await
        .unwrap();
    for i in 0..3 {
        let r: NewRecipient = serde_json::from_value(serde_json::json!({
            "email": format!("user{i}@example.com"), "timezone": "Asia/Tokyo"}))
        .unwrap();
        kairos.recipient_put(&format!("u{i}"), r).await.unwrap();
        kairos
            .subscription_put(
                &format!("u{i}"),
                "weekly",
                NewSubscription {
                    channels: Some(vec!["email".into()]),
                    target: None,
                    targets: None,
                    enabled: Some(true),
                },
            )
            .await
            .unwrap();
    }
    let req: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "weekly-summary", "kind": "email", "topic": "weekly",
        "cron": "0 9 * * 1", "timezone": "Asia/Tokyo", "period": "iso_week"}))
    .unwrap();
    kairos.schedule_create(req).await.unwrap();

    let week = |at: &'static str| {
        let (engine, clock) = (engine.clone(), clock.clone());
        async move {
            let at = t(at);
            clock.set(at);
            engine.scheduler().run_once(at).await.unwrap();
            for _ in 0..100 {
                if engine.executor().run_once(at).await.unwrap().claimed == 0 {
                    return;
                }
            }
            panic!("the executor did not drain");
        }
    };
    // Monday 09:00 in Tokyo: three mails.
    week("2026-11-30T00:00:00Z").await;
    let first = sink.wait_for(3, Duration::from_secs(20)).await;
    assert_eq!(first.len(), 3);
    let mail = first
        .iter()
        .find(|m| m.contains("To: user1@example.com"))
        .expect("user1's mail");
    assert!(
        mail.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
        "{mail}"
    );
    let url = list_unsubscribe(mail).expect("a List-Unsubscribe URL");
    assert!(
        url.starts_with(&format!("{public_url}/unsubscribe?token=")),
        "{url}"
    );

    // What a mail client does (RFC 8058): POST the form to the URL, no redirect followed.
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = http
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::OK);

    // Next Monday: the two others get their mail, user1 does not.
    week("2026-12-07T00:00:00Z").await;
    let all = sink.wait_for(5, Duration::from_secs(20)).await;
    assert_eq!(all.len(), 5);
    let to_user1 = all
        .iter()
        .filter(|m| m.contains("To: user1@example.com"))
        .count();
    assert_eq!(to_user1, 1, "only the first week's mail reached user1");
    let jobs = store
        .job_list(JobList {
            limit: Some(100),
            ..Default::default()
        })
        .await
        .unwrap();
    let w50: Vec<_> = jobs
        .iter()
        .filter(|j| j.period_key.as_deref() == Some("2026-W50"))
        .collect();
    for j in &w50 {
        let is_user1 = j.payload["recipient_id"] == "u1";
        assert_eq!(
            j.state == JobState::Succeeded,
            !is_user1,
            "{:?} {:?}",
            j.payload,
            j.state
        );
    }
    assert_eq!(
        w50.iter()
            .filter(|j| j.state == JobState::Succeeded)
            .count(),
        2
    );
    // The words: next week's firing for that recipient is `skipped`, with the reason.
    let u1: Vec<_> = w50
        .iter()
        .filter(|j| j.payload["recipient_id"] == "u1")
        .collect();
    assert_eq!(u1.len(), 1, "{w50:?}");
    assert_eq!(u1[0].state, JobState::Skipped);
    assert_eq!(u1[0].reason.as_deref(), Some("unsubscribed"));
}
