//! A person gets a period once whatever schedule carries it (issue 30), on SQLite and on
//! PostgreSQL, through the HTTP API with the real engine, mails on the `file` transport
//! (counted in the outbox) and webhooks to a real receiver on 127.0.0.1:
//!
//! - the audience dedupe key is (topic, recipient, target, period, channel): a weekly
//!   schedule deleted and re-created mid-week, or a second schedule on the topic, creates no
//!   job for a period already mailed (S3-3);
//! - a subscription with `targets` gets one mail and one webhook per target per period;
//!   `targets` is validated (at most 100, no duplicates, not with `target`);
//! - keys written before the change are migrated (0024), so the week of the upgrade is not
//!   mailed again;
//! - fan-out to email and webhook subscribers, each channel once, and a failing webhook
//!   retried and replayed alone, never re-sending the mail (S0-7).

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestApp;
use kairos_testkit::{Reply, TestReceiver};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection};
use std::collections::BTreeSet;

const TOKEN: &str = "audience-periods-token";
const SECRET: &str = "whsec_dGVzdC1zZWNyZXQtb2YtZW5vdWdoLWxlbmd0aA==";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
}

/// Sunday 2026-12-06 08:00 in Tokyo: the weekly schedule (Mondays 09:00 Tokyo) next fires
/// at `MONDAY`, the first firing of ISO week 2026-W50.
fn t0() -> DateTime<Utc> {
    t("2026-12-05T23:00:00Z")
}
const MONDAY: &str = "2026-12-07T00:00:00Z";
const WEEK: &str = "2026-W50";

async fn start(postgres: bool) -> Option<TestApp> {
    TestApp::start_with_email(t0(), TOKEN, postgres).await
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

async fn ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let (s, b) = call(app, method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {b}");
    b
}

/// The topic `weekly`, whose text names the target, and `recipients` subscribed to it with
/// `sub` (channels, target or targets).
async fn audience(app: &TestApp, recipients: &[(&str, Value)], hook: Option<&TestReceiver>) {
    ok(
        app,
        Method::PUT,
        "/v1/topics/weekly",
        json!({"subject": "Week {{ period.key }}",
               "text": "Summary of {{ target }} for {{ recipient.id }}"}),
    )
    .await;
    for (id, sub) in recipients {
        let mut r = json!({"email": format!("{id}@example.com"), "timezone": "Asia/Tokyo"});
        if let Some(h) = hook {
            r["webhook"] = json!({"url": h.url(&format!("/{id}")), "secret": SECRET});
        }
        ok(app, Method::PUT, &format!("/v1/recipients/{id}"), r).await;
        ok(
            app,
            Method::PUT,
            &format!("/v1/subscriptions/{id}/weekly"),
            sub.clone(),
        )
        .await;
    }
}

/// Create an email schedule on `weekly` with `cron` (Tokyo, ISO weeks); its id.
async fn schedule(app: &TestApp, name: &str, cron: &str) -> String {
    let b = ok(
        app,
        Method::POST,
        "/v1/schedules",
        json!({"name": name, "kind": "email", "topic": "weekly", "period": "iso_week",
               "cron": cron, "timezone": "Asia/Tokyo"}),
    )
    .await;
    b["id"].as_str().expect("schedule id").to_string()
}

/// `POST /v1/schedules/{id}/fire`: the jobs it created, and the period.
async fn fire(app: &TestApp, id: &str) -> (i64, String) {
    let (s, b) = call(app, Method::POST, &format!("/v1/schedules/{id}/fire"), None).await;
    assert_eq!(s, 200, "{b}");
    (
        b["created"].as_i64().expect("created"),
        b["period_key"].as_str().unwrap_or_default().to_string(),
    )
}

/// Run every due job at `at` (bounded).
async fn drain(app: &TestApp, at: DateTime<Utc>) {
    app.clock.set(at);
    for _ in 0..50 {
        if app
            .engine
            .executor()
            .run_once(at)
            .await
            .expect("run")
            .claimed
            == 0
        {
            return;
        }
    }
    panic!("the executor did not drain");
}

/// The mails in the outbox, as text.
fn mails(app: &TestApp) -> Vec<String> {
    match std::fs::read_dir(app.dir().join("outbox")) {
        Ok(d) => d
            .filter_map(|e| e.ok())
            .map(|e| std::fs::read_to_string(e.path()).expect("mail"))
            .collect(),
        Err(_) => vec![],
    }
}

/// The scheduler's tick at `at`: the jobs it created (expansions included).
async fn tick(app: &TestApp, at: DateTime<Utc>) -> usize {
    app.clock.set(at);
    let r = app.engine.scheduler().run_once(at).await.expect("tick");
    assert_eq!(r.errors, 0, "{r:?}");
    r.jobs_created
}

// ---------------------------------------------------------------------------------------
// A schedule re-created mid-week, and a second schedule on the topic.

async fn recreated_mid_week(app: TestApp) {
    let subs = [
        ("u1", json!({"channels": ["email"], "target": "rep-a"})),
        ("u2", json!({"channels": ["email"]})),
    ];
    audience(&app, &subs, None).await;
    let a = schedule(&app, "weekly", "0 9 * * 1").await;
    // Monday 09:00 Tokyo: the week's firing, one mail each.
    assert_eq!(tick(&app, t(MONDAY) + Duration::seconds(1)).await, 2);
    drain(&app, t(MONDAY) + Duration::seconds(2)).await;
    assert_eq!(mails(&app).len(), 2);

    // Wednesday: the schedule is deleted and created again, then fired by hand.
    let wed = t("2026-12-09T02:00:00Z");
    app.clock.set(wed);
    let (s, b) = call(&app, Method::DELETE, &format!("/v1/schedules/{a}"), None).await;
    assert_eq!(s, 204, "{b}");
    let b = schedule(&app, "weekly", "0 9 * * 1").await;
    assert_ne!(a, b);
    let (created, period) = fire(&app, &b).await;
    assert_eq!(period, WEEK);
    assert_eq!(
        created, 0,
        "the re-created schedule mails nobody the week again"
    );

    // A second schedule on the topic, firing on Wednesday 12:00 Tokyo of the same week.
    let c = schedule(&app, "weekly-too", "0 12 * * 3").await;
    assert_eq!(
        tick(&app, t("2026-12-09T03:00:01Z")).await,
        0,
        "a second schedule on the topic creates no job for the week"
    );
    assert_eq!(fire(&app, &c).await.0, 0);
    drain(&app, t("2026-12-09T03:00:02Z")).await;
    assert_eq!(mails(&app).len(), 2, "nobody got a second mail for {WEEK}");

    // The next week is mailed once, by the two schedules together.
    assert_eq!(tick(&app, t("2026-12-14T00:00:01Z")).await, 2);
    assert_eq!(tick(&app, t("2026-12-16T03:00:01Z")).await, 0);
    drain(&app, t("2026-12-16T03:00:02Z")).await;
    assert_eq!(mails(&app).len(), 4);
}

/// S3-3: the key is (subscriber, target, ISO week), not the schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weekly_schedule_recreated_mid_week_mails_nobody_twice_s3_3_sqlite() {
    recreated_mid_week(start(false).await.expect("sqlite")).await;
}

/// S3-3, on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weekly_schedule_recreated_mid_week_mails_nobody_twice_s3_3_postgres() {
    let Some(app) = start(true).await else { return };
    recreated_mid_week(app).await;
}

// ---------------------------------------------------------------------------------------
// Several targets; fan-out to email and webhook.

async fn targets_fan_out(app: TestApp) {
    let hook = TestReceiver::start().await;
    let subs = [
        (
            "u1",
            json!({"channels": ["email", "webhook"], "targets": ["rep-a", "rep-b"]}),
        ),
        ("u2", json!({"channels": ["email", "webhook"]})),
        (
            "u3",
            json!({"channels": ["email", "webhook"], "target": "rep-c"}),
        ),
    ];
    audience(&app, &subs, Some(&hook)).await;
    let (_, v) = call(&app, Method::GET, "/v1/subscriptions/u1/weekly", None).await;
    assert_eq!(v["targets"], json!(["rep-a", "rep-b"]), "{v}");
    assert_eq!(v["target"], "rep-a", "{v}");
    let (_, v) = call(&app, Method::GET, "/v1/subscriptions/u3/weekly", None).await;
    assert_eq!(v["targets"], json!(["rep-c"]), "{v}");
    let (_, v) = call(&app, Method::GET, "/v1/subscriptions/u2/weekly", None).await;
    assert_eq!(v["targets"], json!([]), "{v}");
    assert_eq!(v["target"], Value::Null, "{v}");

    schedule(&app, "weekly", "0 9 * * 1").await;
    // u1: 2 targets × 2 channels; u2 and u3: 2 channels.
    assert_eq!(tick(&app, t(MONDAY) + Duration::seconds(1)).await, 8);
    // A double-fired clock creates nothing more.
    assert_eq!(tick(&app, t(MONDAY) + Duration::seconds(2)).await, 0);
    drain(&app, t(MONDAY) + Duration::seconds(3)).await;

    let got: BTreeSet<String> = mails(&app)
        .iter()
        .map(|m| {
            let to = ["u1", "u2", "u3"]
                .into_iter()
                .find(|r| m.contains(&format!("{r}@example.com")))
                .expect("a recipient");
            let about = ["rep-a", "rep-b", "rep-c"]
                .into_iter()
                .find(|x| m.contains(&format!("Summary of {x} for")))
                .unwrap_or("-");
            format!("{to}:{about}")
        })
        .collect();
    let want: BTreeSet<String> = ["u1:rep-a", "u1:rep-b", "u2:-", "u3:rep-c"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(got, want, "one mail per target");
    assert_eq!(mails(&app).len(), 4);

    if !hook.wait_for(4, std::time::Duration::from_secs(5)).await {
        let (_, jobs) = call(&app, Method::GET, "/v1/jobs?kind=webhook", None).await;
        panic!("{} webhooks: {jobs}", hook.count());
    }
    assert_eq!(hook.count(), 4, "one webhook per target");
    assert!(hook.ids_seen().values().all(|n| *n == 1), "no repeat");
    let webhooks: BTreeSet<String> = hook
        .received()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).expect("json");
            assert_eq!(b["period_key"], WEEK);
            format!("{} {}", r.path, b["text"].as_str().unwrap_or_default())
        })
        .collect();
    for want in [
        "/u1 Summary of rep-a for u1",
        "/u1 Summary of rep-b for u1",
        "/u3 Summary of rep-c for u3",
    ] {
        assert!(webhooks.contains(want), "{want} in {webhooks:?}");
    }
    assert!(
        webhooks.iter().any(|w| w.starts_with("/u2 ")),
        "{webhooks:?}"
    );
}

/// A subscription with `targets` gets one mail and one webhook per target per period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_targets_get_one_mail_and_webhook_each_per_period_sqlite() {
    targets_fan_out(start(false).await.expect("sqlite")).await;
}

/// Fan-out end to end on PostgreSQL: subscribers on email and webhook, the weekly firing,
/// every subscriber gets each channel once per target (S3-3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_on_postgres_every_subscriber_gets_each_channel_once_s3_3() {
    let Some(app) = start(true).await else { return };
    targets_fan_out(app).await;
}

/// `targets`: at most 100, each an id, no duplicates, not with `target` — a 422 naming the
/// field, and the subscription unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_targets_are_422_naming_the_field_and_change_nothing() {
    let app = start(false).await.expect("sqlite");
    audience(
        &app,
        &[("u1", json!({"targets": ["rep-a", "rep-b"]}))],
        None,
    )
    .await;
    let many: Vec<String> = (0..101).map(|i| format!("rep-{i}")).collect();
    let hundred: Vec<String> = (0..100).map(|i| format!("rep-{i}")).collect();
    for (body, field) in [
        (json!({"targets": many}), "targets"),
        (json!({"target": "rep-a", "targets": ["rep-b"]}), "targets"),
        (json!({"targets": ["rep-a", "rep-a"]}), "targets[1]"),
        (json!({"targets": ["rep-a", ""]}), "targets[1]"),
        (json!({"targets": ["rep\u{7}"]}), "targets[0]"),
    ] {
        let (s, b) = call(
            &app,
            Method::PUT,
            "/v1/subscriptions/u1/weekly",
            Some(body.clone()),
        )
        .await;
        assert_eq!(s, 422, "{body}: {b}");
        assert!(b.to_string().contains(field), "{field} in {b}");
    }
    let (_, v) = call(&app, Method::GET, "/v1/subscriptions/u1/weekly", None).await;
    assert_eq!(v["targets"], json!(["rep-a", "rep-b"]), "unchanged: {v}");
    let v = ok(
        &app,
        Method::PUT,
        "/v1/subscriptions/u1/weekly",
        json!({"targets": hundred}),
    )
    .await;
    assert_eq!(v["targets"].as_array().map(Vec::len), Some(100));
}

// ---------------------------------------------------------------------------------------
// A failing webhook retried and replayed alone.

async fn partial_success(app: TestApp) {
    let hook = TestReceiver::start().await;
    hook.respond_with(vec![Reply::status(500); 3]);
    audience(
        &app,
        &[(
            "u1",
            json!({"channels": ["email", "webhook"], "target": "rep-a"}),
        )],
        Some(&hook),
    )
    .await;
    schedule(&app, "weekly", "0 9 * * 1").await;
    let mut at = t(MONDAY) + Duration::seconds(1);
    assert_eq!(tick(&app, at).await, 2);
    // The mail goes; the webhook fails, retries after its delays (with jitter) and dies
    // after its third attempt.
    for _ in 0..3 {
        drain(&app, at).await;
        at += Duration::minutes(40);
    }
    assert_eq!(hook.count(), 3);
    assert_eq!(mails(&app).len(), 1);
    let (_, jobs) = call(&app, Method::GET, "/v1/jobs?kind=webhook", None).await;
    let job = &jobs["data"][0];
    assert_eq!(job["state"], "dead", "{jobs}");
    let id = job["id"].as_str().expect("id").to_string();

    // The receiver is fixed (it answers 200 now); the dead webhook is replayed.
    let (s, b) = call(&app, Method::POST, &format!("/v1/jobs/{id}/retry"), None).await;
    assert!((200..300).contains(&s), "{s} {b}");
    drain(&app, at).await;
    assert_eq!(hook.count(), 4);
    let (_, j) = call(&app, Method::GET, &format!("/v1/jobs/{id}"), None).await;
    assert_eq!(j["state"], "succeeded", "{j}");
    // One webhook id for every attempt (a receiver that deduplicates sees one message).
    assert_eq!(hook.ids_seen().len(), 1, "{:?}", hook.ids_seen());
    // The week fired again, by hand and by the clock: nothing new.
    drain(&app, at + Duration::minutes(1)).await;
    assert_eq!(tick(&app, at + Duration::minutes(2)).await, 0);
    drain(&app, at + Duration::minutes(3)).await;
    assert_eq!(
        mails(&app).len(),
        1,
        "the succeeded mail is never sent again"
    );
    assert_eq!(hook.count(), 4);
}

/// S0-7 on the audience path: the webhook fails while the mail succeeds; retries and a
/// replay send the webhook until it succeeds and never the mail again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_success_never_resends_succeeded_channel_s0_7_sqlite() {
    partial_success(start(false).await.expect("sqlite")).await;
}

/// S0-7 on the audience path, on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_success_never_resends_succeeded_channel_s0_7_postgres() {
    let Some(app) = start(true).await else { return };
    partial_success(app).await;
}

// ---------------------------------------------------------------------------------------
// The upgrade: keys written before 0024.

/// Run `sql` on the app's database directly, as an older version would have left it.
async fn raw(app: &TestApp, sql: &str) {
    match &app.pg_schema {
        None => {
            let url = format!("sqlite://{}", app.dir().join("kairos.db").display());
            let mut c = sqlx::SqliteConnection::connect(&url).await.expect("open");
            sqlx::query(AssertSqlSafe(sql.to_string()))
                .execute(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        Some(schema) => {
            let mut c = sqlx::PgConnection::connect(&common::pg::database_url())
                .await
                .expect("connect");
            sqlx::query(AssertSqlSafe(format!("SET search_path TO \"{schema}\"")))
                .execute(&mut c)
                .await
                .expect("search path");
            sqlx::query(AssertSqlSafe(sql.to_string()))
                .execute(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
}

/// The key an older version wrote: the schedule id first.
fn old_key(schedule: &str, recipient: &str, target: &str, channel: &str) -> String {
    let part = |s: &str| format!("{}:{s}", s.len());
    format!(
        "aud:{}|{}|{}|{}|{}",
        part(schedule),
        part(recipient),
        part(target),
        part(WEEK),
        part(channel)
    )
}

async fn upgrade_week(app: TestApp) {
    let subs = [
        ("u1", json!({"channels": ["email"], "target": "rep-a"})),
        ("u2", json!({"channels": ["email"], "target": "rep-b"})),
    ];
    audience(&app, &subs, None).await;
    let a = schedule(&app, "weekly", "0 9 * * 1").await;
    assert_eq!(tick(&app, t(MONDAY) + Duration::seconds(1)).await, 2);
    drain(&app, t(MONDAY) + Duration::seconds(2)).await;
    assert_eq!(mails(&app).len(), 2);

    // The database as the version before 0024 left it: u1's job under the old key, u2's
    // job pruned and only its old key kept as a tombstone; no `targets` column.
    let (u1, u2) = (
        old_key(&a, "u1", "rep-a", "email"),
        old_key(&a, "u2", "rep-b", "email"),
    );
    raw(
        &app,
        &format!("UPDATE jobs SET dedupe_key = '{u1}' WHERE CAST(payload AS TEXT) LIKE '%\"u1\"%'"),
    )
    .await;
    raw(&app, "DELETE FROM job_attempts WHERE job_id IN (SELECT id FROM jobs WHERE dedupe_key LIKE 'aud2:%')").await;
    raw(&app, "DELETE FROM jobs WHERE dedupe_key LIKE 'aud2:%'").await;
    let finished = if app.pg_schema.is_some() {
        "now()"
    } else {
        "0"
    };
    raw(
        &app,
        &format!(
            "INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at) VALUES ('{u2}', 'job_pruned', {finished})"
        ),
    )
    .await;
    raw(&app, "ALTER TABLE subscriptions DROP COLUMN targets").await;
    raw(&app, "DELETE FROM _sqlx_migrations WHERE version = 24").await;

    app.store.migrate().await.expect("migrate to 0024");
    let (_, v) = call(&app, Method::GET, "/v1/subscriptions/u2/weekly", None).await;
    assert_eq!(v["targets"], json!(["rep-b"]), "targets from target: {v}");

    // After the upgrade the week is fired again, by the same schedule and by a re-created
    // one: nobody is mailed the week again.
    app.clock.set(t("2026-12-09T02:00:00Z"));
    assert_eq!(
        fire(&app, &a).await.0,
        0,
        "the upgrade week is not mailed again"
    );
    let (s, _) = call(&app, Method::DELETE, &format!("/v1/schedules/{a}"), None).await;
    assert_eq!(s, 204);
    let b = schedule(&app, "weekly", "0 9 * * 1").await;
    assert_eq!(fire(&app, &b).await.0, 0);
    drain(&app, t("2026-12-09T02:00:01Z")).await;
    assert_eq!(mails(&app).len(), 2);
}

/// Migration 0024 rewrites the keys of jobs and tombstones an older version wrote, so the
/// week of the upgrade is not mailed again (S3-3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_week_is_not_mailed_again_after_migration_0024_s3_3_sqlite() {
    upgrade_week(start(false).await.expect("sqlite")).await;
}

/// Migration 0024 on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_week_is_not_mailed_again_after_migration_0024_s3_3_postgres() {
    let Some(app) = start(true).await else { return };
    upgrade_week(app).await;
}
