//! The daily-digest contract over HTTP: `POST /v1/schedules` with `kind: "digest"` and
//! `catch_up`, field-named validation errors, and `GET /v1/artifacts[/{name}/{period}]` as
//! JSON and HTML — the real app on a real SQLite file, a real feed server on 127.0.0.1:0, the
//! real executor on a manual clock.

use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_testkit::{Reply, TestReceiver};
use serde_json::{Value, json};

const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";

mod common;

use common::TestApp;

struct Api {
    app: TestApp,
}

impl std::ops::Deref for Api {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

impl Api {
    async fn start(now: DateTime<Utc>) -> Api {
        Api {
            app: TestApp::start(now, TOKEN).await,
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (reqwest::StatusCode, String, String) {
        let res = req.bearer_auth(TOKEN).send().await.expect("request");
        let status = res.status();
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        (status, ct, res.text().await.expect("body"))
    }

    async fn post(&self, path: &str, body: Value) -> (reqwest::StatusCode, String, Value) {
        let (s, ct, text) = self
            .send(self.http.post(format!("{}{path}", self.base)).json(&body))
            .await;
        (s, ct, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, accept: Option<&str>) -> (reqwest::StatusCode, String, String) {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        self.send(req).await
    }
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
}

/// The contract's body is accepted as is, shows its catch-up times, and bad fields are
/// answered with problem+json naming the field; nothing is created on error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_schedule_contract_and_field_errors() {
    let api = Api::start(t("2026-10-19T12:00:00Z")).await;
    let body = json!({
        "name": "ai-news-daily",
        "kind": "digest",
        "digest": {"name": "ai-news", "feeds": ["https://example.com/feed.xml"], "summarizer": "extractive"},
        "cron": "0 6 * * *",
        "timezone": "Asia/Tokyo",
        "period": "day",
        "catch_up": ["13:00"]
    });
    let (s, _, v) = api.post("/v1/schedules", body.clone()).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["kind"], "digest");
    assert_eq!(v["catch_up"], json!(["13:00"]));
    assert_eq!(
        v["payload"]["feeds"],
        json!(["https://example.com/feed.xml"])
    );
    assert_eq!(v["next_fire_at"], "2026-10-19T21:00:00.000Z");

    for (change, field) in [
        (
            json!({"digest": {"name": "x", "feeds": []}}),
            "digest.feeds",
        ),
        (
            json!({"digest": {"name": "x", "feeds": ["https://a/f", "file:///etc/passwd"]}}),
            "digest.feeds[1]",
        ),
        (
            json!({"digest": {"name": "x", "feeds": ["https://a/f"], "summarizer": "magic"}}),
            "digest.summarizer",
        ),
        (json!({"catch_up": ["13:00", "25:00"]}), "catch_up[1]"),
        (json!({"catch_up": ["13:00", "13:00"]}), "catch_up[1]"),
        (json!({"payload": {"a": 1}}), "payload"),
    ] {
        let mut b = body.clone();
        b["name"] = json!("another");
        for (k, x) in change.as_object().unwrap() {
            b[k] = x.clone();
        }
        let (s, ct, v) = api.post("/v1/schedules", b).await;
        assert_eq!(s, 422, "{field}: {v}");
        assert_eq!(ct, "application/problem+json");
        assert_eq!(v["field"], field, "{v}");
    }
    // a policy whose worst case exceeds the digest's 15 minutes is refused, with the
    // arithmetic.
    let mut b = body.clone();
    b["name"] = json!("too-patient");
    b["retry"] = json!({"delays": ["5m", "5m", "5m"], "max_attempts": 4});
    let (s, _, v) = api.post("/v1/schedules", b).await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "retry");
    let detail = v["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("exceeds the deadline of 15m"), "{v}");
    assert!(detail.contains("4 attempts × 2m 35s timeout"), "{v}");
    let (_, _, list) = api.get("/v1/schedules", None).await;
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        list["data"].as_array().unwrap().len(),
        1,
        "errors created nothing"
    );
}

/// A digest job builds its artifact; it is listed and served as JSON, and as HTML when the
/// client asks for it; an unknown period is a 404 problem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_are_listed_and_served_as_json_and_html() {
    let feed = TestReceiver::start().await;
    feed.set_default(
        Reply::status(200)
            .with_header("content-type", "application/rss+xml")
            .with_body(
                "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Lab &amp; Co</title>\
                 <item><title>Model &lt;X&gt; ships</title><link>https://lab.example/x</link>\
                 <description>It is out. Details later.</description></item></channel></rss>",
            ),
    );
    let api = Api::start(t("2026-10-20T00:00:00Z")).await;
    let (s, _, job) = api
        .post(
            "/v1/jobs",
            json!({"kind": "digest", "payload": {"name": "ai-news", "feeds": [feed.url("/rss")], "period": "2026-10-20"}}),
        )
        .await;
    assert_eq!(s, 201, "{job}");
    api.engine
        .executor()
        .run_once(api.clock.now())
        .await
        .expect("run");

    let (s, _, list) = api.get("/v1/artifacts?name=ai-news", None).await;
    assert_eq!(s, 200, "{list}");
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["data"][0]["period"], "2026-10-20");
    assert_eq!(list["data"][0]["url"], "/v1/artifacts/ai-news/2026-10-20");
    assert_eq!(list["data"][0]["job_id"], job["id"]);

    let (s, ct, text) = api.get("/v1/artifacts/ai-news/2026-10-20", None).await;
    assert_eq!(s, 200);
    assert!(ct.starts_with("application/json"), "{ct}");
    let a: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(a["data"]["items"][0]["title"], "Model <X> ships");
    assert!(
        a["content"].as_str().unwrap().contains("## Lab & Co"),
        "{a}"
    );

    let (s, ct, html) = api
        .get(
            "/v1/artifacts/ai-news/2026-10-20",
            Some("text/html,application/xhtml+xml,*/*;q=0.8"),
        )
        .await;
    assert_eq!(s, 200);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(html.contains("<h1>ai-news — 2026-10-20</h1>"), "{html}");
    assert!(html.contains("Model &lt;X&gt; ships"), "{html}");
    assert!(html.contains("href=\"https://lab.example/x\""), "{html}");
    // Issue 33, finding 7: the page carries the browser-page security headers, with a policy
    // under which nothing from a feed can run or load.
    let res = api
        .http
        .get(format!("{}/v1/artifacts/ai-news/2026-10-20", api.base))
        .header("accept", "text/html")
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    let h = |n: &str| {
        res.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert!(h("content-security-policy").contains("default-src 'none'"));
    assert!(h("content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(h("x-frame-options"), "DENY");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("referrer-policy"), "no-referrer");
    assert_eq!(h("cache-control"), "no-store");

    let (s, ct, _) = api.get("/v1/artifacts/ai-news/2026-10-21", None).await;
    assert_eq!(s, 404);
    assert_eq!(ct, "application/problem+json");
    let (s, _, _) = api.get("/v1/artifacts?limit=0", None).await;
    assert_eq!(s, 422);
}
