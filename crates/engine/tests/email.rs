//! Weekly-summary email end to end on a manual clock: audience schedules expanded
//! into one job per subscriber, sent through the file transport, entitlement at send
//! time, unsubscribe headers, A/B exposures.

mod common;

use chrono::{DateTime, Utc};
use common::{open_store, registry_with, t};
use kairos_channels::email::unsubscribe::{UnsubscribeKey, verify};
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, JobState, ManualClock};
use kairos_engine::audience::{Expander, ExpanderConfig};
use kairos_engine::handlers::email::{EmailConfig, EmailHandler};
use kairos_engine::ops::{NewRecipient, NewSchedule, NewSubscription, NewTopic, NewVariant};
use kairos_engine::{Engine, EngineConfig, Handler, Kairos};
use kairos_store::{JobList, Store, SubscriptionList};
use std::path::PathBuf;
use std::sync::Arc;
use tempfile::TempDir;

struct World {
    _dir: TempDir,
    outbox: PathBuf,
    store: Arc<dyn Store>,
    clock: Arc<ManualClock>,
    engine: Engine,
    kairos: Kairos,
}

async fn world(start: DateTime<Utc>, secret: Option<&str>) -> World {
    world_with(start, secret, None).await
}

/// A world sending through `smtp_url` instead of the file outbox.
async fn world_with(start: DateTime<Utc>, secret: Option<&str>, smtp_url: Option<String>) -> World {
    world_full(start, secret, smtp_url, true).await
}

/// A world; `allow_private` is `KAIROS_ALLOW_PRIVATE_TARGETS` for the API and the handler.
async fn world_full(
    start: DateTime<Utc>,
    secret: Option<&str>,
    smtp_url: Option<String>,
    allow_private: bool,
) -> World {
    let (dir, store) = open_store().await;
    let outbox = dir.path().join("outbox");
    let clock = Arc::new(ManualClock::new(start));
    let transport = EmailTransport::new(match smtp_url {
        Some(url) => TransportConfig::Smtp {
            url,
            timeout: std::time::Duration::from_secs(10),
        },
        None => TransportConfig::File {
            dir: outbox.clone(),
        },
    })
    .unwrap();
    let cfg = EmailConfig {
        from: "Weekly <weekly@kairos.test>".into(),
        public_url: "https://kairos.test".into(),
        unsubscribe_key: secret.and_then(UnsubscribeKey::new),
        settings_url: Some("https://app.test/settings".into()),
        allow_private_targets: allow_private,
        ..Default::default()
    };
    let email: Arc<dyn Handler> =
        Arc::new(EmailHandler::new(store.clone(), transport, cfg).unwrap());
    let registry = registry_with(&store, clock.clone(), &[("email", email)]);
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        clock.clone(),
        kinds.clone(),
    )
    .unwrap();
    let kairos = Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds)
        .allow_private_targets(allow_private);
    World {
        _dir: dir,
        outbox,
        store,
        clock,
        engine,
        kairos,
    }
}

impl World {
    async fn audience(&self, n: usize, variants: Vec<NewVariant>) {
        self.kairos
            .topic_put(
                "weekly",
                NewTopic {
                    subject: "Your week {{ period.key }}, {{ recipient.attributes.name }}".into(),
                    html: Some("<p>Hello {{ recipient.attributes.name }}</p><a href=\"{{ unsubscribe_url }}\">unsubscribe</a>".into()),
                    text: Some("Hello {{ recipient.attributes.name }} about {{ target }}".into()),
                    variants,
                    entitlement_url: None,
                    entitlement_timeout_ms: None,
                },
            )
            .await
            .unwrap();
        let rs: Vec<NewRecipient> = (0..n)
            .map(|i| NewRecipient {
                id: Some(format!("u{i:05}")),
                email: format!("user{i}@example.com"),
                webhook: None,
                timezone: Some("Asia/Tokyo".into()),
                locale: None,
                attributes: Some(serde_json::json!({"name": format!("User {i}")})),
                state: None,
            })
            .collect();
        self.kairos.recipient_put_many(rs).await.unwrap();
        for i in 0..n {
            self.kairos
                .subscription_put(
                    &format!("u{i:05}"),
                    "weekly",
                    NewSubscription {
                        channels: Some(vec!["email".into()]),
                        target: Some(format!("team{}", i % 7)),
                        targets: None,
                        enabled: Some(true),
                    },
                )
                .await
                .unwrap();
        }
    }

    async fn weekly_schedule(&self, cron: &str) -> kairos_store::Schedule {
        let req: NewSchedule = serde_json::from_value(serde_json::json!({
            "name": "weekly-summary", "kind": "email", "topic": "weekly",
            "cron": cron, "timezone": "Asia/Tokyo", "period": "iso_week"
        }))
        .unwrap();
        self.kairos.schedule_create(req).await.unwrap()
    }

    /// Run the scheduler at `at`.
    async fn sched(&self, at: DateTime<Utc>) -> kairos_engine::scheduler::SchedulerReport {
        self.clock.set(at);
        self.engine.scheduler().run_once(at).await.unwrap()
    }

    /// Run the executor at `at` until nothing is due (bounded).
    async fn drain(&self, at: DateTime<Utc>) {
        self.clock.set(at);
        for _ in 0..100 {
            let r = self.engine.executor().run_once(at).await.unwrap();
            if r.claimed == 0 {
                return;
            }
        }
        panic!("the executor did not drain in 100 runs");
    }

    async fn jobs(&self) -> Vec<kairos_core::Job> {
        self.store
            .job_list(JobList {
                limit: Some(10_000),
                ..Default::default()
            })
            .await
            .unwrap()
    }

    fn mails(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.outbox) else {
            return vec![];
        };
        let mut v: Vec<String> = dir
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect();
        v.sort();
        v
    }
}

fn header<'a>(mail: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}: ");
    mail.lines().find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// Monday 09:00 in Tokyo, 2026-11-30 (= 00:00Z).
const MONDAY_9_TOKYO: &str = "2026-11-30T00:00:00Z";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weekly_tokyo_schedule_fired_twice_sends_exactly_one_mail_per_subscriber() {
    let w = world(t("2026-11-29T00:00:00Z"), None).await;
    w.audience(1000, vec![]).await;
    let s = w.weekly_schedule("0 9 * * 1").await;
    assert_eq!(s.next_fire_at, Some(t(MONDAY_9_TOKYO)));
    // The clock fires; the same instant again (a double-fired clock) finds nothing due.
    let first = w.sched(t(MONDAY_9_TOKYO)).await;
    assert_eq!(first.jobs_created, 1000, "{first:?}");
    let again = w.sched(t(MONDAY_9_TOKYO)).await;
    assert_eq!(again.jobs_created, 0);
    // A manual re-run of the same week creates nothing and says so.
    w.clock.set(t("2026-11-30T00:05:00Z"));
    let rerun = w.kairos.schedule_fire_now(&s.id).await.unwrap();
    assert_eq!(rerun.created.len(), 0);
    assert_eq!(rerun.period_key, "2026-W49");
    w.drain(t("2026-11-30T00:06:00Z")).await;
    let jobs = w.jobs().await;
    assert_eq!(jobs.len(), 1000);
    assert!(
        jobs.iter().all(|j| j.state == JobState::Succeeded),
        "all sent"
    );
    let mails = w.mails();
    assert_eq!(mails.len(), 1000, "exactly one mail per subscriber");
    let m = mails
        .iter()
        .find(|m| m.contains("To: user7@example.com"))
        .unwrap();
    assert_eq!(header(m, "Subject"), Some("Your week 2026-W49, User 7"));
    assert!(m.contains("Hello User 7 about team0"));
    // Without the unsubscribe secret the mail links to the settings page.
    assert_eq!(
        header(m, "List-Unsubscribe"),
        Some("<https://app.test/settings>")
    );
    assert!(header(m, "List-Unsubscribe-Post").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monday_0030_tokyo_belongs_to_the_tokyo_iso_week_not_the_utc_one() {
    let w = world(t("2026-11-28T00:00:00Z"), None).await;
    w.audience(3, vec![]).await;
    // Monday 2026-11-30 00:30 in Tokyo is Sunday 2026-11-29 15:30Z: ISO week 48 in UTC, 49 in
    // Tokyo.
    let s = w.weekly_schedule("30 0 * * 1").await;
    assert_eq!(s.next_fire_at, Some(t("2026-11-29T15:30:00Z")));
    w.sched(t("2026-11-29T15:30:00Z")).await;
    let jobs = w.jobs().await;
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        assert_eq!(j.period_key.as_deref(), Some("2026-W49"), "{j:?}");
        assert!(j.dedupe_key.as_deref().unwrap().contains("2026-W49"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipient_unsubscribed_between_firing_and_sending_is_skipped_not_failed() {
    let w = world(t("2026-11-29T00:00:00Z"), None).await;
    w.audience(4, vec![]).await;
    let s = w.weekly_schedule("0 9 * * 1").await;
    w.sched(t(MONDAY_9_TOKYO)).await;
    // Between firing and sending: one unsubscribes, one is suppressed, one disabled.
    w.kairos
        .subscription_put(
            "u00001",
            "weekly",
            NewSubscription {
                channels: None,
                target: None,
                targets: None,
                enabled: Some(false),
            },
        )
        .await
        .unwrap();
    w.store
        .suppression_add(kairos_store::SuppressionAdd {
            address: "USER2@example.com".into(),
            reason: "complaint".into(),
            source_event_id: None,
            now: w.clock.now(),
        })
        .await
        .unwrap();
    let mut r3: NewRecipient = serde_json::from_value(serde_json::json!({
        "email": "user3@example.com", "state": "disabled"}))
    .unwrap();
    r3.timezone = Some("Asia/Tokyo".into());
    w.kairos.recipient_put("u00003", r3).await.unwrap();
    w.drain(t(MONDAY_9_TOKYO)).await;
    let mut by_rcpt: Vec<(String, JobState, Option<String>)> = w
        .jobs()
        .await
        .into_iter()
        .map(|j| {
            (
                j.payload["recipient_id"].as_str().unwrap().to_string(),
                j.state,
                j.reason,
            )
        })
        .collect();
    by_rcpt.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        by_rcpt,
        vec![
            ("u00000".into(), JobState::Succeeded, None),
            (
                "u00001".into(),
                JobState::Skipped,
                Some("unsubscribed".into())
            ),
            (
                "u00002".into(),
                JobState::Skipped,
                Some("suppressed".into())
            ),
            (
                "u00003".into(),
                JobState::Skipped,
                Some("recipient_inactive".into())
            ),
        ]
    );
    assert_eq!(w.mails().len(), 1);
    let _ = s;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expansion_interrupted_half_way_resumes_and_duplicates_nothing() {
    let w = world(t("2026-11-29T00:00:00Z"), None).await;
    w.audience(2500, vec![]).await;
    let s = w.weekly_schedule("0 9 * * 1").await;
    // The firing is recorded and one page expanded; then the node "crashes" (nothing more runs
    // on this expander).
    let tz = chrono_tz::Asia::Tokyo;
    kairos_engine::audience::begin(
        w.store.as_ref(),
        &s,
        tz,
        t(MONDAY_9_TOKYO),
        t(MONDAY_9_TOKYO),
    )
    .await
    .unwrap();
    let one_page = Expander::new(
        ExpanderConfig {
            page: 1000,
            pages_per_tick: 1,
        },
        w.store.clone(),
    )
    .unwrap();
    let r = one_page.run_once(t(MONDAY_9_TOKYO)).await.unwrap();
    assert_eq!((r.jobs_created, r.more), (1000, true));
    assert_eq!(w.jobs().await.len(), 1000);
    // The next scheduler tick (the regular firing of the same week, after the restart)
    // resumes after the last committed page.
    let tick = w.sched(t(MONDAY_9_TOKYO)).await;
    assert_eq!(tick.jobs_created, 1500, "{tick:?}");
    let e = w
        .store
        .expansion_get(&s.id, "2026-W49")
        .await
        .unwrap()
        .unwrap();
    assert!(e.done);
    assert_eq!(e.created, 2500);
    // A manual re-run and another tick create nothing.
    assert!(
        w.kairos
            .schedule_fire_now(&s.id)
            .await
            .unwrap()
            .created
            .is_empty()
    );
    assert_eq!(w.sched(t("2026-11-30T00:00:01Z")).await.jobs_created, 0);
    let jobs = w.jobs().await;
    assert_eq!(jobs.len(), 2500);
    let keys: std::collections::HashSet<_> = jobs.iter().map(|j| j.dedupe_key.clone()).collect();
    assert_eq!(keys.len(), 2500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variant_exposures_equal_successful_sends_and_travel_as_tags() {
    let w = world(t("2026-11-29T00:00:00Z"), Some("unsub-secret")).await;
    let v = |name: &str, weight, subject: &str| NewVariant {
        name: name.into(),
        weight: Some(weight),
        subject: Some(subject.into()),
        html: None,
        text: None,
    };
    w.audience(
        200,
        vec![
            v("a", 1, "A: {{ period.key }}"),
            v("b", 1, "B: {{ period.key }}"),
        ],
    )
    .await;
    w.weekly_schedule("0 9 * * 1").await;
    w.sched(t(MONDAY_9_TOKYO)).await;
    // Ten recipients are suppressed before sending: their jobs are skipped, not exposed.
    for i in 0..10 {
        w.store
            .suppression_add(kairos_store::SuppressionAdd {
                address: format!("user{i}@example.com"),
                reason: "hard_bounce".into(),
                source_event_id: None,
                now: w.clock.now(),
            })
            .await
            .unwrap();
    }
    w.drain(t(MONDAY_9_TOKYO)).await;
    let jobs = w.jobs().await;
    let sent = |v: &str| {
        jobs.iter()
            .filter(|j| j.state == JobState::Succeeded && j.payload["variant"] == v)
            .count() as i64
    };
    let exposures = w.store.exposure_counts("weekly").await.unwrap();
    assert_eq!(exposures.len(), 2);
    for e in &exposures {
        assert_eq!(e.count, sent(&e.variant), "{e:?}");
        assert!(e.count > 50, "both variants are assigned: {exposures:?}");
    }
    assert_eq!(exposures.iter().map(|e| e.count).sum::<i64>(), 190);
    let mails = w.mails();
    assert_eq!(mails.len(), 190);
    for m in &mails {
        let subject = header(m, "Subject").unwrap();
        let tags = header(m, "X-Kairos-Tags").unwrap();
        let variant = if subject.starts_with("A:") { "a" } else { "b" };
        assert_eq!(tags, format!("topic=weekly, variant={variant}"));
        // One-click unsubscribe with a token that verifies to this recipient.
        let lu = header(m, "List-Unsubscribe").unwrap();
        let token = lu
            .strip_prefix("<https://kairos.test/unsubscribe?token=")
            .and_then(|x| x.strip_suffix('>'))
            .unwrap();
        let (rcpt, topic) = verify(&[UnsubscribeKey::new("unsub-secret").unwrap()], token).unwrap();
        assert_eq!(topic, "weekly");
        assert!(rcpt.starts_with('u'));
        assert_eq!(
            header(m, "List-Unsubscribe-Post"),
            Some("List-Unsubscribe=One-Click")
        );
    }
    // Deterministic per (recipient, period): the jobs' variants are what a re-run assigns.
    let topic = w.store.topic_get("weekly").await.unwrap().unwrap();
    for j in &jobs {
        let r = j.payload["recipient_id"].as_str().unwrap();
        let again = kairos_engine::audience::pick_variant(&topic.variants, r, "2026-W49");
        assert_eq!(j.payload["variant"].as_str(), again.as_deref());
    }
}

/// Everything kairos logs in this test binary (installed once, as the global subscriber).
fn captured_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let buf: Arc<std::sync::Mutex<Vec<u8>>> = Arc::default();
        struct W(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for W {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let b = buf.clone();
        let sub = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "info,kairos_engine=trace,kairos_channels=trace,kairos_store=trace,kairos_store_sqlite=trace",
            ))
            .with_writer(move || W(b.clone()))
            .finish();
        tracing::subscriber::set_global_default(sub).expect("one global subscriber");
        buf
    })
    .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_job_row_attempt_or_log_line_contains_a_recipients_address() {
    let logs = captured_logs();
    let w = world(t("2026-11-29T00:00:00Z"), Some("unsub-secret")).await;
    w.audience(30, vec![]).await;
    // Failures and skips log too: a template that needs a missing attribute, a suppression.
    let mut broken: NewRecipient = serde_json::from_value(serde_json::json!({
        "email": "user5@example.com", "attributes": {}}))
    .unwrap();
    broken.timezone = Some("UTC".into());
    w.kairos.recipient_put("u00005", broken).await.unwrap();
    w.store
        .suppression_add(kairos_store::SuppressionAdd {
            address: "user6@example.com".into(),
            reason: "complaint".into(),
            source_event_id: None,
            now: w.clock.now(),
        })
        .await
        .unwrap();
    let s = w.weekly_schedule("0 9 * * 1").await;
    w.sched(t(MONDAY_9_TOKYO)).await;
    w.drain(t(MONDAY_9_TOKYO)).await;
    let jobs = w.jobs().await;
    assert_eq!(jobs.len(), 30);
    let broken_job = jobs
        .iter()
        .find(|j| j.payload["recipient_id"] == "u00005")
        .unwrap();
    assert_ne!(
        broken_job.state,
        JobState::Succeeded,
        "a missing variable is not sent blank"
    );
    assert!(
        broken_job
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("undefined"),
        "{broken_job:?}"
    );
    // The error names the recipient (its id, never the address) and the variable.
    let error = broken_job.last_error.as_deref().unwrap_or("");
    assert!(error.starts_with("recipient u00005: "), "{error}");
    assert!(
        error.contains("undefined variable `recipient.attributes."),
        "{error}"
    );
    assert_eq!(w.mails().len(), 28);
    for j in &jobs {
        let row = serde_json::to_string(j).unwrap();
        assert!(
            !row.contains("@example.com"),
            "a job row holds an address: {row}"
        );
        for a in w.store.attempt_list(&j.id).await.unwrap() {
            let a = serde_json::to_string(&a).unwrap();
            assert!(
                !a.contains("@example.com"),
                "an attempt holds an address: {a}"
            );
        }
    }
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("job_"),
        "the capture works: {} bytes",
        text.len()
    );
    assert!(
        !text.contains("@example.com"),
        "a log line holds an address"
    );
    let _ = s;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entitlement_url_is_asked_at_send_time_with_its_own_timeout() {
    use kairos_testkit::{Reply, TestReceiver};
    let w = world(t("2026-11-29T00:00:00Z"), None).await;
    w.audience(1, vec![]).await;
    let rx = TestReceiver::start().await;
    let mut topic: NewTopic = serde_json::from_value(serde_json::json!({
        "subject": "Hi", "text": "Hello {{ recipient.id }}",
        "entitlement_url": rx.url("/entitled"), "entitlement_timeout_ms": 300}))
    .unwrap();
    topic.variants = vec![];
    w.kairos.topic_put("weekly", topic).await.unwrap();
    let mut n = 0;
    let mut run = |reply: Reply| {
        n += 1;
        let key = format!("ent-{n}");
        let w = &w;
        let rx = &rx;
        async move {
            rx.respond_with(vec![reply]);
            let (job, _) = w
                .kairos
                .job_enqueue(kairos_engine::ops::NewJob {
                    kind: Some("email".into()),
                    payload: Some(serde_json::json!({"topic": "weekly", "recipient_id": "u00000"})),
                    idempotency_key: Some(key),
                    ..Default::default()
                })
                .await
                .unwrap();
            w.engine.executor().run_once(w.clock.now()).await.unwrap();
            w.store.job_get(&job.id).await.unwrap().unwrap()
        }
    };
    let no = run(Reply::ok().with_body(r#"{"entitled": false}"#)).await;
    assert_eq!(
        (no.state, no.reason.as_deref()),
        (JobState::Skipped, Some("not_entitled"))
    );
    let gone = run(Reply::status(403)).await;
    assert_eq!(
        (gone.state, gone.reason.as_deref()),
        (JobState::Skipped, Some("not_entitled"))
    );
    // No answer within the topic's 300 ms: a transient failure, retried later, not sent.
    let slow = run(Reply::ok().with_delay(std::time::Duration::from_secs(3))).await;
    assert_eq!(slow.state, JobState::Available, "{slow:?}");
    assert!(
        slow.last_error.as_deref().unwrap().contains("timed out"),
        "{slow:?}"
    );
    // An answer over 16 KiB is not read further: no answer, a transient failure.
    let huge = run(Reply::ok().with_body(" ".repeat(20 * 1024) + r#"{"entitled": true}"#)).await;
    assert_eq!(huge.state, JobState::Available, "{huge:?}");
    assert!(
        huge.last_error
            .as_deref()
            .unwrap()
            .contains("larger than 16384 bytes"),
        "{huge:?}"
    );
    let yes = run(Reply::ok().with_body(r#"{"entitled": true}"#)).await;
    assert_eq!(yes.state, JobState::Succeeded, "{yes:?}");
    assert_eq!(w.mails().len(), 1);
    // The question carries ids, never the address.
    let asked = rx.received();
    assert!(asked.len() >= 5);
    for r in &asked {
        let body = r.body_text();
        assert!(body.contains("\"recipient_id\":\"u00000\""), "{body}");
        assert!(!body.contains("@example.com"), "{body}");
    }
}

/// Issue 12, finding 1 (SSRF): with private targets not allowed, a topic whose entitlement
/// URL is on loopback is refused when saved, and a topic row that holds one anyway (stored
/// before the check, or written around the API) is never asked: the listener receives
/// nothing and the job ends dead with an error naming `entitlement_url`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_entitlement_url_is_refused_at_save_and_never_called_at_send() {
    use kairos_testkit::TestReceiver;
    let w = world_full(t("2026-11-29T00:00:00Z"), None, None, false).await;
    w.audience(1, vec![]).await;
    let rx = TestReceiver::start().await;
    let url = rx.url("/entitled");
    for u in [
        url.clone(),
        "http://localhost:9/e".to_string(),
        "http://169.254.169.254/latest/meta-data".to_string(),
        "http://[::1]/e".to_string(),
    ] {
        let topic: NewTopic = serde_json::from_value(serde_json::json!({
            "subject": "Hi", "text": "Hello", "entitlement_url": u}))
        .unwrap();
        let err = w.kairos.topic_put("weekly", topic).await.unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("entitlement_url:") && msg.contains("private"),
            "{u}: {msg}"
        );
    }
    // The refused save changed nothing.
    let kept = w.store.topic_get("weekly").await.unwrap().unwrap();
    assert_eq!(kept.entitlement_url, None);

    // A row holding a loopback URL, written through the store directly.
    w.store
        .topic_put(kairos_store::TopicPut {
            name: "weekly".into(),
            subject: "Hi".into(),
            html: None,
            text: Some("Hello {{ recipient.id }}".into()),
            variants: vec![],
            entitlement_url: Some(url.clone()),
            entitlement_timeout_ms: Some(1000),
            now: w.clock.now(),
        })
        .await
        .unwrap();
    let (job, _) = w
        .kairos
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("email".into()),
            payload: Some(serde_json::json!({"topic": "weekly", "recipient_id": "u00000"})),
            idempotency_key: Some("ssrf-1".into()),
            retry: Some(serde_json::from_value(serde_json::json!({"max_attempts": 1})).unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    w.drain(w.clock.now()).await;
    let dead = w.store.job_get(&job.id).await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead, "{dead:?}");
    let error = dead.last_error.as_deref().unwrap();
    assert!(
        error.contains("entitlement_url")
            && error.contains("non-public")
            && error.contains("KAIROS_ALLOW_PRIVATE_TARGETS"),
        "{error}"
    );
    // Give a stray request time to arrive: there must be none.
    assert!(
        !rx.wait_for(1, std::time::Duration::from_millis(300)).await,
        "the entitlement listener was called"
    );
    assert_eq!(rx.count(), 0);
    assert!(w.mails().is_empty());
}

/// Issue 12, finding 3: templates run under fuel and an output cap. Nested `range(10000)`
/// loops are refused when the topic is saved (the error names the template), and a template
/// whose output only grows past 1 MiB with a recipient's real data fails that job cleanly —
/// a permanent failure naming the template, no mail — instead of building the mail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_over_fuel_is_refused_at_save_and_over_output_cap_fails_the_job() {
    let w = world(t("2026-11-29T00:00:00Z"), None).await;
    w.audience(1, vec![]).await;
    let nested = "{% for i in range(10000) %}{% for j in range(10000) %}.{% endfor %}{% endfor %}";
    let started = std::time::Instant::now();
    let e = w
        .kairos
        .topic_put(
            "weekly",
            serde_json::from_value(serde_json::json!({"subject": "Hi", "html": nested})).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    match e.kind() {
        kairos_engine::OpsErrorKind::Invalid { field, reason } => {
            assert_eq!(field, "html");
            assert!(reason.contains("steps to render"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // Small in the sample, 20 × 60 KB with this recipient's attribute.
    let repeat = "{% for i in range(20) %}{{ recipient.attributes.blob }}{% endfor %}";
    w.kairos
        .topic_put(
            "weekly",
            serde_json::from_value(serde_json::json!({"subject": "Hi", "text": repeat})).unwrap(),
        )
        .await
        .unwrap();
    w.kairos
        .recipient_put_many(vec![NewRecipient {
            id: Some("u00000".into()),
            email: "user0@example.com".into(),
            webhook: None,
            timezone: None,
            locale: None,
            attributes: Some(serde_json::json!({"blob": "x".repeat(60_000)})),
            state: None,
        }])
        .await
        .unwrap();
    let (job, _) = w
        .kairos
        .job_enqueue(kairos_engine::ops::NewJob {
            kind: Some("email".into()),
            payload: Some(serde_json::json!({"topic": "weekly", "recipient_id": "u00000"})),
            idempotency_key: Some("too-big".into()),
            retry: Some(serde_json::from_value(serde_json::json!({"max_attempts": 1})).unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    w.drain(w.clock.now()).await;
    let dead = w.store.job_get(&job.id).await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead, "{dead:?}");
    let error = dead.last_error.as_deref().unwrap();
    assert!(
        error.starts_with("recipient u00000: text:") && error.contains("more than 1048576 bytes"),
        "{error}"
    );
    assert!(w.mails().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_550_hard_bounce_suppresses_the_address_and_later_mails_are_skipped() {
    let sink_dir = tempfile::tempdir().unwrap();
    let Some(sink) = kairos_testkit::smtp::SmtpSink::start(sink_dir.path()).await else {
        return;
    };
    let w = world_with(t("2026-11-29T00:00:00Z"), None, Some(sink.url())).await;
    w.audience(3, vec![]).await;
    // u00001's mailbox does not exist: the sink answers 550 to `bounce…` addresses.
    let mut b: NewRecipient = serde_json::from_value(serde_json::json!({
        "email": "bounce1@example.com", "attributes": {"name": "B"}}))
    .unwrap();
    b.timezone = Some("Asia/Tokyo".into());
    w.kairos.recipient_put("u00001", b).await.unwrap();
    let s = w.weekly_schedule("0 9 * * 1").await;
    w.sched(t(MONDAY_9_TOKYO)).await;
    w.drain(t(MONDAY_9_TOKYO)).await;
    let got = sink.wait_for(2, std::time::Duration::from_secs(10)).await;
    assert_eq!(got.len(), 2);
    assert!(got.iter().any(|m| m.contains("To: user0@example.com")));
    let sup = w
        .store
        .suppression_get("bounce1@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sup.reason, "hard_bounce");
    // The cascade, as for a bounce the provider reports: u00001's subscriptions are disabled.
    let subs = w
        .store
        .subscription_list(SubscriptionList {
            recipient_id: Some("u00001".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!subs.is_empty());
    assert!(subs.iter().all(|s| !s.enabled), "{subs:?}");
    let bounced = w
        .jobs()
        .await
        .into_iter()
        .find(|j| j.payload["recipient_id"] == "u00001")
        .unwrap();
    assert_ne!(bounced.state, JobState::Succeeded);
    // Next week the suppressed address is skipped at send time, not sent to again.
    w.sched(t("2026-12-07T00:00:00Z")).await;
    w.drain(t("2026-12-07T00:00:00Z")).await;
    let next = w
        .jobs()
        .await
        .into_iter()
        .find(|j| {
            j.payload["recipient_id"] == "u00001" && j.period_key.as_deref() == Some("2026-W50")
        })
        .unwrap();
    assert_eq!(
        (next.state, next.reason.as_deref()),
        (JobState::Skipped, Some("suppressed"))
    );
    let _ = s;
}

/// a digest schedule with a `topic` fans its new artifact out to the topic's
/// subscribers: one mail each, rendered with the artifact, through the same paged, deduplicated
/// audience expansion as any audience schedule; a disabled subscription's job is skipped; a
/// second run of the period (which finds the artifact) mails nobody again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_digest_artifact_fans_out_to_topic_subscribers_once() {
    let start = t("2026-11-30T06:00:00Z");
    let w = world(start, None).await;
    let feed = kairos_testkit::TestReceiver::start().await;
    let rss = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Kairos news</title>\
        <item><title>Kairos ships fan-out</title><link>https://news.example/1</link>\
        <description>Artifacts now reach their subscribers.</description>\
        <pubDate>Mon, 30 Nov 2026 05:00:00 GMT</pubDate></item></channel></rss>";
    feed.respond_with(vec![
        kairos_testkit::Reply::ok()
            .with_header("content-type", "application/rss+xml")
            .with_body(rss);
        3
    ]);
    w.kairos
        .topic_put(
            "news",
            NewTopic {
                subject: "News {{ artifact.period_key }}".into(),
                html: None,
                text: Some("{{ artifact.content }}".into()),
                variants: vec![],
                entitlement_url: None,
                entitlement_timeout_ms: None,
            },
        )
        .await
        .unwrap();
    for (i, enabled) in [(0, true), (1, true), (2, false)] {
        w.kairos
            .recipient_put_many(vec![NewRecipient {
                id: Some(format!("n{i}")),
                email: format!("reader{i}@example.com"),
                webhook: None,
                timezone: None,
                locale: None,
                attributes: None,
                state: None,
            }])
            .await
            .unwrap();
        w.kairos
            .subscription_put(
                &format!("n{i}"),
                "news",
                NewSubscription {
                    channels: Some(vec!["email".into()]),
                    target: None,
                    targets: None,
                    enabled: Some(enabled),
                },
            )
            .await
            .unwrap();
    }
    let s = w
        .kairos
        .schedule_create(
            serde_json::from_value(serde_json::json!({
                "name": "daily-news", "kind": "digest", "topic": "news",
                "digest": {"name": "news", "feeds": [feed.url("/rss")]},
                "cron": "0 7 * * *", "timezone": "UTC", "period": "day"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let seven = t("2026-11-30T07:00:00Z");
    w.sched(seven).await; // the digest job
    w.drain(seven).await; // builds the artifact, records the fan-out
    assert!(w.mails().is_empty(), "the firing itself mails nobody");
    w.sched(seven + chrono::Duration::seconds(1)).await; // expands the audience
    w.drain(seven + chrono::Duration::seconds(1)).await;
    let mails = w.mails();
    assert_eq!(mails.len(), 2, "one mail per enabled subscriber");
    for m in &mails {
        assert_eq!(header(m, "Subject"), Some("News 2026-11-30"));
        assert!(
            m.contains("Kairos ships fan-out"),
            "rendered with the artifact:\n{m}"
        );
    }
    let emails: Vec<_> = w
        .jobs()
        .await
        .into_iter()
        .filter(|j| j.kind.as_str() == "email")
        .collect();
    assert_eq!(emails.len(), 3);
    let n2 = emails
        .iter()
        .find(|j| j.payload["recipient_id"] == "n2")
        .expect("n2's job");
    assert_eq!(
        (n2.state.clone(), n2.reason.as_deref()),
        (JobState::Skipped, Some("unsubscribed"))
    );
    assert!(
        emails.iter().all(|j| j.payload.get("feeds").is_none()),
        "mails carry the artifact's key, not the digest definition"
    );

    // The period again (a catch-up-like run): the artifact exists, the fan-out is recorded
    // already, and the audience dedupe key keeps every mail single.
    let mut again = kairos_store::JobInsert {
        id: kairos_core::id::new_id(kairos_core::id::IdPrefix::Job, seven),
        kind: kairos_core::JobKind("digest".into()),
        payload: s.payload.clone(),
        endpoint_id: None,
        schedule_id: Some(s.id.clone()),
        fire_at: Some(seven),
        period_key: Some("2026-11-30".into()),
        channel: None,
        dedupe_key: Some("rerun".into()),
        retry: kairos_core::RetryPolicy::http_call(),
        audience: kairos_core::JobAudience::of_payload(&s.payload),
        retry_is_kind_default: false,
        run_at: seven + chrono::Duration::hours(6),
        now: seven,
        concurrency: None,
        http_origin: None,
    };
    again.payload["period"] = serde_json::Value::Null;
    w.store.job_insert(again).await.unwrap();
    let later = seven + chrono::Duration::hours(6);
    w.drain(later).await;
    w.sched(later).await;
    w.drain(later).await;
    assert_eq!(w.mails().len(), 2, "nobody is mailed twice");
    let emails = w
        .jobs()
        .await
        .into_iter()
        .filter(|j| j.kind.as_str() == "email")
        .count();
    assert_eq!(emails, 3);
}
