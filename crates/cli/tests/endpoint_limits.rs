//! Endpoint limits end to end (issue 34's contract): `PUT /v1/endpoints/{id}/limits` with a
//! rate of 20/s and a burst of 20 answers 200 with the limits, `GET /v1/endpoints/{id}` shows
//! them; then 200 due deliveries reach a real receiver at no more than 20 in any sliding
//! one-second window after the first second, and all of them arrive. On SQLite and on
//! PostgreSQL; bad limits are a 422 naming the field, and change nothing.

mod common;

use common::{SECRET, Server, TOKEN, api};
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use serde_json::json;
use std::time::{Duration, Instant};

/// Deliveries enqueued.
const DELIVERIES: usize = 200;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The most arrivals in any one-second window that starts at an arrival at least a second
/// after the first.
fn busiest_second_after_the_first(arrivals: &[Instant]) -> usize {
    let mut ats = arrivals.to_vec();
    ats.sort();
    let Some(first) = ats.first().copied() else {
        return 0;
    };
    ats.iter()
        .filter(|t| t.duration_since(first) >= Duration::from_secs(1))
        .map(|t| {
            ats.iter()
                .filter(|o| *o >= t && o.duration_since(*t) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

async fn rate_limit_holds(base: &str) {
    let receiver = TestReceiver::start().await;
    receiver.set_default(Reply::ok());
    let http = client();
    let webhook = json!({"url": receiver.url("/hook"), "secret": SECRET});
    // A job far ahead makes the endpoint (and never runs during the test).
    let (status, first) = api(
        &http,
        reqwest::Method::POST,
        format!("{base}/v1/jobs"),
        Some(json!({"webhook": webhook, "run_at": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let ep = first["endpoint_id"]
        .as_str()
        .expect("endpoint id")
        .to_string();
    let url = format!("{base}/v1/endpoints/{ep}/limits");
    // Bad limits: 422 naming the field, nothing stored.
    for (body, field) in [
        (
            json!({"rate_limit": {"per_second": 0, "burst": 20}}),
            "rate_limit.per_second",
        ),
        (
            json!({"rate_limit": {"per_second": 20, "burst": 0}}),
            "rate_limit.burst",
        ),
        (json!({"max_in_flight": 0}), "max_in_flight"),
    ] {
        let (status, problem) = api(&http, reqwest::Method::PUT, url.clone(), Some(body)).await;
        assert_eq!(status, 422, "{problem}");
        assert!(problem.to_string().contains(field), "{problem}");
    }
    let (status, shown) = api(
        &http,
        reqwest::Method::GET,
        format!("{base}/v1/endpoints/{ep}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["rate_limit"], json!(null), "nothing stored: {shown}");
    let (status, set) = api(
        &http,
        reqwest::Method::PUT,
        url.clone(),
        Some(json!({"rate_limit": {"per_second": 20, "burst": 20}})),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        set,
        json!({"rate_limit": {"per_second": 20, "burst": 20}, "max_in_flight": null})
    );
    for n in 0..DELIVERIES {
        let (status, job) = api(
            &http,
            reqwest::Method::POST,
            format!("{base}/v1/jobs"),
            Some(json!({"webhook": webhook, "payload": {"n": n}})),
        )
        .await;
        assert_eq!(status, 201, "{job}");
        assert_eq!(job["endpoint_id"], json!(ep));
    }
    let (status, shown) = api(
        &http,
        reqwest::Method::GET,
        format!("{base}/v1/endpoints/{ep}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["rate_limit"], json!({"per_second": 20, "burst": 20}));
    assert!(shown["waiting"]["rate_limit"].is_i64(), "{shown}");
    assert!(
        receiver.wait_for(DELIVERIES, Duration::from_secs(60)).await,
        "only {} of {DELIVERIES} deliveries within 60 s",
        receiver.count()
    );
    let got = receiver.received();
    assert_eq!(
        receiver.ids_seen().len(),
        DELIVERIES,
        "every delivery arrived"
    );
    let arrivals: Vec<Instant> = got.iter().map(|r| r.at).collect();
    let busiest = busiest_second_after_the_first(&arrivals);
    eprintln!("busiest second after the first: {busiest} deliveries");
    assert!(
        busiest <= 20,
        "{busiest} deliveries in one second (limit 20/s)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn endpoint_rate_limit_of_20_per_second_holds_for_200_deliveries_sqlite() {
    init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = Server::start_with(dir.path(), Some(TOKEN), &[]).await;
    rate_limit_holds(&node.base).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn endpoint_rate_limit_of_20_per_second_holds_for_200_deliveries_postgres() {
    let url = database_url();
    if !reachable(&url, "The endpoint limits test").await {
        return;
    }
    init_crypto();
    let guard = SchemaGuard::new(url.clone(), "kairos_el");
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", guard.schema.as_str()),
        (
            "KAIROS_SECRET_KEY",
            "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=",
        ),
    ];
    let node = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    rate_limit_holds(&node.base).await;
}
