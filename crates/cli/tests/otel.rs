//! Tracing through the real `kairos serve` binary, against a local OTLP/HTTP collector (an
//! axum server on 127.0.0.1 decoding the protobuf `ExportTraceServiceRequest`):
//!
//! - with `KAIROS_OTLP_ENDPOINT` set, the collector gets an API request span, a schedule
//!   firing span, attempt spans with their kind, channel, attempt number and outcome, linked
//!   to the firing that created their job, and one client span per outgoing webhook and
//!   `http` call, a child of its attempt; the receiver of each call gets a `traceparent`
//!   naming that client span; no attribute holds a URL, an address, a token or a payload;
//! - spans still queued when the node stops are exported on shutdown;
//! - without the setting, outgoing calls carry no `traceparent`.

mod common;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use common::{SECRET, Server, TOKEN, api};
use kairos_testkit::TestReceiver;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const EMAIL: &str = "alice.private@example.com";
const BEARER: &str = "tok_http_call_secret_456";

/// One exported span, flattened.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attrs: HashMap<String, String>,
    links: Vec<(String, String)>,
}

impl Got {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

/// Span kinds in OTLP's enum.
const KIND_SERVER: i32 = 2;
const KIND_CLIENT: i32 = 3;
const KIND_PRODUCER: i32 = 4;
const KIND_CONSUMER: i32 = 5;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn text(v: Option<&Any>) -> String {
    match v {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// A local OTLP/HTTP collector: what it was sent, and how many posts were not protobuf.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Got>>>,
    bad: Arc<Mutex<usize>>,
}

async fn traces(State(c): State<Collector>, body: Bytes) -> impl IntoResponse {
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        *c.bad.lock().expect("bad") += 1;
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let mut got = Vec::new();
    for rs in req.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                got.push(Got {
                    service: service.clone(),
                    name: s.name,
                    kind: s.kind,
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent: hex(&s.parent_span_id),
                    attrs: s
                        .attributes
                        .iter()
                        .map(|kv| {
                            (
                                kv.key.clone(),
                                text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                            )
                        })
                        .collect(),
                    links: s
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    c.spans.lock().expect("spans").extend(got);
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

impl Collector {
    /// Serve on 127.0.0.1, port 0: the base URL (`KAIROS_OTLP_ENDPOINT`).
    async fn start() -> (Collector, String) {
        let c = Collector::default();
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(traces))
            .with_state(c.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the collector");
        let addr = listener.local_addr().expect("collector address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (c, format!("http://{addr}"))
    }

    fn spans(&self) -> Vec<Got> {
        self.spans.lock().expect("spans").clone()
    }
}

/// The trace id and parent id of a `traceparent` header (`00-<trace>-<parent>-<flags>`).
fn parse_traceparent(v: &str) -> (String, String) {
    let parts: Vec<&str> = v.split('-').collect();
    assert_eq!(parts.len(), 4, "traceparent {v:?}");
    assert_eq!(parts[0], "00", "traceparent {v:?}");
    assert_eq!(parts[1].len(), 32, "traceparent {v:?}");
    assert_eq!(parts[2].len(), 16, "traceparent {v:?}");
    (parts[1].to_string(), parts[2].to_string())
}

/// No span attribute holds any of `secrets` (ids, kinds, statuses and outcomes only).
fn assert_holds_none(spans: &[Got], secrets: &[&str]) {
    for s in spans {
        for (k, v) in &s.attrs {
            for secret in secrets {
                assert!(
                    !v.contains(secret),
                    "{k}={v} of {} holds {secret:?}",
                    s.name
                );
            }
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

#[tokio::test]
async fn spans_reach_the_collector_linked_and_outgoing_calls_carry_their_traceparent() {
    kairos_testkit::init_crypto();
    let receiver = TestReceiver::start().await;
    let (collector, endpoint) = Collector::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        dir.path(),
        Some(TOKEN),
        &[
            // A trailing slash is allowed: the path is appended to the base.
            ("KAIROS_OTLP_ENDPOINT", &format!("{endpoint}/")),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "kairos-otel-test"),
        ],
    )
    .await;
    let http = client();

    let (status, sched) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/schedules", server.base),
        Some(json!({
            "name": "tick",
            "every": "1s",
            "kind": "webhook",
            "webhook": {"url": receiver.url("/tick?who=alice"), "secret": SECRET},
            "payload": {"to": EMAIL}
        })),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    let sid = sched["id"].as_str().expect("schedule id").to_string();
    let (status, job) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(json!({
            "kind": "http",
            "http": {"url": receiver.url("/call"), "method": "PUT",
                     // Replaced by the call's own trace context.
                     "headers": {"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"},
                     "body": {"email": EMAIL}, "timeout": "10s", "bearer_token": BEARER},
        })),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let http_job = job["id"].as_str().expect("job id").to_string();

    // Bounded: at most 30 s for a firing's webhook, the http call and their spans.
    let done = |spans: &[Got]| {
        let attempt_of_schedule = spans.iter().any(|s| {
            s.attr("kairos.schedule_id") == Some(sid.as_str())
                && s.kind == KIND_CONSUMER
                && spans.iter().any(|c| c.parent == s.span_id)
        });
        let attempt_of_http = spans.iter().any(|s| {
            s.attr("kairos.job_id") == Some(http_job.as_str())
                && spans.iter().any(|c| c.parent == s.span_id)
        });
        attempt_of_schedule && attempt_of_http
    };
    for _ in 0..300 {
        if done(&collector.spans()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = collector.spans();
    assert!(
        done(&spans),
        "spans missing: {spans:#?}\nstderr:\n{}",
        server.stderr()
    );
    assert_eq!(
        *collector.bad.lock().expect("bad"),
        0,
        "a post was not protobuf"
    );
    assert!(spans.iter().all(|s| s.service == "kairos-otel-test"));

    // The API request.
    let api_span = spans
        .iter()
        .find(|s| s.attr("http.route") == Some("/v1/schedules"))
        .expect("the POST /v1/schedules span");
    assert_eq!(api_span.name, "POST /v1/schedules");
    assert_eq!(api_span.kind, KIND_SERVER);
    assert_eq!(api_span.attr("http.request.method"), Some("POST"));
    assert_eq!(api_span.attr("http.response.status_code"), Some("201"));

    // An attempt of the schedule's job (with its call), and the firing span it links to.
    let attempt = spans
        .iter()
        .find(|s| {
            s.kind == KIND_CONSUMER
                && s.attr("kairos.schedule_id") == Some(sid.as_str())
                && spans.iter().any(|c| c.parent == s.span_id)
        })
        .expect("an attempt of the schedule's job");
    assert_eq!(attempt.links.len(), 1, "{attempt:?}");
    let firing = spans
        .iter()
        .find(|s| (s.trace_id.clone(), s.span_id.clone()) == attempt.links[0])
        .unwrap_or_else(|| panic!("the firing span the attempt links to: {spans:#?}"));
    assert_eq!(firing.kind, KIND_PRODUCER);
    assert_eq!(firing.name, "fire webhook");
    assert_eq!(firing.attr("kairos.schedule_id"), Some(sid.as_str()));
    assert_eq!(firing.attr("kairos.kind"), Some("webhook"));
    assert!(firing.attr("kairos.fire_at").is_some(), "{firing:?}");
    assert!(firing.parent.is_empty(), "a firing is a root: {firing:?}");
    assert_eq!(attempt.name, "attempt webhook");
    assert_eq!(attempt.attr("kairos.kind"), Some("webhook"));
    assert_eq!(attempt.attr("kairos.channel"), Some("webhook"));
    assert_eq!(attempt.attr("kairos.schedule_id"), Some(sid.as_str()));
    assert_eq!(attempt.attr("kairos.attempt"), Some("1"));
    assert_eq!(attempt.attr("kairos.outcome"), Some("succeeded"));
    assert_eq!(attempt.attr("kairos.status_code"), Some("200"));
    assert!(
        attempt.parent.is_empty(),
        "an attempt is a root: {attempt:?}"
    );
    let job_id = attempt.attr("kairos.job_id").expect("job id").to_string();

    // The webhook POST, a child of the attempt, and the traceparent its receiver got.
    let post = spans
        .iter()
        .find(|s| s.parent == attempt.span_id)
        .expect("the webhook call's span");
    assert_eq!(post.name, "webhook POST");
    assert_eq!(post.kind, KIND_CLIENT);
    assert_eq!(post.trace_id, attempt.trace_id);
    assert_eq!(post.attr("http.request.method"), Some("POST"));
    assert_eq!(post.attr("http.response.status_code"), Some("200"));
    let delivered = receiver
        .received()
        .into_iter()
        .find(|r| r.path == "/tick" && r.header("webhook-id") == Some(job_id.as_str()))
        .expect("the attempt's webhook request");
    let (trace, parent) = parse_traceparent(
        delivered
            .header("traceparent")
            .expect("a traceparent header"),
    );
    assert_eq!(trace, attempt.trace_id, "the attempt's trace");
    assert_eq!(parent, post.span_id, "the call's span as the parent");

    // The http call: its attempt (no schedule, no link), its client span, its traceparent
    // (the user's replaced).
    let http_attempt = spans
        .iter()
        .find(|s| s.attr("kairos.job_id") == Some(http_job.as_str()))
        .expect("the http job's attempt");
    assert_eq!(http_attempt.name, "attempt http");
    assert_eq!(http_attempt.attr("kairos.kind"), Some("http"));
    assert_eq!(http_attempt.attr("kairos.outcome"), Some("succeeded"));
    assert!(http_attempt.links.is_empty(), "{http_attempt:?}");
    let call = spans
        .iter()
        .find(|s| s.parent == http_attempt.span_id)
        .expect("the http call's span");
    assert_eq!(call.name, "http PUT");
    assert_eq!(call.kind, KIND_CLIENT);
    let called = receiver
        .received()
        .into_iter()
        .find(|r| r.path == "/call")
        .expect("the http call");
    let tp = called.header("traceparent").expect("a traceparent header");
    assert!(
        !tp.contains(','),
        "one traceparent, not the user's too: {tp}"
    );
    let (trace, parent) = parse_traceparent(tp);
    assert_eq!(trace, http_attempt.trace_id);
    assert_eq!(parent, call.span_id);

    // Ids, kinds, statuses and outcomes only: no URL, address, query, token or payload.
    assert_holds_none(
        &spans,
        &[
            TOKEN,
            BEARER,
            EMAIL,
            "127.0.0.1",
            "who=alice",
            "/tick",
            "/call",
        ],
    );
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}");
}

/// Spans still queued when the node stops are posted on shutdown: with a batch delay of ten
/// minutes nothing is sent while it runs, and the request's span arrives once it has exited.
#[tokio::test]
async fn spans_queued_at_shutdown_are_exported_before_the_node_exits() {
    kairos_testkit::init_crypto();
    let (collector, endpoint) = Collector::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        dir.path(),
        Some(TOKEN),
        &[
            ("KAIROS_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    )
    .await;
    let (status, _) = api(
        &client(),
        reqwest::Method::GET,
        format!("{}/v1/jobs", server.base),
        None,
    )
    .await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(collector.spans().is_empty(), "exported before the delay");
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}");
    let spans = collector.spans();
    let request = spans
        .iter()
        .find(|s| s.attr("http.route") == Some("/v1/jobs"))
        .unwrap_or_else(|| panic!("the request's span, flushed at shutdown: {spans:#?}"));
    assert_eq!(request.attr("http.response.status_code"), Some("200"));
    assert_eq!(request.service, "kairos", "the default service name");
}

/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is the URL spans go to, as the specification has it,
/// over `<KAIROS_OTLP_ENDPOINT>/v1/traces` (here a port on which nothing listens).
#[tokio::test]
async fn the_standard_traces_endpoint_variable_wins_over_kairos_otlp_endpoint() {
    kairos_testkit::init_crypto();
    let (collector, endpoint) = Collector::start().await;
    let nowhere = kairos_testkit::refused_url("").await;
    let traces = format!("{endpoint}/v1/traces");
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        dir.path(),
        Some(TOKEN),
        &[
            ("KAIROS_OTLP_ENDPOINT", nowhere.as_str()),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str()),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "5000"),
        ],
    )
    .await;
    let (status, _) = api(
        &client(),
        reqwest::Method::GET,
        format!("{}/v1/jobs", server.base),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}");
    let spans = collector.spans();
    assert!(
        spans
            .iter()
            .any(|s| s.attr("http.route") == Some("/v1/jobs")),
        "the request's span reached the standard variable's URL: {spans:#?}"
    );
}

/// Tracing off (no `KAIROS_OTLP_ENDPOINT`): no `traceparent` on outgoing calls.
#[tokio::test]
async fn without_an_endpoint_outgoing_calls_carry_no_traceparent() {
    kairos_testkit::init_crypto();
    let receiver = TestReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let (status, job) = api(
        &client(),
        reqwest::Method::POST,
        format!("{}/v1/jobs", server.base),
        Some(json!({
            "kind": "webhook",
            "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
            "payload": {}
        })),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    assert!(
        receiver.wait_for(1, Duration::from_secs(30)).await,
        "no webhook arrived; stderr:\n{}",
        server.stderr()
    );
    let got = receiver.last().expect("the webhook");
    assert_eq!(got.header("traceparent"), None, "{:?}", got.headers);
    server.terminate(Duration::from_secs(20)).await;
}

/// Every outgoing call is a client span under its attempt, not only webhooks and `http` jobs:
/// a digest's feed fetch and model call, a mail's entitlement check and its SMTP send. And a
/// request that carries a `traceparent` continues the caller's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_and_mail_calls_are_spans_and_a_callers_traceparent_is_continued() {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(smtp) = kairos_testkit::smtp::SmtpSink::start(&dir.path().join("smtp")).await else {
        return; // SmtpSink said why on stderr (and panics where it is required).
    };
    let feeds = TestReceiver::start().await;
    feeds.set_default(
        kairos_testkit::Reply::status(200)
            .with_header("content-type", "application/rss+xml")
            .with_body(
                "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>News</title>\
                 <link>https://example.com/</link><description>d</description>\
                 <item><title>Rust 2.0</title><link>https://example.com/a</link>\
                 <description>Rust 2.0 is out. More later.</description>\
                 <pubDate>Mon, 30 Nov 2026 09:00:00 +0000</pubDate>\
                 <guid>https://example.com/a</guid></item></channel></rss>",
            ),
    );
    let model = TestReceiver::start().await;
    model.set_default(
        kairos_testkit::Reply::status(200)
            .with_header("content-type", "application/json")
            .with_body(
                json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "A summary."}}]})
                .to_string(),
            ),
    );
    let entitled = TestReceiver::start().await;
    entitled.set_default(
        kairos_testkit::Reply::status(200)
            .with_header("content-type", "application/json")
            .with_body(r#"{"entitled": true}"#),
    );
    let (collector, endpoint) = Collector::start().await;
    let model_url = model.url("");
    let smtp_url = smtp.url();
    let server = Server::start_with(
        &dir.path().join("data"),
        Some(TOKEN),
        &[
            ("KAIROS_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("KAIROS_EMAIL_TRANSPORT", "smtp"),
            ("KAIROS_SMTP_URL", smtp_url.as_str()),
            ("KAIROS_OPENAI_API_URL", model_url.trim_end_matches('/')),
            ("KAIROS_OPENAI_API_KEY", "sk-test-not-a-real-key"),
        ],
    )
    .await;
    let http = client();
    let base = server.base.clone();
    let call = |m: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { api(&http, m, url, body).await }
    };

    let (s, b) = call(
        reqwest::Method::POST,
        "/v1/jobs",
        Some(
            json!({"kind": "digest", "payload": {"name": "news", "feeds": [feeds.url("/feed.xml")],
                    "summarizer": "openai", "period": "2026-11-30"}}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let digest_job = b["id"].as_str().expect("digest job id").to_string();
    let (s, b) = call(
        reqwest::Method::PUT,
        "/v1/recipients/usr_1",
        Some(json!({"email": EMAIL, "timezone": "UTC"})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(
        reqwest::Method::PUT,
        "/v1/topics/weekly",
        Some(
            json!({"subject": "Your week", "text": "Hello {{ recipient.id }}",
                    "entitlement_url": entitled.url("/entitled")}),
        ),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(
        reqwest::Method::PUT,
        "/v1/subscriptions/usr_1/weekly",
        Some(json!({"channels": ["email"]})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, sched) = call(
        reqwest::Method::POST,
        "/v1/schedules",
        Some(json!({"name": "weekly", "kind": "email", "topic": "weekly",
                    "cron": "0 9 * * 1", "timezone": "UTC", "period": "iso_week"})),
    )
    .await;
    assert_eq!(s, 201, "{sched}");
    let sid = sched["id"].as_str().expect("schedule id").to_string();
    let (s, b) = call(
        reqwest::Method::POST,
        &format!("/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert!(s == 200 || s == 201, "{b}");

    // A caller's request, with its own trace context.
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let r = http
        .get(format!("{}/v1/schedules/{sid}", server.base))
        .bearer_auth(TOKEN)
        .header("traceparent", format!("00-{caller_trace}-{caller_span}-01"))
        .send()
        .await
        .expect("GET the schedule");
    assert_eq!(r.status(), 200);
    // A malformed traceparent (a trace id that is not hex, and one of all zeros) is ignored:
    // the request is answered and its span is a root of its own.
    for bad in [
        "00-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ] {
        let r = http
            .get(format!("{}/v1/endpoints", server.base))
            .bearer_auth(TOKEN)
            .header("traceparent", bad)
            .send()
            .await
            .expect("GET the endpoints");
        assert_eq!(r.status(), 200, "{bad}");
    }

    // Bounded: at most 30 s for the four calls' spans.
    let names = ["feed GET", "model POST", "entitlement POST", "smtp SEND"];
    let complete = |spans: &[Got]| {
        names.iter().all(|n| spans.iter().any(|s| s.name == *n))
            && spans
                .iter()
                .any(|s| s.attr("http.route") == Some("/v1/schedules/{id}"))
            && spans
                .iter()
                .filter(|s| s.attr("http.route") == Some("/v1/endpoints"))
                .count()
                == 2
    };
    for _ in 0..300 {
        if complete(&collector.spans()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = collector.spans();
    assert!(
        complete(&spans),
        "spans missing: {spans:#?}\nstderr:\n{}",
        server.stderr()
    );
    let attempt_of = |call: &Got| {
        spans
            .iter()
            .find(|a| a.span_id == call.parent)
            .unwrap_or_else(|| panic!("the attempt above {call:?}"))
            .clone()
    };
    for name in names {
        let c = spans.iter().find(|s| s.name == name).expect("the call");
        assert_eq!(c.kind, KIND_CLIENT, "{c:?}");
        let a = attempt_of(c);
        assert_eq!(a.kind, KIND_CONSUMER, "{name} under an attempt: {a:?}");
        assert_eq!(a.trace_id, c.trace_id);
        let kind = if name.starts_with("feed") || name.starts_with("model") {
            assert_eq!(a.attr("kairos.job_id"), Some(digest_job.as_str()));
            "digest"
        } else {
            "email"
        };
        assert_eq!(a.attr("kairos.kind"), Some(kind), "{a:?}");
        if name != "smtp SEND" {
            assert_eq!(c.attr("http.response.status_code"), Some("200"), "{c:?}");
        }
    }
    let smtp_span = spans.iter().find(|s| s.name == "smtp SEND").expect("smtp");
    assert_eq!(smtp_span.attr("http.response.status_code"), Some("250"));
    assert_eq!(smtp.messages().len(), 1, "the mail was sent");

    let got = spans
        .iter()
        .find(|s| s.attr("http.route") == Some("/v1/schedules/{id}"))
        .expect("the caller's request");
    assert_eq!(got.trace_id, caller_trace, "the caller's trace continues");
    assert_eq!(got.parent, caller_span, "a child of the caller's span");
    let own = spans
        .iter()
        .find(|s| s.attr("http.route") == Some("/v1/topics/{name}"))
        .expect("a request without a traceparent");
    assert!(own.parent.is_empty(), "a root of its own: {own:?}");
    assert_ne!(own.trace_id, caller_trace);
    for bad in spans
        .iter()
        .filter(|s| s.attr("http.route") == Some("/v1/endpoints"))
    {
        assert!(
            bad.parent.is_empty(),
            "a malformed traceparent is ignored: {bad:?}"
        );
        assert_ne!(bad.trace_id, caller_trace);
        assert_ne!(bad.trace_id, "0".repeat(32));
    }

    assert_holds_none(
        &spans,
        &[
            TOKEN,
            EMAIL,
            "sk-test-not-a-real-key",
            "127.0.0.1",
            "/feed.xml",
        ],
    );
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}");
}
