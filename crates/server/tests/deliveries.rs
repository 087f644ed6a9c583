//! The delivery log through the API and the admin (`GET /v1/deliveries`,
//! `/admin/deliveries`), the `channel` filter of the job lists, and the occurrence status
//! rule over real stored jobs: the real app on a real SQLite file, served on 127.0.0.1:0.
//! Jobs are written and finished through the store the engine uses (claim, then complete),
//! so each row holds exactly the states a test asks about.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestApp;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{AttemptOutcome, ErrorClass, JobKind, RetryPolicy};
use kairos_store::{Attempt, JobClaim, JobComplete, JobInsert, Transition};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "deliveries-test-token-of-at-least-32-chars";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T09:00:00Z")
        .expect("instant")
        .to_utc()
}

/// A job as audience expansion writes it (or, with `schedule`, a schedule's channel job).
fn audience_job(rcp: &str, target: Option<&str>, period: &str, ch: &str) -> JobInsert {
    JobInsert {
        id: new_id(IdPrefix::Job, t0()),
        kind: JobKind::new(ch),
        payload: json!({"topic": "news", "recipient_id": rcp, "target": target, "channel": ch}),
        endpoint_id: None,
        schedule_id: None,
        fire_at: Some(t0()),
        period_key: Some(period.into()),
        channel: Some(ch.into()),
        dedupe_key: Some(format!("news/{rcp}/{target:?}/{period}/{ch}")),
        retry: RetryPolicy::notification(),
        audience: kairos_core::JobAudience::of_payload(
            &serde_json::json!({"topic": "news", "recipient_id": rcp, "target": target, "channel": ch}),
        ),
        retry_is_kind_default: false,
        run_at: t0(),
        now: t0(),
        concurrency: None,
        http_origin: None,
    }
}

/// Insert the jobs and move each, through a claim and a completion, to its final state.
async fn seed(app: &TestApp, jobs: Vec<(JobInsert, &str)>) -> Vec<String> {
    let mut ids = Vec::new();
    for (j, _) in &jobs {
        ids.push(
            app.store
                .job_insert(j.clone())
                .await
                .expect("insert")
                .job
                .id,
        );
    }
    let claimed = app
        .store
        .job_claim(JobClaim {
            now: t0(),
            limit: 100,
            node: "test".into(),
            lease_token: new_id(IdPrefix::Lease, t0()),
            lease_until: t0() + Duration::seconds(30),
        })
        .await
        .expect("claim");
    let mut done = Vec::new();
    for c in claimed {
        let Some(i) = ids.iter().position(|id| *id == c.id) else {
            continue;
        };
        let (transition, outcome, error) = match jobs[i].1 {
            "succeeded" => (Transition::Succeeded, AttemptOutcome::Succeeded, None),
            "skipped" => (
                Transition::Skipped("unsubscribed".into()),
                AttemptOutcome::Skipped,
                None,
            ),
            _ => (Transition::Dead, AttemptOutcome::Failed, Some("HTTP 503")),
        };
        done.push(JobComplete {
            id: c.id.clone(),
            lease_token: c.lease_token.clone().unwrap_or_default(),
            attempt: Attempt {
                job_id: c.id.clone(),
                attempt: c.attempt,
                started_at: t0(),
                finished_at: t0() + Duration::milliseconds(5),
                outcome,
                error_class: error.map(|_| ErrorClass::Transient),
                status_code: Some(if error.is_some() { 503 } else { 200 }),
                error: error.map(str::to_string),
                response: None,
                provider_id: None,
                node: Some("test".into()),
            },
            transition,
            record_exposure: false,
        });
    }
    app.store.job_complete_many(done).await.expect("complete");
    ids
}

async fn get(app: &TestApp, path: &str) -> (StatusCode, Value) {
    let res = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    let status = res.status();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn recipients(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| format!("{}/{}", d["recipient"].as_str().unwrap_or(""), d["target"]))
        .collect()
}

/// Three recipients of `news` in one week: r1's mail died and its webhook was sent, r2 got
/// both, r3 (a second target) got neither.
async fn three_deliveries(app: &TestApp) -> Vec<String> {
    seed(
        app,
        vec![
            (audience_job("r1", Some("t1"), "2026-W49", "email"), "dead"),
            (
                audience_job("r1", Some("t1"), "2026-W49", "webhook"),
                "succeeded",
            ),
            (
                audience_job("r2", Some("t1"), "2026-W49", "email"),
                "succeeded",
            ),
            (
                audience_job("r2", Some("t1"), "2026-W49", "webhook"),
                "succeeded",
            ),
            (audience_job("r3", Some("t2"), "2026-W49", "email"), "dead"),
            (
                audience_job("r3", Some("t2"), "2026-W49", "webhook"),
                "dead",
            ),
        ],
    )
    .await
}

/// S3-14: "mail died and webhook sent" is one question over two state axes; plain `state`
/// matches any channel; every key filter narrows; the cursor pages; a bad filter is a 422
/// naming it.
#[tokio::test]
async fn deliveries_find_mail_dead_and_webhook_sent_on_two_state_axes_s3_14() {
    let app = TestApp::start(t0(), TOKEN).await;
    three_deliveries(&app).await;
    let (r1, r2, r3) = ("r1/\"t1\"", "r2/\"t1\"", "r3/\"t2\"");

    let (s, page) = get(
        &app,
        "/v1/deliveries?state.email=dead&state.webhook=succeeded",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert_eq!(recipients(&page), [r1], "{page}");
    let row = &page["data"][0];
    assert_eq!(row["topic"], "news");
    assert_eq!(row["period"], "2026-W49");
    assert_eq!(row["status"], "partial", "{row}");
    assert_eq!(row["channels"]["email"]["state"], "dead", "{row}");
    assert_eq!(row["channels"]["email"]["attempts"], 1);
    assert_eq!(row["channels"]["email"]["last_error"], "HTTP 503");
    assert_eq!(row["channels"]["webhook"]["state"], "succeeded");
    assert!(
        row["channels"]["webhook"]["job_id"]
            .as_str()
            .is_some_and(|j| j.starts_with("job_"))
    );

    let (_, page) = get(&app, "/v1/deliveries?state.email=succeeded").await;
    assert_eq!(recipients(&page), [r2], "not r1, whose mail died");
    let (_, page) = get(&app, "/v1/deliveries?state=dead").await;
    assert_eq!(recipients(&page), [r3, r1], "any channel dead");
    let (_, page) = get(&app, "/v1/deliveries?channel=webhook&state=dead").await;
    assert_eq!(recipients(&page), [r3]);
    let (_, page) = get(
        &app,
        "/v1/deliveries?topic=news&recipient=r2&period=2026-W49",
    )
    .await;
    assert_eq!(recipients(&page), [r2]);
    let (_, page) = get(&app, "/v1/deliveries?target=t2").await;
    assert_eq!(recipients(&page), [r3]);
    let (_, page) = get(&app, "/v1/deliveries?topic=other").await;
    assert_eq!(recipients(&page), Vec::<String>::new());

    let (_, first) = get(&app, "/v1/deliveries?limit=2").await;
    assert_eq!(recipients(&first), [r3, r2]);
    let cursor = first["next_before"].as_str().expect("a cursor").to_string();
    let (_, second) = get(&app, &format!("/v1/deliveries?limit=2&before={cursor}")).await;
    assert_eq!(recipients(&second), [r1]);
    assert!(second["next_before"].is_null(), "{second}");

    for (query, field) in [
        ("state.push=dead", "state.push"),
        ("state.email=lost", "state.email"),
        ("state=lost", "state"),
        ("channel=fax", "channel"),
        ("colour=red", "colour"),
        ("before=garbage", "before"),
    ] {
        let res = app
            .http
            .get(format!("{}/v1/deliveries?{query}", app.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(
            res.headers()["content-type"],
            "application/problem+json",
            "{query}"
        );
        let p: Value = res.json().await.expect("problem");
        assert_eq!(p["field"], field, "{p}");
    }
    let res = app
        .http
        .get(format!("{}/v1/deliveries", app.base))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}

/// `GET /v1/jobs?channel=email` lists the email jobs only.
#[tokio::test]
async fn jobs_list_filters_by_channel() {
    let app = TestApp::start(t0(), TOKEN).await;
    let ids = three_deliveries(&app).await;
    let (s, page) = get(&app, "/v1/jobs?channel=email").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    let mut got: Vec<String> = page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|j| j["id"].as_str().expect("id").to_string())
        .collect();
    got.sort();
    let mut want = vec![ids[0].clone(), ids[2].clone(), ids[4].clone()];
    want.sort();
    assert_eq!(got, want, "{page}");
    let (_, all) = get(&app, "/v1/jobs").await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(6));
}

/// An occurrence whose jobs were all skipped is `skipped`, not `success`; skipped plus dead
/// is `failure` (nothing was delivered), not `partial` (S0-7).
#[tokio::test]
async fn occurrence_all_skipped_is_skipped_and_skipped_plus_dead_is_failure_s0_7() {
    let app = TestApp::start(t0(), TOKEN).await;
    let res = app
        .http
        .post(format!("{}/v1/schedules", app.base))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "s", "cron": "0 9 * * *", "kind": "webhook",
                      "webhook": {"url": "https://example.com/h",
                                  "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::CREATED);
    let sid = res.json::<Value>().await.expect("schedule")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let job = |period: &str, ch: &str| {
        let mut j = audience_job("r1", None, period, ch);
        j.schedule_id = Some(sid.clone());
        j.dedupe_key = Some(format!("{sid}/{period}/{ch}"));
        j
    };
    seed(
        &app,
        vec![
            (job("2026-11-28", "email"), "skipped"),
            (job("2026-11-28", "webhook"), "skipped"),
            (job("2026-11-29", "email"), "skipped"),
            (job("2026-11-29", "webhook"), "dead"),
        ],
    )
    .await;
    let (s, page) = get(&app, &format!("/v1/occurrences?schedule={sid}")).await;
    assert_eq!(s, StatusCode::OK, "{page}");
    let status = |period: &str| {
        page["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|o| o["period_key"] == period)
            .map(|o| o["status"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(status("2026-11-28"), "skipped", "{page}");
    assert_eq!(status("2026-11-29"), "failure", "{page}");
}

/// The admin page shows the same rows as the API, filtered on two state axes, escaped, linked
/// from the navigation; a bad filter is named; the admin jobs list filters by channel.
#[tokio::test]
async fn admin_deliveries_page_shows_the_same_rows_and_admin_jobs_filter_by_channel() {
    let app = TestApp::start(t0(), TOKEN).await;
    let ids = three_deliveries(&app).await;
    seed(
        &app,
        vec![(
            audience_job("<b>x</b>", None, "2026-W48", "email"),
            "succeeded",
        )],
    )
    .await;
    let login = app
        .http
        .post(format!("{}/admin/login", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(common::form_body(&[("token", TOKEN)]))
        .send()
        .await
        .expect("login");
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_string();
    let page = |path: &str| {
        let req = app
            .http
            .get(format!("{}{path}", app.base))
            .header("cookie", cookie.clone());
        async move {
            let res = req.send().await.expect("page");
            assert_eq!(res.status(), StatusCode::OK);
            res.text().await.expect("body")
        }
    };
    let all = page("/admin/deliveries").await;
    assert!(
        all.contains("href=\"/admin/deliveries\""),
        "linked from the navigation"
    );
    assert_eq!(all.matches("class=\"delivery\"").count(), 4, "{all}");
    assert!(
        all.contains("&lt;b&gt;x&lt;") && !all.contains("<b>x</b>"),
        "escaped"
    );

    let both = page("/admin/deliveries?state.email=dead&state.webhook=succeeded").await;
    assert_eq!(both.matches("class=\"delivery\"").count(), 1, "{both}");
    assert!(both.contains(">r1<") && !both.contains(">r2<"), "{both}");
    assert!(both.contains("HTTP 503"), "{both}");
    let bad = page("/admin/deliveries?state.push=dead").await;
    assert!(bad.contains("state.push: "), "{bad}");
    assert!(bad.contains("No deliveries match"), "{bad}");

    let jobs = page("/admin/jobs?channel=webhook").await;
    assert!(jobs.contains(&ids[1]) && jobs.contains(&ids[3]), "{jobs}");
    assert!(!jobs.contains(&ids[0]) && !jobs.contains(&ids[2]), "{jobs}");
}
