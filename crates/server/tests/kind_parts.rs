//! A kind's request part reaches the kind through the API without any request type naming
//! it: an application's kind with a part of its own (`"quote": {…}`), registered on the node
//! builder, reads that part on `POST /v1/jobs`, on a schedule and on a schedule's channel;
//! it is refused on another kind, and a field no kind owns is still an unknown field.

use kairos_app::config::Config;
use kairos_app::node::NodeBuilder;
use kairos_engine::kinds::{KindRequest, RequestEnv};
use kairos_engine::{Kind, OpsError};
use kairos_server::http::HttpLimits;
use kairos_server::{ApiToken, AppState, app};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const TOKEN: &str = "kind-parts-token";

/// The application's quote: what its part holds.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QuoteSpec {
    amount: i64,
}

/// A kind with a request part of its own; counts the parts accepted.
struct Quote {
    accepted: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Kind for Quote {
    fn name(&self) -> &'static str {
        "quote"
    }

    fn request_part(&self) -> Option<&'static str> {
        Some("quote")
    }

    async fn request_payload(
        &self,
        _env: &RequestEnv<'_>,
        req: KindRequest<'_>,
    ) -> Result<Value, OpsError> {
        req.refuse_foreign("quote", self.request_part())?;
        let Some(q) = req.part::<QuoteSpec>("quote")? else {
            return Err(OpsError::invalid("quote", "required for kind \"quote\""));
        };
        if q.amount <= 0 {
            return Err(OpsError::invalid("quote.amount", "must be positive"));
        }
        Ok(json!({ "amount": q.amount }))
    }

    async fn request_accepted(&self, _env: &RequestEnv<'_>, part: &Value) -> Result<(), OpsError> {
        assert!(part["amount"].is_i64(), "the part as given: {part}");
        self.accepted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let r = client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn i32_an_application_kinds_request_part_reaches_it_through_the_api() {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        listen: "127.0.0.1:0".into(),
        allow_private_targets: true,
        ..Config::default()
    };
    let accepted = Arc::new(AtomicUsize::new(0));
    let node = NodeBuilder::new(cfg)
        .kind(Quote {
            accepted: accepted.clone(),
        })
        .build()
        .await
        .expect("build");
    let state = AppState::for_node(&node, ApiToken::new(TOKEN)).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = tokio::spawn(kairos_server::http::serve(
        listener,
        app(state),
        HttpLimits::default(),
        std::future::pending(),
    ));
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let jobs = || format!("{base}/v1/jobs");
    let schedules = || format!("{base}/v1/schedules");

    // The part reaches the kind, which makes the payload; once accepted, the kind is told.
    let (status, job) = post(
        &client,
        jobs(),
        json!({"kind": "quote", "quote": {"amount": 5}}),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(job["payload"], json!({"amount": 5}));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);

    // The kind's own validation names its field; nothing is accepted.
    let (status, p) = post(
        &client,
        jobs(),
        json!({"kind": "quote", "quote": {"amount": 0}}),
    )
    .await;
    assert_eq!((status, &p["field"]), (422, &json!("quote.amount")), "{p}");
    let (status, p) = post(&client, jobs(), json!({"kind": "quote"})).await;
    assert_eq!((status, &p["field"]), (422, &json!("quote")), "{p}");
    // A part of the wrong shape is malformed, as serde refuses a body.
    let (status, p) = post(
        &client,
        jobs(),
        json!({"kind": "quote", "quote": {"amount": "x"}}),
    )
    .await;
    assert_eq!(status, 400, "{p}");
    assert!(
        p["detail"].as_str().unwrap_or_default().contains("quote"),
        "{p}"
    );
    // On another kind the part is refused, naming it.
    let webhook =
        json!({"url": "http://127.0.0.1:9/h", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"});
    let (status, p) = post(
        &client,
        jobs(),
        json!({"kind": "webhook", "webhook": webhook, "quote": {"amount": 1}}),
    )
    .await;
    assert_eq!((status, &p["field"]), (422, &json!("quote")), "{p}");
    // A field no kind owns is still an unknown field.
    let (status, p) = post(&client, jobs(), json!({"kind": "quote", "colour": "blue"})).await;
    assert_eq!(status, 400, "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown field `colour`"),
        "{p}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "nothing else accepted");

    // A schedule of the kind, and a schedule whose channel is of the kind.
    let (status, s) = post(
        &client,
        schedules(),
        json!({"name": "quotes", "every": "1h", "kind": "quote", "quote": {"amount": 7}}),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    let (status, s) = post(
        &client,
        schedules(),
        json!({"name": "fan", "every": "1h", "channels": [
            {"name": "q", "kind": "quote", "quote": {"amount": 3}},
            {"name": "w", "kind": "webhook", "webhook": webhook},
        ]}),
    )
    .await;
    assert_eq!(status, 201, "{s}");
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
    let (status, p) = post(
        &client,
        schedules(),
        json!({"name": "bad", "every": "1h", "channels": [
            {"name": "q", "kind": "quote", "quote": {"amount": -1}},
        ]}),
    )
    .await;
    assert_eq!(
        (status, &p["field"]),
        (422, &json!("channels[0].quote.amount")),
        "{p}"
    );

    server.abort();
    node.close().await;
}

#[tokio::test]
async fn i32_without_the_kind_its_part_is_an_unknown_field() {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    let (db, kairos) = NodeBuilder::new(cfg).open_kairos().await.expect("open");
    let req: kairos_engine::ops::NewJob =
        serde_json::from_value(json!({"kind": "webhook", "quote": {"amount": 5}})).expect("body");
    let e = kairos.job_enqueue(req).await.expect_err("refused");
    assert!(
        matches!(e.kind(), kairos_engine::OpsErrorKind::Malformed { field } if field == "quote"),
        "{e:?}"
    );
    assert_eq!(e.message(), "unknown field `quote`");
    db.close().await;
}
