//! Erasure of a person through the HTTP API on both stores: `DELETE /v1/recipients/{id}`
//! removes the recipient and every stored copy of their address — checked by searching every
//! table of the database and the outbox afterwards — while their suppression stays as a keyed
//! hash that still stops mail to the address; topics and subscriptions can be deleted.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestApp;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{JobKind, RetryPolicy};
use kairos_store::{InboundEventRecord, JobInsert, action};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection};

const TOKEN: &str = "erasure-token";
/// The address as the recipient gave it, and as kairos compares it.
const GIVEN: &str = "Erin.Erased_1@Example.com";
const ADDRESS: &str = "erin.erased_1@example.com";
/// An attribute value only this recipient has.
const NAME: &str = "Erin Unique-Name";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-04-06T07:00:00Z")
        .expect("instant")
        .to_utc()
}

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app
        .http
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, json)
}

/// An email job of `recipient` on topic `weekly`, due at `run_at`.
async fn email_job(app: &TestApp, recipient: &str, run_at: DateTime<Utc>) -> String {
    let id = new_id(IdPrefix::Job, t0());
    app.store
        .job_insert(JobInsert {
            id: id.clone(),
            kind: JobKind("email".into()),
            payload: json!({"topic": "weekly", "recipient_id": recipient}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            retry: RetryPolicy::notification(),
            audience: kairos_core::JobAudience::of_payload(
                &serde_json::json!({"topic": "weekly", "recipient_id": recipient}),
            ),
            retry_is_kind_default: false,
            run_at,
            now: t0(),
            concurrency: None,
            http_origin: None,
        })
        .await
        .expect("insert job");
    id
}

/// The tables (and, on SQLite, columns) holding `needle` in any row, case-insensitively: the
/// whole database is searched, every table, every column.
async fn tables_holding(app: &TestApp, needle: &str) -> Vec<String> {
    let needle = needle.to_lowercase();
    let mut found = Vec::new();
    match &app.pg_schema {
        None => {
            let url = format!("sqlite://{}?mode=ro", app.dir().join("kairos.db").display());
            let mut c = sqlx::SqliteConnection::connect(&url).await.expect("open");
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .fetch_all(&mut c)
            .await
            .expect("tables");
            for t in tables {
                let cols: Vec<String> =
                    sqlx::query_scalar("SELECT name FROM pragma_table_info(?1)")
                        .bind(&t)
                        .fetch_all(&mut c)
                        .await
                        .expect("columns");
                for col in cols {
                    // Names read from the schema itself.
                    let q = format!(
                        "SELECT COUNT(*) FROM \"{t}\" WHERE instr(lower(CAST(\"{col}\" AS TEXT)), ?1) > 0"
                    );
                    let n: i64 = sqlx::query_scalar(AssertSqlSafe(q))
                        .bind(&needle)
                        .fetch_one(&mut c)
                        .await
                        .expect("search");
                    if n > 0 {
                        found.push(format!("{t}.{col}"));
                    }
                }
            }
        }
        Some(schema) => {
            let mut c = sqlx::PgConnection::connect(&common::pg::database_url())
                .await
                .expect("connect");
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
            )
            .bind(schema)
            .fetch_all(&mut c)
            .await
            .expect("tables");
            assert!(tables.len() > 5, "{tables:?}");
            for t in tables {
                // A row cast to text holds every column.
                let q = format!(
                    "SELECT COUNT(*) FROM \"{schema}\".\"{t}\" AS x WHERE strpos(lower(x::text), $1) > 0"
                );
                let n: i64 = sqlx::query_scalar(AssertSqlSafe(q))
                    .bind(&needle)
                    .fetch_one(&mut c)
                    .await
                    .expect("search");
                if n > 0 {
                    found.push(t);
                }
            }
        }
    }
    found
}

/// Outbox files holding `needle` (case-insensitively), and how many files there are.
fn outbox_holding(app: &TestApp, needle: &str) -> (Vec<String>, usize) {
    let dir = app.dir().join("outbox");
    let mut holding = Vec::new();
    let mut total = 0;
    for e in std::fs::read_dir(&dir).expect("outbox") {
        let e = e.expect("entry");
        total += 1;
        let text = String::from_utf8_lossy(&std::fs::read(e.path()).expect("read")).to_lowercase();
        if text.contains(&needle.to_lowercase()) {
            holding.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    (holding, total)
}

async fn erasure_leaves_only_a_keyed_hash(app: TestApp) {
    let put = |path: &str, body: Value| {
        let path = path.to_string();
        let app = &app;
        async move { call(app, Method::PUT, &path, Some(body)).await }
    };
    assert_eq!(
        put("/v1/topics/weekly", json!({"subject": "Week", "text": "Hello {{ recipient.email }} ({{ recipient.attributes.name }})"}))
            .await
            .0,
        200
    );
    let (s, r) = put(
        "/v1/recipients/usr_1",
        json!({"email": GIVEN, "attributes": {"name": NAME}}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    put(
        "/v1/recipients/usr_2",
        json!({"email": "other@example.com", "attributes": {"name": "Otto"}}),
    )
    .await;
    for r in ["usr_1", "usr_2"] {
        let (s, b) = put(
            &format!("/v1/subscriptions/{r}/weekly"),
            json!({"channels": ["email"]}),
        )
        .await;
        assert_eq!(s, 200, "{b}");
    }
    let sent = email_job(&app, "usr_1", t0()).await;
    let other = email_job(&app, "usr_2", t0()).await;
    let pending = email_job(&app, "usr_1", t0() + Duration::days(1)).await;
    app.run_jobs().await;
    let (_, job) = call(&app, Method::GET, &format!("/v1/jobs/{sent}"), None).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let (_, job) = call(&app, Method::GET, &format!("/v1/jobs/{other}"), None).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(
        outbox_holding(&app, ADDRESS),
        (vec![format!("{sent}.eml")], 2)
    );
    // A complaint about the address: stored event, suppression.
    app.store
        .inbound_event_record(InboundEventRecord {
            source: "resend".into(),
            id: "evt_complaint_1".into(),
            event_type: "email.complained".into(),
            provider_message_id: None,
            action: action::SUPPRESSED.into(),
            payload: json!({"type": "email.complained", "data": {"to": [GIVEN], "subject": "Week"}}),
            suppress: vec![GIVEN.into()],
            reason: "complaint".into(),
            now: t0(),
        })
        .await
        .expect("event");
    let (s, _) = call(
        &app,
        Method::POST,
        "/v1/suppressions",
        Some(json!({"email": "keep@example.com"})),
    )
    .await;
    assert_eq!(s, 201);
    let before = tables_holding(&app, ADDRESS).await;
    assert!(
        before.len() >= 4,
        "the address is stored before: {before:?}"
    );

    let (s, b) = call(&app, Method::DELETE, "/v1/recipients/usr_1", None).await;
    assert_eq!((s, b), (204, Value::Null));
    let (s, b) = call(&app, Method::DELETE, "/v1/recipients/usr_1", None).await;
    assert_eq!(s, 404, "{b}");
    assert_eq!(
        call(&app, Method::GET, "/v1/recipients/usr_1", None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(&app, Method::DELETE, "/v1/recipients/nobody", None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(&app, Method::GET, "/v1/subscriptions/usr_1/weekly", None)
            .await
            .0,
        404
    );
    let (_, job) = call(&app, Method::GET, &format!("/v1/jobs/{pending}"), None).await;
    assert_eq!(
        (job["state"].as_str(), job["reason"].as_str()),
        (Some("cancelled"), Some("erased")),
        "{job}"
    );

    // Searched everywhere: no table and no outbox file holds the address or the attributes.
    assert_eq!(tables_holding(&app, ADDRESS).await, Vec::<String>::new());
    assert_eq!(tables_holding(&app, NAME).await, Vec::<String>::new());
    assert_eq!(
        outbox_holding(&app, ADDRESS),
        (Vec::new(), 1),
        "the other recipient's mail stays"
    );

    // The suppression stays, without the address.
    let (_, list) = call(&app, Method::GET, "/v1/suppressions", None).await;
    let data = list["data"].as_array().expect("data");
    assert_eq!(data.len(), 2, "{list}");
    let erased: Vec<_> = data.iter().filter(|d| d["erased"] == true).collect();
    assert_eq!(erased.len(), 1, "{list}");
    assert_eq!(erased[0]["email"], Value::Null);
    assert_eq!(erased[0]["reason"], "complaint");
    let kept: Vec<_> = data.iter().filter(|d| d["erased"] == false).collect();
    assert_eq!(kept[0]["email"], "keep@example.com");
    assert!(!list.to_string().to_lowercase().contains("erin"), "{list}");

    // The address comes back as a new recipient: still never mailed.
    put(
        "/v1/recipients/usr_3",
        json!({"email": ADDRESS, "attributes": {"name": "Back"}}),
    )
    .await;
    put(
        "/v1/subscriptions/usr_3/weekly",
        json!({"channels": ["email"]}),
    )
    .await;
    let again = email_job(&app, "usr_3", t0()).await;
    app.run_jobs().await;
    let (_, job) = call(&app, Method::GET, &format!("/v1/jobs/{again}"), None).await;
    assert_eq!(
        (job["state"].as_str(), job["reason"].as_str()),
        (Some("skipped"), Some("suppressed")),
        "{job}"
    );
    assert_eq!(outbox_holding(&app, ADDRESS).0, Vec::<String>::new());

    // The suppression is still found by the address, and removed.
    let path = format!("/v1/suppressions/{}", GIVEN.to_uppercase());
    assert_eq!(call(&app, Method::DELETE, &path, None).await.0, 204);
    assert_eq!(call(&app, Method::DELETE, &path, None).await.0, 404);
    let (_, list) = call(&app, Method::GET, "/v1/suppressions", None).await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipient_erasure_leaves_no_address_in_any_table_or_the_outbox_sqlite() {
    let app = TestApp::start_with_email(t0(), TOKEN, false)
        .await
        .expect("sqlite");
    erasure_leaves_only_a_keyed_hash(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipient_erasure_leaves_no_address_in_any_table_or_the_outbox_postgres() {
    let Some(app) = TestApp::start_with_email(t0(), TOKEN, true).await else {
        return;
    };
    erasure_leaves_only_a_keyed_hash(app).await;
}

async fn topic_and_subscription_delete(app: TestApp) {
    call(
        &app,
        Method::PUT,
        "/v1/topics/weekly",
        Some(json!({"subject": "Week", "text": "hi"})),
    )
    .await;
    call(
        &app,
        Method::PUT,
        "/v1/recipients/usr_1",
        Some(json!({"email": "a@example.com"})),
    )
    .await;
    call(
        &app,
        Method::PUT,
        "/v1/recipients/usr_2",
        Some(json!({"email": "b@example.com"})),
    )
    .await;
    for r in ["usr_1", "usr_2"] {
        let (s, b) = call(
            &app,
            Method::PUT,
            &format!("/v1/subscriptions/{r}/weekly"),
            Some(json!({"channels": ["email"]})),
        )
        .await;
        assert_eq!(s, 200, "{b}");
    }
    let sub = "/v1/subscriptions/usr_1/weekly";
    assert_eq!(
        call(&app, Method::DELETE, sub, None).await,
        (204, Value::Null)
    );
    let (s, b) = call(&app, Method::DELETE, sub, None).await;
    assert_eq!(s, 404, "{b}");
    assert_eq!(b["status"], 404);
    assert_eq!(call(&app, Method::GET, sub, None).await.0, 404);
    assert_eq!(
        call(&app, Method::GET, "/v1/subscriptions/usr_2/weekly", None)
            .await
            .0,
        200
    );
    assert_eq!(
        call(&app, Method::DELETE, "/v1/topics/weekly", None).await,
        (204, Value::Null)
    );
    assert_eq!(
        call(&app, Method::DELETE, "/v1/topics/weekly", None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(&app, Method::GET, "/v1/topics/weekly", None).await.0,
        404
    );
    assert_eq!(
        call(&app, Method::GET, "/v1/subscriptions/usr_2/weekly", None)
            .await
            .0,
        404,
        "a topic's subscriptions go with it"
    );
    assert_eq!(
        call(&app, Method::GET, "/v1/recipients/usr_2", None)
            .await
            .0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_and_subscription_delete_answer_204_then_404_sqlite() {
    topic_and_subscription_delete(
        TestApp::start_with_email(t0(), TOKEN, false)
            .await
            .expect("sqlite"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_and_subscription_delete_answer_204_then_404_postgres() {
    let Some(app) = TestApp::start_with_email(t0(), TOKEN, true).await else {
        return;
    };
    topic_and_subscription_delete(app).await;
}
