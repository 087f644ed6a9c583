//! Deliverability over HTTP on a real SQLite file, served on 127.0.0.1:0: provider events
//! signed here with an independent implementation of the Svix / Standard Webhooks scheme
//! (hmac + sha2 + base64), `kairos_inbound_events_total` scraped from `/metrics`, and each
//! A/B variant's mails with their outcomes in `GET /v1/topics/{name}/variant-stats` and on
//! `/admin/topics/{name}`.
//!
//! Only `metrics_count_every_inbound_event_by_source_type_and_outcome` posts to
//! `/hooks/resend`; the others post as the `acme` source, so the process-wide counters it
//! reads are its own.

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use kairos_core::{Clock, Job, ManualClock, Outcome};
use kairos_engine::KindSettings;
use kairos_engine::handlers::builtin;
use kairos_engine::ops::{NewJob, NewTopic, NewVariant};
use kairos_engine::{Engine, EngineConfig, Handler, JobContext, Kairos};
use kairos_server::routes::hooks::InboundConfig;
use kairos_server::{ApiToken, AppState, app};
use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use prometheus_parse::{Scrape, Value as Prom};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use tempfile::TempDir;

const TOKEN: &str = "deliverability-test-token-of-32-chars";
const RESEND: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
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

/// A stand-in for the mail provider's API: every `email` job is accepted, with the payload's
/// `pid` as the provider message id (what Resend answers as `id`).
struct Provider;

#[async_trait]
impl Handler for Provider {
    async fn handle(&self, job: &Job, _: &JobContext) -> Outcome {
        Outcome::Delivered {
            provider_id: job.payload["pid"].as_str().map(str::to_string),
            status_code: Some(200),
            response: None,
        }
    }
}

struct Api {
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    engine: Engine,
    kairos: Kairos,
    _store: Arc<dyn Store>,
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
        let registry = builtin(KindSettings::new(
            store.clone(),
            dyn_clock.clone(),
            Default::default(),
        ))
        .unwrap()
        .with_handler("email", Arc::new(Provider));
        let kinds = std::sync::Arc::new(registry.clone());
        let engine = Engine::new(
            EngineConfig::default(),
            store.clone(),
            dyn_clock.clone(),
            kinds.clone(),
        )
        .unwrap();
        let kairos = Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds);
        let cfg = kairos_app::config::Config {
            resend_webhook_secret: Some(RESEND.into()),
            inbound_secrets: Some(format!("acme={ACME}")),
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
            kairos,
            _store: store,
            _dir: dir,
        }
    }

    /// POST an event to `/hooks/resend` (Svix headers) or `/hooks/standard/acme`
    /// (`webhook-*` headers), signed with `secret`.
    async fn hook(&self, resend: bool, secret: &str, id: &str, event: &Value) -> StatusCode {
        let body = event.to_string();
        let ts = self.clock.now().timestamp();
        let (path, prefix) = if resend {
            ("/hooks/resend", "svix")
        } else {
            ("/hooks/standard/acme", "webhook")
        };
        self.http
            .post(format!("{}{path}", self.base))
            .header(format!("{prefix}-id"), id)
            .header(format!("{prefix}-timestamp"), ts.to_string())
            .header(format!("{prefix}-signature"), sign(secret, id, ts, &body))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
            .status()
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
    }

    async fn scrape(&self) -> Scrape {
        let text = self.get("/metrics").await.text().await.unwrap();
        Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
    }

    /// Send one mail of `topic` and `variant` with provider message id `pid`.
    async fn send(&self, topic: &str, variant: &str, pid: &str) {
        self.kairos
            .job_enqueue(NewJob {
                kind: Some("email".into()),
                payload: Some(
                    json!({"topic": topic, "variant": variant, "recipient_id": pid, "pid": pid}),
                ),
                ..Default::default()
            })
            .await
            .unwrap();
    }

    async fn run_jobs(&self) {
        for _ in 0..20 {
            let r = self
                .engine
                .executor()
                .run_once(self.clock.now())
                .await
                .unwrap();
            if r.claimed == 0 {
                return;
            }
        }
        panic!("jobs still due after 20 runs");
    }

    /// A session cookie for the admin pages.
    async fn admin_cookie(&self) -> String {
        let res = self
            .http
            .post(format!("{}/admin/login", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let c = res.headers()["set-cookie"].to_str().unwrap();
        c.split(';').next().unwrap().to_string()
    }
}

fn counter(s: &Scrape, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|x| x.metric == "kairos_inbound_events_total")
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match x.value {
            Prom::Counter(v) | Prom::Untyped(v) => v,
            _ => panic!("not a counter: {x:?}"),
        })
        .sum()
}

/// Every event through `/hooks/resend` is counted once by source, type and outcome: a
/// permanent bounce `suppressed`, a delivery `recorded`, an untyped bounce and an unknown
/// type `unknown` (the sender's own type text stays out of the labels as `other`), a repeat
/// `duplicate`, and a bad signature `rejected` (S3-9, S3-10, S3-11).
#[tokio::test]
async fn metrics_count_every_inbound_event_by_source_type_and_outcome() {
    let api = Api::start().await;
    let before = api.scrape().await;
    let bounce = json!({"type": "email.bounced", "data": {"email_id": "m1",
        "to": ["ann@example.com"], "bounce": {"type": "Permanent"}}});
    let untyped =
        json!({"type": "email.bounced", "data": {"email_id": "m2", "to": ["bo@example.com"]}});
    for (id, event) in [
        ("evt_1", &bounce),
        (
            "evt_2",
            &json!({"type": "email.delivered", "data": {"email_id": "m1"}}),
        ),
        ("evt_3", &untyped),
        ("evt_4", &json!({"type": "contact.updated", "data": {}})),
        ("evt_1", &bounce),
    ] {
        assert_eq!(
            api.hook(true, RESEND, id, event).await,
            StatusCode::OK,
            "{id}"
        );
    }
    assert_eq!(
        api.hook(true, ACME, "evt_5", &bounce).await,
        StatusCode::UNAUTHORIZED
    );
    let after = api.scrape().await;
    let delta = |t: &str, o: &str| {
        let l = [("source", "resend"), ("type", t), ("outcome", o)];
        counter(&after, &l) - counter(&before, &l)
    };
    assert_eq!(delta("email.bounced", "suppressed"), 1.0);
    assert_eq!(delta("email.delivered", "recorded"), 1.0);
    assert_eq!(delta("email.bounced", "unknown"), 1.0);
    assert_eq!(delta("other", "unknown"), 1.0);
    assert_eq!(delta("email.bounced", "duplicate"), 1.0);
    assert_eq!(delta("none", "rejected"), 1.0);
    assert_eq!(
        counter(&after, &[("type", "contact.updated")]),
        0.0,
        "the sender's type is not a label"
    );
}

/// Per A/B variant: mails sent (exposures), delivered, opened, clicked, bounced and
/// complained from signed provider events matched to the sends by provider message id, each
/// mail counted once per outcome, with rates over `sent` (S3-19). An event for a message
/// kairos did not send counts nowhere; an unknown topic is a 404; a topic without exposures
/// has no rows. The admin page shows the same numbers, escaped, and the dashboard links the
/// topic's deliverability rows to it.
#[tokio::test]
async fn variant_stats_count_each_variants_mails_and_outcomes_from_provider_events_s3_19() {
    let api = Api::start().await;
    let topic = NewTopic {
        subject: "Your week".into(),
        html: Some("<p>hello</p>".into()),
        text: None,
        variants: vec![
            NewVariant {
                name: "a".into(),
                weight: Some(1),
                subject: Some("A".into()),
                html: None,
                text: None,
            },
            NewVariant {
                name: "b".into(),
                weight: Some(1),
                subject: Some("B".into()),
                html: None,
                text: None,
            },
        ],
        entitlement_url: None,
        entitlement_timeout_ms: None,
    };
    api.kairos.topic_put("weekly", topic.clone()).await.unwrap();
    api.kairos.topic_put("quiet", topic).await.unwrap();
    for pid in ["a1", "a2", "a3", "a4"] {
        api.send("weekly", "a", pid).await;
    }
    // A variant name as stored in a job's payload, which the page must escape.
    api.send("weekly", "<b>", "b1").await;
    api.send("weekly", "<b>", "b2").await;
    api.run_jobs().await;
    let ev = |t: &str, pid: &str| json!({"type": t, "data": {"email_id": pid, "to": [format!("{pid}@example.com")]}});
    let mut events = vec![
        ev("email.delivered", "a1"),
        ev("email.delivered", "a2"),
        ev("email.delivered", "a3"),
        ev("email.opened", "a1"),
        ev("email.opened", "a1"),
        ev("email.opened", "a2"),
        ev("email.clicked", "a1"),
        ev("email.delivered", "b1"),
        ev("email.complained", "b1"),
        ev("email.delivered", "elsewhere"),
    ];
    let mut bounce = ev("email.bounced", "a4");
    bounce["data"]["bounce"] = json!({"type": "Permanent"});
    events.push(bounce);
    for (i, e) in events.iter().enumerate() {
        let s = api.hook(false, ACME, &format!("evt_{i}"), e).await;
        assert_eq!(s, StatusCode::OK);
    }

    let res = api.get("/v1/topics/weekly/variant-stats").await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["topic"], "weekly");
    let rows = body["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{body}");
    let b = &rows[0];
    let a = &rows[1];
    assert_eq!(a["variant"], "a");
    for (field, want) in [
        ("sent", 4),
        ("delivered", 3),
        ("opened", 2),
        ("clicked", 1),
        ("bounced", 1),
        ("complained", 0),
    ] {
        assert_eq!(a[field], want, "a.{field} in {a}");
    }
    assert_eq!(a["delivery_rate"], 0.75);
    assert_eq!(a["open_rate"], 0.5);
    assert_eq!(a["click_rate"], 0.25);
    assert_eq!(a["bounce_rate"], 0.25);
    assert_eq!(a["complaint_rate"], 0.0);
    assert_eq!(b["variant"], "<b>");
    for (field, want) in [
        ("sent", 2),
        ("delivered", 1),
        ("opened", 0),
        ("clicked", 0),
        ("bounced", 0),
        ("complained", 1),
    ] {
        assert_eq!(b[field], want, "b.{field} in {b}");
    }
    assert_eq!(b["complaint_rate"], 0.5);

    let quiet: Value = api
        .get("/v1/topics/quiet/variant-stats")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(quiet["data"], json!([]));
    let missing = api.get("/v1/topics/nothing/variant-stats").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        missing.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/problem+json")
    );

    // The admin page: the same table, the variant name escaped.
    let cookie = api.admin_cookie().await;
    let page = |path: &'static str| {
        let cookie = cookie.clone();
        let api = &api;
        async move {
            let res = api
                .http
                .get(format!("{}{path}", api.base))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            (res.status(), res.text().await.unwrap())
        }
    };
    let (status, html) = page("/admin/topics/weekly").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-variant=\"&lt;b&gt;\""), "{html}");
    assert!(!html.contains("<b>"), "the variant name is escaped");
    let row_a = html
        .split("<tr class=\"variant\" data-variant=\"a\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .expect("variant a's row");
    for cell in [
        "<td class=\"sent\">4</td>",
        "<td class=\"delivered\">3 (75.00%)</td>",
        "<td class=\"opened\">2 (50.00%)</td>",
        "<td class=\"clicked\">1 (25.00%)</td>",
        "<td class=\"bounced\">1 (25.00%)</td>",
        "<td class=\"complained\">0 (0.00%)</td>",
    ] {
        assert!(row_a.contains(cell), "{cell} in {row_a}");
    }
    // The dashboard's SLO panel links a topic's deliverability rows to its page.
    let (status, html) = page("/admin").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("<a href=\"/admin/topics/weekly\">weekly</a>"),
        "{html}"
    );
    let (status, _) = page("/admin/topics/nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let anon = api
        .http
        .get(format!("{}/admin/topics/weekly", api.base))
        .send()
        .await
        .unwrap();
    assert_ne!(anon.status(), StatusCode::OK, "no page without a session");
}
