//! The admin's time and cluster pages over HTTP (issue 36's last parts, issue 34's wait
//! reason): the overview's queue depth and lateness p99 charts from the sampler's minutes,
//! the nodes page from the heartbeats, a recipient's webhook notifications on its endpoint's
//! page, and why a due job is not running on its page and in the API. The real app on a real
//! SQLite file, served on 127.0.0.1:0, on a manual clock.

use kairos_core::Clock;
use kairos_core::id::{IdPrefix, new_id};
use kairos_testkit::Reply;
use reqwest::StatusCode;
use serde_json::{Value, json};

mod common;

use common::admin_ui::{SECRET, TOKEN, Ui};

/// A webhook job to the UI's receiver, due now, not run.
async fn enqueue(ui: &Ui, extra: Value) -> String {
    let mut body = json!({
        "kind": "webhook",
        "webhook": {"url": ui.receiver.url("/hook"), "secret": SECRET},
        "payload": {"n": 1},
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let (status, job) = api(ui, reqwest::Method::POST, "/v1/jobs", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    job["id"].as_str().expect("id").to_string()
}

async fn api(
    ui: &Ui,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = ui
        .http
        .request(method, format!("{}{path}", ui.base))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("request");
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Claim every due job at the clock's now for `node`, as a node's executor would (without
/// running them).
async fn claim(ui: &Ui, node: &str) -> Vec<kairos_core::Job> {
    let now = ui.clock.now();
    ui.store
        .job_claim(kairos_store::JobClaim {
            now,
            limit: 100,
            node: node.into(),
            lease_token: new_id(IdPrefix::Lease, now),
            lease_until: now + chrono::Duration::seconds(60),
        })
        .await
        .expect("claim")
}

#[tokio::test]
async fn admin_overview_draws_queue_depth_and_lateness_p99_per_minute_as_svg() {
    let mut ui = Ui::start().await;
    let start = ui.clock.now();
    ui.receiver.respond_with(vec![Reply::status(200)]);
    // Three jobs due at 10:00:00 run 30 s late; two more are left due.
    for _ in 0..3 {
        enqueue(&ui, json!({})).await;
    }
    ui.clock.advance(chrono::Duration::seconds(30));
    ui.engine
        .executor()
        .run_once(ui.clock.now())
        .await
        .expect("executor");
    enqueue(&ui, json!({})).await;
    enqueue(&ui, json!({})).await;
    ui.login().await;
    let before = ui.get("/admin").await;
    assert!(before.body.contains("No samples yet"), "{}", before.body);
    // The leader's sampler, 5 s after the minute ended.
    ui.clock.set(start + chrono::Duration::seconds(65));
    let r = ui
        .engine
        .sampler()
        .run_once(ui.clock.now())
        .await
        .expect("sampler");
    assert!(r.sample.is_some());

    let page = ui.get("/admin").await;
    let body = page.text();
    for id in [
        "chart-depth-hour",
        "chart-depth-day",
        "chart-late-hour",
        "chart-late-day",
    ] {
        assert!(
            body.contains(&format!("<svg id=\"{id}\" class=\"chart\"")),
            "{id}: {body}"
        );
    }
    assert!(
        body.contains("2026-11-30T10:00:00.000Z: 2 due"),
        "the minute's depth in its tooltip: {body}"
    );
    assert!(
        body.contains("2026-11-30T10:00:00.000Z: 30000 ms"),
        "the minute's lateness p99: {body}"
    );
    assert!(
        body.contains("3 started in that minute, lateness p99 <strong>30000 ms</strong>"),
        "{body}"
    );
    assert!(!body.contains("<script"), "no JavaScript needed");
}

#[tokio::test]
async fn admin_nodes_page_shows_leader_heartbeat_start_running_jobs_and_gone_nodes() {
    let mut ui = Ui::start().await;
    let now = ui.clock.now();
    let beat = ui.engine.heartbeat().clone();
    let me = beat.config().node.clone();
    // A node that led once and has been silent for 5 minutes.
    ui.store
        .node_heartbeat(kairos_store::NodeHeartbeat {
            id: "node-gone".into(),
            started_at: now - chrono::Duration::hours(1),
            at: now - chrono::Duration::minutes(5),
            leader: true,
        })
        .await
        .expect("old beat");
    beat.run_once(now - chrono::Duration::seconds(20))
        .await
        .expect("beat");
    // This node leads now: its heartbeat clears the old leader's mark.
    beat.run_once(now).await.expect("beat");
    enqueue(&ui, json!({})).await;
    assert_eq!(claim(&ui, &me).await.len(), 1);
    ui.login().await;

    let page = ui.get("/admin/nodes").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = page.text();
    let row = |id: &str| -> String {
        let i = body
            .find(&format!("<td class=\"mono node\">{id}</td>"))
            .unwrap_or_else(|| panic!("a row for {id}: {body}"));
        body[i..].split("</tr>").next().expect("row").to_string()
    };
    let mine = row(&me);
    assert!(mine.contains(">alive<"), "{mine}");
    assert!(mine.contains("<strong>leader</strong>"), "{mine}");
    assert!(
        mine.contains("2026-11-30T10:00:00.000Z (0 s ago)"),
        "{mine}"
    );
    assert!(
        mine.contains("2026-11-30T09:59:40.000Z"),
        "started at its first beat: {mine}"
    );
    assert!(
        mine.contains("<td class=\"running\"><a href=\"/admin/running\">1</a>"),
        "{mine}"
    );
    let gone = row("node-gone");
    assert!(gone.contains(">gone<"), "{gone}");
    assert!(
        !gone.contains("<strong>leader</strong>"),
        "a gone node leads no more: {gone}"
    );
    assert!(body.contains("<a href=\"/admin/nodes\" id=\"nav-nodes\">Nodes</a>"));
    let running = ui.get("/admin/running").await;
    assert!(
        running
            .body
            .contains("<a id=\"nodes-link\" href=\"/admin/nodes\">"),
        "{}",
        running.body
    );
}

#[tokio::test]
async fn admin_job_page_and_api_say_why_a_due_job_is_not_running_issue_34() {
    let mut ui = Ui::start().await;
    // Two jobs of one key with max 1: one runs, the other waits.
    let key = json!({"concurrency": {"key": "account:42", "max": 1}});
    let a = enqueue(&ui, key.clone()).await;
    let b = enqueue(&ui, key).await;
    let ran = claim(&ui, "n1").await;
    assert_eq!(ran.len(), 1);
    let waiting = if ran[0].id == a { b } else { a };
    ui.login().await;
    let page = ui.get(&format!("/admin/jobs/{waiting}")).await;
    let body = page.text();
    assert!(
        body.contains(
            "<span class=\"state state-available\" id=\"wait-reason\">concurrency_key</span>"
        ),
        "{body}"
    );
    assert!(body.contains("key \"account:42\""), "names the key: {body}");
    let (_, job) = api(
        &ui,
        reqwest::Method::GET,
        &format!("/v1/jobs/{waiting}"),
        None,
    )
    .await;
    assert_eq!(job["wait_reason"], "concurrency_key", "{job}");
    let (_, job) = api(
        &ui,
        reqwest::Method::GET,
        &format!("/v1/jobs/{}", ran[0].id),
        None,
    )
    .await;
    assert!(
        job.get("wait_reason").is_none(),
        "a running job waits on nothing: {job}"
    );

    // An endpoint's rate limit: one delivery per second, the second waits, naming it.
    let c = enqueue(&ui, json!({})).await;
    let (_, cj) = api(&ui, reqwest::Method::GET, &format!("/v1/jobs/{c}"), None).await;
    let ep = cj["endpoint_id"].as_str().expect("endpoint").to_string();
    let (status, limits) = api(
        &ui,
        reqwest::Method::PUT,
        &format!("/v1/endpoints/{ep}/limits"),
        Some(json!({"rate_limit": {"per_second": 1, "burst": 1}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{limits}");
    let d = enqueue(&ui, json!({})).await;
    ui.clock.advance(chrono::Duration::seconds(1));
    let sent: Vec<String> = claim(&ui, "n1").await.into_iter().map(|j| j.id).collect();
    let held = [c, d]
        .into_iter()
        .find(|id| !sent.contains(id))
        .expect("one delivery waits for a token");
    let body = ui.get(&format!("/admin/jobs/{held}")).await.text();
    assert!(
        body.contains("id=\"wait-reason\">rate_limit</span>"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "<a id=\"wait-endpoint\" class=\"mono\" href=\"/admin/endpoints/{ep}\">{ep}</a>"
        )),
        "links the endpoint: {body}"
    );
}

#[tokio::test]
async fn admin_endpoint_page_lists_its_recipients_webhook_notifications() {
    let mut ui = Ui::start().await;
    ui.receiver.respond_with(vec![Reply::status(200)]);
    // An endpoint (made by a job posting to it) and a recipient whose webhook it is.
    let direct = enqueue(&ui, json!({})).await;
    let (_, dj) = api(
        &ui,
        reqwest::Method::GET,
        &format!("/v1/jobs/{direct}"),
        None,
    )
    .await;
    let ep = dj["endpoint_id"].as_str().expect("endpoint").to_string();
    ui.store
        .recipient_upsert(kairos_store::RecipientUpsert {
            id: "rcp_hooked".into(),
            email: "hooked@example.com".into(),
            timezone: "UTC".into(),
            locale: None,
            attributes: json!({}),
            state: kairos_store::RecipientState::Active,
            endpoint_id: Some(ep.clone()),
            now: ui.clock.now(),
        })
        .await
        .expect("recipient");
    // A notification to the recipient's webhook: a webhook job naming the recipient, with
    // no endpoint of its own (what an audience's webhook channel makes).
    let now = ui.clock.now();
    let payload = json!({"topic": "orders", "recipient_id": "rcp_hooked"});
    let notify = ui
        .store
        .job_insert(kairos_store::JobInsert {
            id: new_id(IdPrefix::Job, now),
            kind: kairos_core::JobKind::new("webhook"),
            audience: kairos_core::JobAudience::of_payload(&payload),
            payload,
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: Some("webhook".into()),
            dedupe_key: None,
            retry: kairos_core::RetryPolicy::notification(),
            retry_is_kind_default: false,
            run_at: now,
            now,
            concurrency: None,
            http_origin: None,
        })
        .await
        .expect("insert")
        .job
        .id;
    ui.login().await;
    let body = ui.get(&format!("/admin/endpoints/{ep}")).await.text();
    assert!(body.contains(&direct), "its own deliveries: {body}");
    assert!(
        body.contains(&notify),
        "and its recipient's webhook notifications: {body}"
    );
}
