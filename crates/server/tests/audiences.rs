//! The audience API of seed 003 end to end, through the contract the acceptance tests use:
//! `PUT /v1/recipients/{id}`, `PUT /v1/topics/{name}`, `PUT /v1/subscriptions/{r}/{topic}`,
//! `POST /v1/schedules` with `kind: email, topic, period: iso_week`, `POST …/fire` answering
//! how many jobs it created, and `GET /v1/occurrences`. The real app on a real SQLite file,
//! served on 127.0.0.1:0; mails go to the file transport.

use chrono::{DateTime, Utc};
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, ManualClock};
use kairos_engine::handlers::email::EmailConfig;
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::{ApiToken, AppState, app};
use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use tempfile::TempDir;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";

struct Api {
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    engine: Engine,
    dir: TempDir,
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

impl Api {
    async fn start() -> Api {
        kairos_testkit::init_crypto();
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("kairos.db"))
                .await
                .unwrap(),
        );
        // Sunday 2026-11-29 12:00 in Tokyo.
        let clock = Arc::new(ManualClock::new(t("2026-11-29T03:00:00Z")));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let transport = EmailTransport::new(TransportConfig::File {
            dir: dir.path().join("outbox"),
        })
        .unwrap();
        let registry = kairos_engine::handlers::builtin(kairos_engine::KindSettings {
            email: Some((
                transport, // Entitlement URLs on a local test server.
                EmailConfig {
                    allow_private_targets: true,
                    ..EmailConfig::default()
                },
            )),
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
        // Entitlement URLs on a local test server pass the save-time check too.
        let kairos =
            Kairos::new(store, dyn_clock, engine.wake(), kinds).allow_private_targets(true);
        let router = app(AppState::new(kairos, ApiToken::new(TOKEN)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Api {
            base: format!("http://{addr}"),
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            clock,
            engine,
            dir,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let text = res.text().await.unwrap();
        let json = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
        };
        (status, json)
    }

    async fn drain(&self, at: DateTime<Utc>) {
        self.clock.set(at);
        for _ in 0..100 {
            if self.engine.executor().run_once(at).await.unwrap().claimed == 0 {
                return;
            }
        }
        panic!("the executor did not drain");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipients_topics_and_subscriptions_follow_the_contract() {
    let api = Api::start().await;
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/recipients/usr_1",
            Some(json!({"email": "aki@example.com", "timezone": "Asia/Tokyo",
                        "attributes": {"name": "Aki"}})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["id"], "usr_1");
    assert_eq!(r["attributes"]["name"], "Aki");
    assert_eq!(r["state"], "active");
    let (s, r) = api.call(Method::GET, "/v1/recipients/usr_1", None).await;
    assert_eq!(
        (s, r["timezone"].as_str()),
        (StatusCode::OK, Some("Asia/Tokyo"))
    );
    // Bad input names the field and changes nothing; the address is not echoed.
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/recipients/usr_2",
            Some(json!({"email": "no-at-sign"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(
        r.to_string().contains("email") && !r.to_string().contains("no-at-sign"),
        "{r}"
    );
    let (s, _) = api
        .call(
            Method::PUT,
            "/v1/recipients/usr_2",
            Some(json!({"email": "a@b.co", "timezone": "Mars/Base"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        api.call(Method::GET, "/v1/recipients/usr_2", None).await.0,
        StatusCode::NOT_FOUND
    );

    // Bulk: thousands at a time.
    let items: Vec<Value> = (0..3000)
        .map(|i| json!({"id": format!("b{i:05}"), "email": format!("b{i}@example.com")}))
        .collect();
    let (s, r) = api
        .call(
            Method::POST,
            "/v1/recipients/bulk",
            Some(json!({"recipients": items})),
        )
        .await;
    assert_eq!(
        (s, r["upserted"].as_u64()),
        (StatusCode::OK, Some(3000)),
        "{r}"
    );
    let (s, r) = api
        .call(
            Method::POST,
            "/v1/recipients/bulk",
            Some(json!({"recipients": [{"id": "x", "email": "bad"}]})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.to_string().contains("recipients[0].email"), "{r}");
    let (_, r) = api
        .call(Method::GET, "/v1/recipients?limit=2&after=b00001", None)
        .await;
    assert_eq!(r["data"][0]["id"], "b00002");

    // Topics: templates checked at save time.
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/topics/weekly",
            Some(json!({"subject": "Week {{ period.key }}", "html": "<p>{{ recipient.attributes.name }}</p>",
                        "text": "Hi {{ recipient.attributes.name }}",
                        "variants": [{"name": "a", "weight": 1, "subject": "A {{ period.key }}"},
                                     {"name": "b", "weight": 1, "subject": "B {{ period.key }}"}]})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["variants"][1]["name"], "b");
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/topics/broken",
            Some(json!({"subject": "Hi {{ recipent.id }}"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r.to_string().contains("subject"), "{r}");
    assert_eq!(
        api.call(Method::GET, "/v1/topics/broken", None).await.0,
        StatusCode::NOT_FOUND
    );

    // Subscriptions.
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/subscriptions/usr_1/weekly",
            Some(json!({"channels": ["email"], "target": "team-7", "enabled": true})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(
        (r["target"].as_str(), r["enabled"].as_bool()),
        (Some("team-7"), Some(true))
    );
    let (s, _) = api
        .call(
            Method::PUT,
            "/v1/subscriptions/ghost/weekly",
            Some(json!({"channels": ["email"]})),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/subscriptions/usr_1/weekly",
            Some(json!({"channels": ["pigeon"]})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.to_string().contains("channels[0]"), "{r}");
    let (_, r) = api
        .call(Method::GET, "/v1/subscriptions?recipient_id=usr_1", None)
        .await;
    assert_eq!(r["data"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weekly_email_schedule_fires_once_per_subscriber_and_occurrences_show_it() {
    let api = Api::start().await;
    api.call(
        Method::PUT,
        "/v1/topics/weekly",
        Some(json!({"subject": "Week {{ period.key }}",
        "text": "Hello {{ recipient.id }}"})),
    )
    .await;
    for i in 0..20 {
        let id = format!("u{i:02}");
        let (s, _) = api
            .call(Method::PUT, &format!("/v1/recipients/{id}"),
                Some(json!({"email": format!("{id}@example.com"), "timezone": "Asia/Tokyo", "attributes": {}})))
            .await;
        assert_eq!(s, StatusCode::OK);
        api.call(
            Method::PUT,
            &format!("/v1/subscriptions/{id}/weekly"),
            Some(json!({"channels": ["email"], "target": "t", "enabled": true})),
        )
        .await;
    }
    let (s, sch) = api
        .call(Method::POST, "/v1/schedules", Some(json!({"name": "weekly", "kind": "email",
            "topic": "weekly", "period": "iso_week", "cron": "0 9 * * 1", "timezone": "Asia/Tokyo"})))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{sch}");
    let id = sch["id"].as_str().unwrap();
    // `week` keeps working beside `iso_week`; a topic on another kind is refused.
    let (s, _) = api
        .call(
            Method::POST,
            "/v1/schedules",
            Some(json!({"name": "weekly2", "kind": "email",
            "topic": "weekly", "period": "week", "cron": "0 9 * * 1", "timezone": "Asia/Tokyo"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, r) = api
        .call(
            Method::POST,
            "/v1/schedules",
            Some(json!({"name": "weekly3", "kind": "webhook",
            "topic": "weekly", "cron": "0 9 * * 1"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    // A catch-up on an audience schedule would mail every subscriber again: refused.
    let (s, r) = api
        .call(
            Method::POST,
            "/v1/schedules",
            Some(
                json!({"name": "weekly4", "kind": "email", "topic": "weekly",
            "period": "iso_week", "cron": "0 9 * * 1", "catch_up": ["13:00"]}),
            ),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r.to_string().contains("catch_up"), "{r}");
    let (s, r) = api
        .call(
            Method::POST,
            "/v1/schedules",
            Some(json!({"name": "weekly4", "kind": "email",
            "cron": "0 9 * * 1"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r.to_string().contains("topic"), "{r}");

    // Fire now (a manual run): one job per subscriber; again: none.
    let (s, r) = api
        .call(Method::POST, &format!("/v1/schedules/{id}/fire"), None)
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["created"], 20);
    let period = r["period_key"].as_str().unwrap().to_string();
    assert_eq!(period, "2026-W48");
    let (_, r) = api
        .call(Method::POST, &format!("/v1/schedules/{id}/fire"), None)
        .await;
    assert_eq!(r["created"], 0);

    let occ = format!("/v1/occurrences?schedule={id}&period={period}");
    let (s, r) = api.call(Method::GET, &occ, None).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"][0]["status"], "pending");
    // One recipient unsubscribes before the jobs run: skipped, and the occurrence is still a
    // success (a skip is a decision, not a failure).
    api.call(
        Method::PUT,
        "/v1/subscriptions/u03/weekly",
        Some(json!({"enabled": false})),
    )
    .await;
    api.drain(t("2026-11-29T03:00:01Z")).await;
    let (_, r) = api.call(Method::GET, &occ, None).await;
    let o = &r["data"][0];
    assert_eq!(o["status"], "success", "{r}");
    assert_eq!(o["channels"][0]["channel"], "email");
    assert_eq!(o["channels"][0]["states"]["succeeded"], 19);
    assert_eq!(o["channels"][0]["states"]["skipped"], 1);
    assert_eq!(
        std::fs::read_dir(api.dir.path().join("outbox"))
            .unwrap()
            .count(),
        19
    );
    // No job carries an address.
    let (_, jobs) = api
        .call(Method::GET, "/v1/jobs?kind=email&limit=100", None)
        .await;
    let jobs = jobs.to_string();
    assert!(jobs.contains("recipient_id"), "{jobs}");
    assert!(!jobs.contains("@example.com"), "{jobs}");
    let (s, _) = api
        .call(Method::GET, "/v1/occurrences?schedule=sch_nope", None)
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// Seed 003's silent failure: a topic whose entitlement URL is wrong (it answers 404, which
/// reads as "not entitled") skips every subscriber — no failure, so the failure rate stays
/// quiet — and `GET /v1/slo` shows a `skip_rate` warning for the schedule, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_entitlement_url_skips_everyone_and_slo_shows_skip_rate() {
    let rx = kairos_testkit::TestReceiver::start().await;
    rx.set_default(kairos_testkit::Reply::status(404));
    let api = Api::start().await;
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/topics/news",
            Some(json!({"subject": "News", "text": "Hello",
                        "entitlement_url": rx.url("/wrong/entitled")})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    for i in 0..6 {
        let id = format!("n{i}");
        api.call(
            Method::PUT,
            &format!("/v1/recipients/{id}"),
            Some(json!({"email": format!("{id}@example.com"), "timezone": "UTC"})),
        )
        .await;
        api.call(
            Method::PUT,
            &format!("/v1/subscriptions/{id}/news"),
            Some(json!({"channels": ["email"], "enabled": true})),
        )
        .await;
    }
    let (s, sch) = api
        .call(
            Method::POST,
            "/v1/schedules",
            Some(json!({"name": "news", "kind": "email",
            "topic": "news", "period": "iso_week", "cron": "0 9 * * 1", "timezone": "UTC"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{sch}");
    let id = sch["id"].as_str().unwrap().to_string();
    let (_, r) = api
        .call(Method::POST, &format!("/v1/schedules/{id}/fire"), None)
        .await;
    assert_eq!(r["created"], 6, "{r}");
    let skip_rate = |slo: &Value| -> Vec<Value> {
        slo["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["check"] == "skip_rate")
            .cloned()
            .collect()
    };
    let (_, slo) = api.call(Method::GET, "/v1/slo", None).await;
    assert!(skip_rate(&slo).is_empty(), "{slo}");

    api.drain(t("2026-11-29T03:00:01Z")).await;
    assert!(rx.count() >= 6, "every recipient's entitlement was asked");
    let (s, slo) = api.call(Method::GET, "/v1/slo", None).await;
    assert_eq!(s, StatusCode::OK);
    let warnings = skip_rate(&slo);
    assert_eq!(warnings.len(), 1, "{slo}");
    let w = &warnings[0];
    assert_eq!(w["status"], "warning");
    assert_eq!(w["subject"], id.as_str());
    assert!(
        w["message"].as_str().unwrap().starts_with("not_entitled"),
        "{w}"
    );
    assert_eq!(w["sample"], 6);
    // The failure rate has nothing to say: skips are not failures.
    assert!(
        slo["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["check"] != "failure_rate" || c["status"] != "warning"),
        "{slo}"
    );
}

/// A subscription to a topic that is not defined is kept (subscribing first is allowed) but
/// answered with a `warning` naming the topic, so a misspelt name is not accepted silently;
/// once the topic exists, the same `PUT` has no warning, and reads never carry one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribing_to_an_undefined_topic_is_kept_with_a_warning_i35_10() {
    let api = Api::start().await;
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/recipients/usr_1",
            Some(json!({"email": "aki@example.com", "timezone": "Asia/Tokyo"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let sub = "/v1/subscriptions/usr_1/weekly-summary";
    let (s, r) = api.call(Method::PUT, sub, Some(json!({}))).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let warning = r["warning"].as_str().expect("a warning");
    assert!(warning.contains("\"weekly-summary\""), "{warning}");
    let (s, r) = api.call(Method::GET, sub, None).await;
    assert_eq!(s, StatusCode::OK, "the subscription is kept: {r}");
    assert!(r.get("warning").is_none(), "{r}");
    let (s, r) = api
        .call(
            Method::PUT,
            "/v1/topics/weekly-summary",
            Some(json!({"subject": "Your week", "text": "Hello"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (s, r) = api.call(Method::PUT, sub, Some(json!({}))).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert!(r.get("warning").is_none(), "{r}");
}
