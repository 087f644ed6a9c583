//! Inbound provider events, suppression, maintenance mode and the one-click unsubscribe
//! (seed 003: S3-9 … S3-13) through the real app on a real SQLite file, served on
//! 127.0.0.1:0. Events are signed here with an independent implementation of the Svix /
//! Standard Webhooks scheme (hmac + sha2 + base64 directly, not kairos's signing module).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use kairos_channels::email::unsubscribe::UnsubscribeKey;
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, JobKind, JobState, ManualClock, RetryPolicy};
use kairos_engine::handlers::email::EmailConfig;
use kairos_engine::maintenance::Maintenance;
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::routes::hooks::InboundConfig;
use kairos_server::{ApiToken, AppState, app};
use kairos_store::*;
use kairos_store_sqlite::SqliteStore;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use tempfile::TempDir;

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
/// Two Resend secrets: the current one and the one being rotated out.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET: &str = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const OTHER: &str = "whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
const ACME: &str = "whsec_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// Independent signer: `v1,` base64(HMAC-SHA256(key, "id.ts.body")).
fn sign(secret: &str, id: &str, ts: i64, body: &str) -> String {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

struct Api {
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    engine: Engine,
    store: Arc<dyn Store>,
    kairos: Kairos,
    key: UnsubscribeKey,
    old_key: UnsubscribeKey,
    _dir: TempDir,
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
        let clock = Arc::new(ManualClock::new(t("2026-11-30T03:00:00Z")));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let transport = EmailTransport::new(TransportConfig::File {
            dir: dir.path().join("outbox"),
        })
        .unwrap();
        let registry = kairos_engine::handlers::builtin(kairos_engine::KindSettings {
            email: Some((transport, EmailConfig::default())),
            ..kairos_engine::KindSettings::new(store.clone(), dyn_clock.clone(), Default::default())
        })
        .expect("built-in kinds");
        let kinds = std::sync::Arc::new(registry.clone());
        let maintenance = Maintenance::new(false);
        let engine = Engine::new(
            EngineConfig::default(),
            store.clone(),
            dyn_clock.clone(),
            kinds.clone(),
        )
        .unwrap()
        .with_maintenance(maintenance.clone());
        let kairos = Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds)
            .with_maintenance(maintenance);
        let cfg = kairos_app::config::Config {
            resend_webhook_secret: Some(format!("{SECRET}, {OLD_SECRET}")),
            inbound_secrets: Some(format!("acme={ACME}")),
            unsubscribe_secret: Some("current-unsubscribe-secret-of-32-chars".into()),
            unsubscribe_old_secrets: Some("old-unsubscribe-secret".into()),
            ..Default::default()
        };
        let inbound = InboundConfig::from_config(&cfg).unwrap();
        let router = app(AppState::new(kairos.clone(), ApiToken::new(TOKEN)).with_inbound(inbound));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Api {
            base: format!("http://{addr}"),
            http: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            clock,
            engine,
            store,
            kairos,
            key: UnsubscribeKey::new("current-unsubscribe-secret-of-32-chars").unwrap(),
            old_key: UnsubscribeKey::new("old-unsubscribe-secret").unwrap(),
            _dir: dir,
        }
    }

    fn now(&self) -> i64 {
        self.clock.now().timestamp()
    }

    /// POST a Resend event with the given signature header and timestamp.
    async fn post_raw(&self, id: &str, ts: i64, sig: &str, body: &str) -> (StatusCode, Value) {
        let res = self
            .http
            .post(format!("{}/hooks/resend", self.base))
            .header("svix-id", id)
            .header("svix-timestamp", ts.to_string())
            .header("svix-signature", sig)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let s = res.status();
        (s, res.json().await.unwrap_or(Value::Null))
    }

    /// POST a Resend event signed with the current secret.
    async fn post(&self, id: &str, event: Value) -> (StatusCode, Value) {
        let body = event.to_string();
        let ts = self.now();
        self.post_raw(id, ts, &sign(SECRET, id, ts, &body), &body)
            .await
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }

    async fn recipient(&self, id: &str, email: &str, topics: &[&str]) {
        self.store
            .recipient_upsert(RecipientUpsert {
                id: id.into(),
                email: email.into(),
                timezone: "UTC".into(),
                locale: None,
                attributes: json!({}),
                state: RecipientState::Active,
                endpoint_id: None,
                now: self.clock.now(),
            })
            .await
            .unwrap();
        for topic in topics {
            self.store
                .topic_put(TopicPut {
                    name: topic.to_string(),
                    subject: "Your {{ topic }}".into(),
                    html: None,
                    text: Some("Hello".into()),
                    variants: vec![],
                    entitlement_url: None,
                    entitlement_timeout_ms: None,
                    now: self.clock.now(),
                })
                .await
                .unwrap();
            self.store
                .subscription_put(SubscriptionPut {
                    recipient_id: id.into(),
                    topic: topic.to_string(),
                    targets: vec![],
                    channels: vec!["email".into()],
                    enabled: true,
                    now: self.clock.now(),
                })
                .await
                .unwrap();
        }
    }

    async fn email_job(&self, recipient: &str, topic: &str) -> String {
        let id = kairos_core::id::new_id(kairos_core::id::IdPrefix::Job, self.clock.now());
        self.store
            .job_insert(JobInsert {
                id: id.clone(),
                kind: JobKind("email".into()),
                payload: json!({"topic": topic, "recipient_id": recipient}),
                endpoint_id: None,
                schedule_id: None,
                fire_at: None,
                period_key: None,
                channel: None,
                dedupe_key: None,
                retry: RetryPolicy::notification(),
                audience: kairos_core::JobAudience::of_payload(
                    &json!({"topic": topic, "recipient_id": recipient}),
                ),
                retry_is_kind_default: false,
                run_at: self.clock.now(),
                now: self.clock.now(),
                concurrency: None,
                http_origin: None,
            })
            .await
            .unwrap();
        id
    }

    async fn enabled(&self, r: &str, topic: &str) -> bool {
        self.store
            .subscription_get(r, topic)
            .await
            .unwrap()
            .unwrap()
            .enabled
    }
}

fn complaint(to: &str) -> Value {
    json!({"type": "email.complained", "created_at": "2026-11-30T03:00:00Z",
           "data": {"email_id": "re_1", "to": [to], "subject": "Weekly"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_signature_is_stored_once_and_a_repeat_changes_nothing() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    let (s, r) = api.post("msg_1", complaint("ann@example.com")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(
        (r["created"].as_bool(), r["action"].as_str()),
        (Some(true), Some("suppressed"))
    );
    assert!(!api.enabled("r1", "weekly").await);
    // Re-enable, then the same event again: 200, nothing changes.
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    let (s, r) = api.post("msg_1", complaint("ann@example.com")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(r["created"], false);
    assert!(
        api.enabled("r1", "weekly").await,
        "a repeat must not act again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signatures_are_401_and_change_nothing() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    let body = complaint("ann@example.com").to_string();
    let now = api.now();
    let cases = [
        (
            "wrong secret",
            "e1",
            now,
            sign(OTHER, "e1", now, &body),
            body.clone(),
        ),
        (
            "tampered body",
            "e2",
            now,
            sign(SECRET, "e2", now, &body),
            body.replace("Weekly", "Weakly"),
        ),
        (
            "old timestamp",
            "e3",
            now - 301,
            sign(SECRET, "e3", now - 301, &body),
            body.clone(),
        ),
        (
            "future timestamp",
            "e4",
            now + 301,
            sign(SECRET, "e4", now + 301, &body),
            body.clone(),
        ),
        ("no signature", "e5", now, String::new(), body.clone()),
        (
            "id swapped",
            "e6",
            now,
            sign(SECRET, "other", now, &body),
            body.clone(),
        ),
    ];
    for (what, id, ts, sig, b) in cases {
        let (s, r) = api.post_raw(id, ts, &sig, &b).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{what}: {r}");
        assert!(
            api.store
                .inbound_event_get("resend", id)
                .await
                .unwrap()
                .is_none(),
            "{what}"
        );
    }
    assert!(api.enabled("r1", "weekly").await);
    assert!(
        api.store
            .suppression_get("ann@example.com")
            .await
            .unwrap()
            .is_none()
    );
    // At the edge of the tolerance it still passes.
    let (s, _) = api
        .post_raw(
            "e7",
            now - 300,
            &sign(SECRET, "e7", now - 300, &body),
            &body,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_signatures_with_one_valid_pass_and_old_secrets_still_verify() {
    let api = Api::start().await;
    let body = json!({"type": "email.delivered", "data": {"email_id": "re_9"}}).to_string();
    let now = api.now();
    let header = format!(
        "v1,Zm9vYmFy {} v2,whatever {}",
        sign(OTHER, "m1", now, &body),
        sign(SECRET, "m1", now, &body)
    );
    let (s, r) = api.post_raw("m1", now, &header, &body).await;
    assert_eq!(
        (s, r["action"].as_str()),
        (StatusCode::OK, Some("recorded"))
    );
    // Signed with the secret being rotated out (second in KAIROS_RESEND_WEBHOOK_SECRET).
    let (s, _) = api
        .post_raw("m2", now, &sign(OLD_SECRET, "m2", now, &body), &body)
        .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_type_does_what_the_docs_say() {
    let api = Api::start().await;
    for (i, a) in ["hb", "tb", "dd", "sp", "sa", "un", "us"]
        .iter()
        .enumerate()
    {
        api.recipient(&format!("r{i}"), &format!("{a}@example.com"), &["weekly"])
            .await;
    }
    let ev = |t: &str, to: &str, bounce: Option<&str>| {
        let mut d = json!({"type": t, "data": {"email_id": "re_x", "to": [to]}});
        if let Some(b) = bounce {
            d["data"]["bounce"] = json!({"type": b, "subType": "General", "message": "x"});
        }
        d
    };
    let cases = [
        (
            "e_hb",
            ev("email.bounced", "hb@example.com", Some("Permanent")),
            "suppressed",
            Some("hard_bounce"),
        ),
        (
            "e_tb",
            ev("email.bounced", "tb@example.com", Some("Transient")),
            "recorded",
            None,
        ),
        (
            "e_dd",
            ev("email.delivery_delayed", "dd@example.com", None),
            "recorded",
            None,
        ),
        (
            "e_sp",
            ev("email.suppressed", "sp@example.com", None),
            "suppressed",
            Some("provider_suppressed"),
        ),
        (
            "e_sa",
            ev("suppression.added", "sa@example.com", None),
            "suppressed",
            Some("provider_suppressed"),
        ),
        (
            "e_un",
            ev("contact.created", "un@example.com", None),
            "unknown",
            None,
        ),
        (
            "e_us",
            ev("email.bounced", "us@example.com", Some("Mystery")),
            "unknown",
            None,
        ),
    ];
    for (i, (id, event, action, reason)) in cases.into_iter().enumerate() {
        let to = event["data"]["to"][0].as_str().unwrap().to_string();
        let (s, r) = api.post(id, event).await;
        assert_eq!(s, StatusCode::OK, "{id}: {r}");
        assert_eq!(r["action"], action, "{id}");
        let sup = api.store.suppression_get(&to).await.unwrap();
        assert_eq!(sup.as_ref().map(|s| s.reason.as_str()), reason, "{id}");
        if let Some(sup) = sup {
            assert_eq!(sup.source_event_id.as_deref(), Some(id));
        }
        assert_eq!(
            api.enabled(&format!("r{i}"), "weekly").await,
            reason.is_none(),
            "{id}"
        );
        let stored = api
            .store
            .inbound_event_get("resend", id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.action, action);
    }
    // Not JSON at all: stored and acknowledged, never a 500.
    let now = api.now();
    let (s, r) = api
        .post_raw("junk", now, &sign(SECRET, "junk", now, "%%%"), "%%%")
        .await;
    assert_eq!((s, r["action"].as_str()), (StatusCode::OK, Some("unknown")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complaint_cascades_to_three_subscriptions_and_pending_jobs_end_skipped_suppressed() {
    let api = Api::start().await;
    api.recipient("r1", "Ann@Example.com", &["weekly", "daily", "news"])
        .await;
    api.recipient("r2", "bob@example.com", &["weekly"]).await;
    let pending = [
        api.email_job("r1", "weekly").await,
        api.email_job("r1", "daily").await,
        api.email_job("r1", "news").await,
    ];
    let bob = api.email_job("r2", "weekly").await;
    let (s, r) = api.post("msg_c", complaint("ann@example.com")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    for topic in ["weekly", "daily", "news"] {
        assert!(!api.enabled("r1", topic).await, "{topic}");
    }
    assert!(api.enabled("r2", "weekly").await);
    let now = api.clock.now();
    for _ in 0..10 {
        if api.engine.executor().run_once(now).await.unwrap().claimed == 0 {
            break;
        }
    }
    for id in pending {
        let j = api.store.job_get(&id).await.unwrap().unwrap();
        assert_eq!(
            (j.state, j.reason.as_deref()),
            (JobState::Skipped, Some("suppressed"))
        );
    }
    let j = api.store.job_get(&bob).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Succeeded, "another address still sends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_webhooks_source_is_verified_and_stored_idempotently() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    let body = complaint("ann@example.com").to_string();
    let now = api.now();
    let post = |source: &str, secret: &str, id: &str| {
        let req = api
            .http
            .post(format!("{}/hooks/standard/{source}", api.base))
            .header("webhook-id", id)
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", sign(secret, id, now, &body))
            .body(body.clone());
        async move { req.send().await.unwrap().status() }
    };
    assert_eq!(post("acme", SECRET, "w1").await, StatusCode::UNAUTHORIZED);
    assert!(api.enabled("r1", "weekly").await);
    assert_eq!(post("nobody", ACME, "w1").await, StatusCode::NOT_FOUND);
    assert_eq!(post("acme", ACME, "w1").await, StatusCode::OK);
    assert!(!api.enabled("r1", "weekly").await);
    assert_eq!(post("acme", ACME, "w1").await, StatusCode::OK);
    let e = api
        .store
        .inbound_event_get("acme", "w1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.action, "suppressed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_mode_pauses_engine_and_api_but_hooks_unsubscribe_and_healthz_work() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    api.recipient("r2", "bob@example.com", &["weekly"]).await;
    let job = api.email_job("r2", "weekly").await;
    api.kairos.maintenance_set(true).await.unwrap();

    let res = api.call(Method::GET, "/v1/suppressions", None).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(res.headers().get("retry-after").is_some());
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let health = api
        .http
        .get(format!("{}/healthz", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let (s, _) = api.post("msg_m", complaint("ann@example.com")).await;
    assert_eq!(s, StatusCode::OK, "hooks keep working (S3-13)");
    assert!(
        api.store
            .inbound_event_get("resend", "msg_m")
            .await
            .unwrap()
            .is_some()
    );
    let token = api.key.token("r2", "weekly");
    let page = api
        .http
        .get(format!("{}/unsubscribe?token={token}", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let now = api.clock.now();
    assert_eq!(
        api.engine.executor().run_once(now).await.unwrap().claimed,
        0
    );
    assert_eq!(
        api.engine.scheduler().run_once(now).await.unwrap(),
        Default::default()
    );
    assert_eq!(
        api.store.job_get(&job).await.unwrap().unwrap().state,
        JobState::Available
    );

    api.kairos.maintenance_set(false).await.unwrap();
    let res = api.call(Method::GET, "/v1/suppressions", None).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        api.engine.executor().run_once(now).await.unwrap().claimed,
        1
    );
    assert_eq!(
        api.store.job_get(&job).await.unwrap().unwrap().state,
        JobState::Succeeded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_click_unsubscribe_get_changes_nothing_post_unsubscribes_forged_is_400() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly", "daily"])
        .await;
    let token = api.key.token("r1", "weekly");
    let url = format!("{}/unsubscribe?token={token}", api.base);
    // GET: a page with a button; nothing changes (scanners fetch GETs).
    let page = api.http.get(&url).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("<form method=\"post\""), "{html}");
    assert!(!html.contains("ann@example.com"), "no address on the page");
    assert!(api.enabled("r1", "weekly").await);
    // Forged: another recipient with the same MAC; unknown key; garbage.
    let forged = token.replacen(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("r1"),
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("r2"),
        1,
    );
    let stranger = UnsubscribeKey::new("someone-else")
        .unwrap()
        .token("r1", "weekly");
    for bad in [forged.as_str(), stranger.as_str(), "v1.x.y.z.w", ""] {
        let res = api
            .http
            .post(format!("{}/unsubscribe?token={bad}", api.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    assert!(api.enabled("r1", "weekly").await);
    // Without the one-click body: 400, nothing changes.
    let res = api.http.post(&url).body("").send().await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(api.enabled("r1", "weekly").await);
    // A malformed multipart body (no closing boundary, no such part) is not a one-click.
    let res = api
        .http
        .post(&url)
        .header("content-type", "multipart/form-data; boundary=B")
        .body("--B\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(api.enabled("r1", "weekly").await);
    // The one-click POST: 200, never a redirect; again (percent-encoded, with another field,
    // as some clients write it): 200, nothing more.
    for body in [
        "List-Unsubscribe=One-Click",
        "other=1&List%2DUnsubscribe=One%2DClick",
    ] {
        let res = api
            .http
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(!api.enabled("r1", "weekly").await);
    }
    assert!(api.enabled("r1", "daily").await, "only the token's topic");
    // Multipart, with a token made by the previous secret (rotation).
    let old = api.old_key.token("r1", "daily");
    // A multipart/form-data body as a browser or mail client writes it.
    let form = "--XyZb0undary\r\nContent-Disposition: form-data; name=\"List-Unsubscribe\"\r\n\r\nOne-Click\r\n--XyZb0undary--\r\n";
    let res = api
        .http
        .post(format!("{}/unsubscribe?token={old}", api.base))
        .header("content-type", "multipart/form-data; boundary=XyZb0undary")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(!api.enabled("r1", "daily").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suppressions_api_lists_adds_and_removes_with_reason() {
    let api = Api::start().await;
    api.recipient("r1", "ann@example.com", &["weekly"]).await;
    let res = api
        .call(
            Method::POST,
            "/v1/suppressions",
            Some(json!({"email": "Ann@Example.com", "reason": "asked by phone"})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["subscriptions_disabled"], 1);
    assert!(!api.enabled("r1", "weekly").await);
    let (s, _) = api.post("msg_z", complaint("zed@example.com")).await;
    assert_eq!(s, StatusCode::OK);
    let list: Value = api
        .call(Method::GET, "/v1/suppressions?limit=1", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["data"][0]["email"], "ann@example.com");
    assert_eq!(list["data"][0]["reason"], "asked by phone");
    assert_eq!(list["data"][0]["event_id"], Value::Null);
    assert!(list["data"][0]["created_at"].is_string());
    let next = list["next_after"].as_str().unwrap();
    let list: Value = api
        .call(Method::GET, &format!("/v1/suppressions?after={next}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["data"][0]["email"], "zed@example.com");
    assert_eq!(list["data"][0]["event_id"], "msg_z");
    // Bad input names the field and does not echo the address.
    let res = api
        .call(
            Method::POST,
            "/v1/suppressions",
            Some(json!({"email": "no-at-sign"})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let p: Value = res.json().await.unwrap();
    assert_eq!(p["field"], "email");
    assert!(!p.to_string().contains("no-at-sign"));
    let res = api
        .call(
            Method::DELETE,
            "/v1/suppressions/ann@example.com?reason=resubscribed",
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(
        api.store
            .suppression_get("ann@example.com")
            .await
            .unwrap()
            .is_none()
    );
    let res = api
        .call(Method::DELETE, "/v1/suppressions/ann@example.com", None)
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

#[test]
fn inbound_secrets_are_validated_by_field_without_echoing_them() {
    use kairos_app::config::Config;
    let bad = [
        Config {
            resend_webhook_secret: Some("whsec_short".into()),
            ..Default::default()
        },
        Config {
            inbound_secrets: Some("acme".into()),
            ..Default::default()
        },
        Config {
            inbound_secrets: Some(format!("Bad Name={ACME}")),
            ..Default::default()
        },
        Config {
            inbound_secrets: Some("acme=notasecret".into()),
            ..Default::default()
        },
    ];
    for (cfg, field) in bad.iter().zip([
        "resend_webhook_secret",
        "inbound_secrets",
        "inbound_secrets",
        "inbound_secrets",
    ]) {
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(!e.to_string().contains("notasecret") && !e.to_string().contains("whsec_short"));
    }
    let ok = InboundConfig::from_config(&Config {
        resend_webhook_secret: Some(format!("{SECRET},{OLD_SECRET}")),
        inbound_secrets: Some(format!("acme={ACME},acme={OTHER}")),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(ok.resend.len(), 2);
    assert_eq!(ok.standard["acme"].len(), 2);
    assert!(
        !format!("{ok:?}").contains("whsec_"),
        "Debug shows no secret"
    );
}
