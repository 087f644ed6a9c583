//! Webhook endpoint health and rotation over HTTP (issue 15 §3): the real app on a real SQLite
//! file served on 127.0.0.1:0, the real engine on a manual clock, a local receiver.
//!
//! - `GET /v1/endpoints` and `/v1/endpoints/{id}`: the `health` object, folded from the
//!   attempt log by the endpoint health service; `previous_secret_expires_at`.
//! - `POST /v1/endpoints/{id}/rotate`: a given or generated secret, 422 naming the field with
//!   nothing changed, 404, 409.
//! - `/admin/endpoints`: health and disabled state, and a re-enable button behind CSRF.

use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};

const TOKEN: &str = "endpoints-test-token-of-at-least-32-chars";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NEW_SECRET: &str = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC";

mod common;

use common::TestApp;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
}

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    let res = req.bearer_auth(TOKEN).send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn get(app: &TestApp, path: &str) -> (u16, Value) {
    call(app.http.get(format!("{}{path}", app.base))).await
}

async fn post(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    call(app.http.post(format!("{}{path}", app.base)).json(&body)).await
}

/// Post a one-attempt webhook job to `rx` and run it; the endpoint's id.
async fn send_one(app: &TestApp, rx: &TestReceiver) -> String {
    let (status, job) = post(
        app,
        "/v1/jobs",
        json!({"kind": "webhook", "webhook": {"url": rx.url("/hook"), "secret": SECRET},
               "payload": {"n": 1}, "retry": {"max_attempts": 1}}),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    app.run_jobs().await;
    job["endpoint_id"].as_str().expect("endpoint").to_string()
}

async fn fold_health(app: &TestApp) {
    let now = app.clock.now() + chrono::Duration::minutes(1);
    app.clock.set(now);
    app.engine
        .endpoint_health()
        .run_once(now)
        .await
        .expect("endpoint health");
}

/// I15-3a: the `health` object of an endpoint, before any send (nulls and zeros, a null
/// rate), and after two failed sends and a success folded in.
#[tokio::test]
async fn i15_3a_endpoint_views_carry_health() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(500), Reply::status(503)]);
    rx.set_default(Reply::ok());
    let app = TestApp::start(t("2026-11-29T09:00:00Z"), TOKEN).await;
    let (status, job) = post(
        &app,
        "/v1/jobs",
        json!({"kind": "webhook", "webhook": {"url": rx.url("/hook"), "secret": SECRET},
               "run_at": "2026-11-30T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    let ep = job["endpoint_id"].as_str().expect("endpoint").to_string();
    let (status, fresh) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert_eq!(status, 200, "{fresh}");
    assert_eq!(
        fresh["health"],
        json!({"last_success_at": null, "last_failure_at": null, "consecutive_failures": 0,
               "failing_since": null, "attempts_24h": 0, "failures_24h": 0,
               "failure_rate_24h": null})
    );
    assert!(fresh["previous_secret_expires_at"].is_null());

    for _ in 0..3 {
        send_one(&app, &rx).await;
        app.clock
            .set(app.clock.now() + chrono::Duration::seconds(30));
    }
    fold_health(&app).await;
    let (_, list) = get(&app, "/v1/endpoints").await;
    let h = &list["data"][0]["health"];
    assert_eq!(list["data"][0]["id"], ep.as_str());
    assert_eq!(h["attempts_24h"], 3, "{h}");
    assert_eq!(h["failures_24h"], 2, "{h}");
    let rate = h["failure_rate_24h"].as_f64().expect("a rate");
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    assert_eq!(h["consecutive_failures"], 0);
    assert!(h["last_success_at"].is_string(), "{h}");
    assert!(h["last_failure_at"].is_string(), "{h}");
    assert!(h["failing_since"].is_null());
    assert!(!list.to_string().contains("whsec_"), "no secret: {list}");
}

/// I15-3c: rotation over the API — a generated secret returned once, a given one not echoed,
/// the window shown as `previous_secret_expires_at` (null after it); bad input is a 422
/// naming the field with nothing changed; unknown ids 404; another endpoint's pair 409.
#[tokio::test]
async fn i15_3c_rotate_route_validates_and_reports_the_window() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-11-29T09:00:00Z");
    let app = TestApp::start(t0, TOKEN).await;
    let ep = send_one(&app, &rx).await;
    let path = format!("/v1/endpoints/{ep}/rotate");

    for (body, field) in [
        (json!({"secret": "nope"}), "secret"),
        (json!({"secret": "whsec_c2hvcnQ="}), "secret"),
        (json!({"secret": SECRET}), "secret"),
        (json!({"window_secs": 2_592_001}), "window_secs"),
        (json!({"window_secs": -1}), "window_secs"),
    ] {
        let (status, p) = post(&app, &path, body.clone()).await;
        assert_eq!(status, 422, "{body}: {p}");
        assert!(p.to_string().contains(field), "{body}: {p}");
        assert!(
            !p.to_string().contains("whsec_c2hvcnQ"),
            "no secret echoed: {p}"
        );
    }
    let (_, same) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert!(
        same["previous_secret_expires_at"].is_null(),
        "nothing changed: {same}"
    );
    let (status, _) = post(&app, "/v1/endpoints/ep_unknown/rotate", json!({})).await;
    assert_eq!(status, 404);

    // Generated: shown once, and a default window of one day.
    let (status, r) = call(app.http.post(format!("{}{path}", app.base))).await;
    assert_eq!(status, 200, "{r}");
    let generated = r["secret"]
        .as_str()
        .expect("a generated secret")
        .to_string();
    assert!(generated.starts_with("whsec_"), "{r}");
    assert_eq!(
        r["endpoint"]["previous_secret_expires_at"],
        "2026-11-30T09:00:00.000Z"
    );
    let (_, shown) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert!(!shown.to_string().contains("whsec_"), "{shown}");
    assert_eq!(
        shown["previous_secret_expires_at"],
        "2026-11-30T09:00:00.000Z"
    );

    // Given: not echoed; the window given.
    let (status, r) = post(
        &app,
        &path,
        json!({"secret": NEW_SECRET, "window_secs": 60}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert!(r.get("secret").is_none(), "{r}");
    assert_eq!(
        r["endpoint"]["previous_secret_expires_at"],
        "2026-11-29T09:01:00.000Z"
    );
    app.clock.set(t0 + chrono::Duration::seconds(60));
    let (_, after) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert!(after["previous_secret_expires_at"].is_null(), "{after}");

    // Another endpoint at the same URL may not take this endpoint's secret.
    let (status, other) = post(
        &app,
        "/v1/jobs",
        json!({"kind": "webhook", "webhook": {"url": rx.url("/hook"), "secret": SECRET},
               "run_at": "2026-12-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 201, "{other}");
    let other_ep = other["endpoint_id"].as_str().expect("endpoint").to_string();
    assert_ne!(
        other_ep, ep,
        "the old pair names a new endpoint after rotation"
    );
    let (status, p) = post(
        &app,
        &format!("/v1/endpoints/{other_ep}/rotate"),
        json!({"secret": NEW_SECRET}),
    )
    .await;
    assert_eq!(status, 409, "{p}");
}

struct Page {
    status: u16,
    body: String,
}

async fn page(req: reqwest::RequestBuilder, cookie: &str) -> Page {
    let res = req.header("cookie", cookie).send().await.expect("request");
    Page {
        status: res.status().as_u16(),
        body: res.text().await.expect("body"),
    }
}

/// `/admin/endpoints`: health and disabled state per endpoint; the enable button works with
/// the session's CSRF token and a forged one changes nothing.
#[tokio::test]
async fn admin_endpoints_page_shows_health_and_enables_with_csrf() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(410)]);
    let app = TestApp::start(t("2026-11-29T09:00:00Z"), TOKEN).await;
    let ep = send_one(&app, &rx).await;
    fold_health(&app).await;

    let anon = app
        .http
        .get(format!("{}/admin/endpoints", app.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(anon.status(), 401);
    let login = app
        .http
        .post(format!("{}/admin/login", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(common::form_body(&[("token", TOKEN)]))
        .send()
        .await
        .expect("login");
    let cookie = login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .expect("session cookie")
        .to_string();
    let list = || app.http.get(format!("{}/admin/endpoints", app.base));
    let p = page(list(), &cookie).await;
    assert_eq!(p.status, 200, "{}", p.body);
    assert!(p.body.contains(&ep), "{}", p.body);
    assert!(p.body.contains("disabled"), "{}", p.body);
    assert!(p.body.contains("HTTP 410 Gone"), "{}", p.body);
    assert!(p.body.contains("1 / 1 failed (100.0%)"), "{}", p.body);
    assert!(!p.body.contains("whsec_"));
    let marker = "name=\"csrf\" value=\"";
    let i = p.body.find(marker).expect("a form") + marker.len();
    let csrf = p.body[i..].split('"').next().expect("csrf").to_string();

    let enable = |csrf: &str| {
        app.http
            .post(format!("{}/admin/endpoints/{ep}/enable", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(common::form_body(&[("csrf", csrf)]))
    };
    let forged = page(enable("forged"), &cookie).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let (_, still) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert!(still["disabled_at"].is_string(), "{still}");
    let done = page(enable(&csrf), &cookie).await;
    assert!(done.status == 303 || done.status == 200, "{}", done.status);
    let (_, on) = get(&app, &format!("/v1/endpoints/{ep}")).await;
    assert!(on["disabled_at"].is_null(), "{on}");
    let p = page(list(), &cookie).await;
    assert!(!p.body.contains("/enable"), "no enable button once enabled");
}

/// Issue 33, finding 5: a URL's user info and query reach the receiver as given, but every view
/// shows them masked — `GET /v1/endpoints`, `/v1/endpoints/{id}`, the job's `webhook`.
#[tokio::test]
async fn url_credentials_are_masked_in_every_view() {
    let rx = TestReceiver::start().await;
    rx.set_default(Reply::ok());
    let app = TestApp::start(t("2026-11-29T09:00:00Z"), TOKEN).await;
    let url = rx
        .url("/hook?token=qtoken&v=2")
        .replace("http://", "http://hookuser:hookpass@");
    let (status, job) = post(
        &app,
        "/v1/jobs",
        json!({"kind": "webhook", "webhook": {"url": url, "secret": SECRET},
               "payload": {"n": 1}, "retry": {"max_attempts": 1}}),
    )
    .await;
    assert_eq!(status, 201, "{job}");
    app.run_jobs().await;
    let got = rx.last().expect("delivered");
    assert_eq!(got.query.as_deref(), Some("token=qtoken&v=2"));
    let id = job["endpoint_id"].as_str().expect("endpoint");
    let masked = format!("http://hookuser:***@{}/hook?token=***&v=***", rx.addr());
    assert_eq!(job["webhook"]["url"], masked.as_str(), "{job}");
    let (_, one) = get(&app, &format!("/v1/endpoints/{id}")).await;
    assert_eq!(one["url"], masked.as_str(), "{one}");
    let (_, list) = get(&app, "/v1/endpoints").await;
    assert_eq!(list["data"][0]["url"], masked.as_str(), "{list}");
    let (_, shown) = get(
        &app,
        &format!("/v1/jobs/{}", job["id"].as_str().expect("id")),
    )
    .await;
    for text in [
        job.to_string(),
        one.to_string(),
        list.to_string(),
        shown.to_string(),
    ] {
        assert!(
            !text.contains("hookpass") && !text.contains("qtoken"),
            "{text}"
        );
    }
}
