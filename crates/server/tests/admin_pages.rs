//! The admin's connected pages over HTTP (issue 36): every id a link, the schedule page with
//! its target masked and its actions, create/edit with the API's validation, search, running
//! jobs and nodes, the endpoint page with deliveries, resend, test event and rotation, replay
//! rounds, `retrying`, and the opt-in live refresh. The real app on a real SQLite file,
//! served on 127.0.0.1:0, jobs run by the real executor on a manual clock.

use kairos_core::Clock;
use kairos_testkit::Reply;
use reqwest::StatusCode;
use serde_json::json;

mod common;

use common::admin_ui::{SECRET, Ui};

/// A webhook schedule named `name` posting to the UI's receiver.
async fn webhook_schedule(ui: &Ui, name: &str) -> kairos_store::Schedule {
    ui.kairos
        .schedule_create(
            serde_json::from_value(json!({
                "name": name,
                "cron": "0 9 * * *",
                "timezone": "Europe/Paris",
                "period": "day",
                "webhook": {"url": ui.receiver.url("/hook"), "secret": SECRET},
                "payload": {"report": "daily-sales"},
                "retry": {"max_attempts": 1},
            }))
            .expect("schedule body"),
        )
        .await
        .expect("schedule")
}

async fn run(ui: &Ui) {
    ui.engine
        .executor()
        .run_once(ui.clock.now())
        .await
        .expect("executor");
}

#[tokio::test]
async fn admin_job_page_links_its_schedule_occurrence_and_endpoint_and_lists_name_schedules() {
    let mut ui = Ui::start().await;
    let s = webhook_schedule(&ui, "nightly-export").await;
    ui.receiver.respond_with(vec![Reply::status(500)]);
    let fired = ui.kairos.schedule_fire_now(&s.id).await.expect("fire");
    let job_id = fired.created[0].clone();
    run(&ui).await;
    let (job, _) = ui.kairos.job_get(&job_id).await.expect("job");
    let ep = job
        .endpoint_id
        .clone()
        .expect("a webhook job has an endpoint");
    ui.login().await;

    let list = ui.get("/admin/jobs").await;
    assert!(
        list.body.contains(&format!(
            "href=\"/admin/schedules/{}\" title=\"{}\">nightly-export</a>",
            s.id, s.id
        )),
        "the list shows the schedule by name, linked: {}",
        list.body
    );
    let page = ui.get(&format!("/admin/jobs/{job_id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let text = page.text();
    assert!(
        text.contains(&format!(
            "<a id=\"schedule-link\" href=\"/admin/schedules/{}\">nightly-export</a>",
            s.id
        )),
        "{text}"
    );
    let period = job.period_key.clone().expect("period");
    assert!(
        text.contains(&format!(
            "href=\"/admin/schedules/{}/occurrences?period={period}\">{period}</a>",
            s.id
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("href=\"/admin/endpoints/{ep}\">{ep}</a>")),
        "{text}"
    );
    // The links lead somewhere: the schedule's page and the endpoint's page.
    assert_eq!(
        ui.get(&format!("/admin/schedules/{}", s.id)).await.status,
        StatusCode::OK
    );
    assert_eq!(
        ui.get(&format!("/admin/endpoints/{ep}")).await.status,
        StatusCode::OK
    );
    // An available job that already ran is waiting for its retry: `retrying`, not `available`.
    let retrying = ui.job_with_retries().await;
    let list = ui.get("/admin/jobs").await;
    assert!(
        list.body.contains(&format!("{retrying}</a>")) && list.body.contains(">retrying</span>"),
        "{}",
        list.body
    );
}

#[tokio::test]
async fn admin_schedule_and_http_job_pages_show_the_target_url_masked() {
    let mut ui = Ui::start().await;
    let url = "https://ops:hunter2@example.com/report?token=abc123&v=1";
    let masked = "https://ops:***@example.com/report?token=***&v=***";
    let s = ui
        .kairos
        .schedule_create(
            serde_json::from_value(json!({
                "name": "report-call",
                "kind": "http",
                "cron": "30 8 * * *",
                "timezone": "Asia/Tokyo",
                "http": {"url": url, "method": "PUT"},
                "retry": {"max_attempts": 4, "delays": ["1m", "5m", "30m"]},
                "misfire": "skip",
            }))
            .expect("schedule body"),
        )
        .await
        .expect("schedule");
    let (job, _) = ui
        .kairos
        .job_enqueue(
            serde_json::from_value(
                json!({"kind": "http", "http": {"url": url, "method": "DELETE"}}),
            )
            .expect("job body"),
        )
        .await
        .expect("enqueue");
    ui.login().await;

    let page = ui.get(&format!("/admin/schedules/{}", s.id)).await;
    assert_eq!(page.status, StatusCode::OK);
    // In the HTML source as written (only `&` escaped): a plain-HTTP client finds the URL.
    let in_html = masked.replace('&', "&amp;");
    assert!(page.body.contains(&in_html), "{}", page.body);
    let text = page.text();
    assert!(
        text.contains(&format!(
            "<strong class=\"method\">PUT</strong> <span class=\"mono url\">{masked}</span>"
        )),
        "{text}"
    );
    assert!(
        !text.contains("hunter2") && !text.contains("abc123"),
        "credentials leak: {text}"
    );
    // Retry, misfire, and the next firings in the zone and in UTC (08:30 Tokyo = 23:30 UTC).
    assert!(
        text.contains("\"max_attempts\": 4") && text.contains("\"30m\""),
        "{text}"
    );
    assert!(text.contains("id=\"misfire\">skip;"), "{text}");
    assert!(
        text.contains("<td class=\"mono\">2026-12-01T08:30:00+09:00</td><td class=\"mono\">2026-11-30T23:30:00Z</td>"),
        "{text}"
    );

    let page = ui.get(&format!("/admin/jobs/{}", job.id)).await;
    assert!(page.body.contains(&in_html), "{}", page.body);
    let text = page.text();
    assert!(
        text.contains(&format!(
            "<strong>DELETE</strong> <span class=\"mono url\">{masked}</span>"
        )),
        "{text}"
    );
    assert!(
        !text.contains("hunter2") && !text.contains("abc123"),
        "{text}"
    );

    let missing = ui.get("/admin/schedules/sch_nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn admin_schedule_page_pauses_fires_and_deletes_with_csrf_and_a_confirmation() {
    let mut ui = Ui::start().await;
    let s = webhook_schedule(&ui, "to-delete").await;
    ui.login().await;
    let path = format!("/admin/schedules/{}", s.id);
    let page = ui.get(&path).await;
    let csrf = Ui::csrf_of(&page);

    let forged = ui
        .post_form(
            &format!("{path}/pause"),
            &[("csrf", "forged"), ("from", "page")],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let p = ui
        .post_form(
            &format!("{path}/pause"),
            &[("csrf", &csrf), ("from", "page")],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("{path}?notice=paused").as_str())
    );
    let st = ui.kairos.schedule_get(&s.id).await.expect("get").state;
    assert_eq!(st.as_str(), "paused");

    ui.receiver.respond_with(vec![Reply::status(200)]);
    let p = ui
        .post_form(
            &format!("{path}/fire"),
            &[("csrf", &csrf), ("from", "page")],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("{path}?notice=fired&created=1").as_str())
    );
    run(&ui).await;
    let page = ui.get(&path).await;
    assert!(
        page.body.contains("occ-success"),
        "recent occurrences: {}",
        page.body
    );

    // Delete needs its "sure" box.
    let p = ui
        .post_form(
            &format!("{path}/delete"),
            &[("csrf", &csrf), ("from", "page")],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("{path}?notice=refused").as_str())
    );
    assert!(
        ui.kairos.schedule_get(&s.id).await.is_ok(),
        "not deleted unconfirmed"
    );
    let p = ui
        .post_form(
            &format!("{path}/delete"),
            &[("csrf", &csrf), ("from", "page"), ("confirm", "1")],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some("/admin/schedules?notice=deleted")
    );
    assert_eq!(ui.get(&path).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn admin_schedule_form_creates_and_edits_with_the_apis_validation_and_message() {
    let mut ui = Ui::start().await;
    ui.login().await;
    let page = ui.get("/admin/schedules/new").await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = Ui::csrf_of(&page);
    // The form starts with an example the API takes as it is.
    let text = page.text();
    let start =
        text.find("spellcheck=\"false\">").expect("textarea") + "spellcheck=\"false\">".len();
    let example = &text[start..start + text[start..].find("</textarea>").expect("end")];
    let p = ui
        .post_form(
            "/admin/schedules/new",
            &[("csrf", &csrf), ("body", example)],
        )
        .await;
    assert_eq!(p.status, StatusCode::SEE_OTHER, "{}", p.body);
    let made = ui.kairos.schedule_list(None, None).await.expect("list");
    ui.kairos
        .schedule_delete(&made[0].id)
        .await
        .expect("delete");
    let bad = json!({"name": "bad-cron", "cron": "61 * * * *",
                     "webhook": {"url": ui.receiver.url("/h"), "secret": SECRET}})
    .to_string();
    // The API's own answer to the same body.
    let api = ui
        .http
        .post(format!("{}/v1/schedules", ui.base))
        .bearer_auth(common::admin_ui::TOKEN)
        .body(bad.clone())
        .send()
        .await
        .expect("api");
    assert_eq!(api.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let problem: serde_json::Value = api.json().await.expect("problem");
    let detail = problem["detail"].as_str().expect("detail").to_string();

    let p = ui
        .post_form("/admin/schedules/new", &[("csrf", &csrf), ("body", &bad)])
        .await;
    assert_eq!(p.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        p.text().contains(&detail),
        "the API's message {detail:?}: {}",
        p.body
    );
    assert!(
        p.text().contains("\"bad-cron\""),
        "the operator's text is kept"
    );
    let none = ui.kairos.schedule_list(None, None).await.expect("list");
    assert!(none.is_empty(), "a refused form creates nothing");

    let forged = ui
        .post_form("/admin/schedules/new", &[("csrf", "x"), ("body", &bad)])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);

    let good = json!({"name": "made-in-admin", "every": "15m",
                      "webhook": {"url": ui.receiver.url("/h"), "secret": SECRET}})
    .to_string();
    let p = ui
        .post_form("/admin/schedules/new", &[("csrf", &csrf), ("body", &good)])
        .await;
    assert_eq!(p.status, StatusCode::SEE_OTHER, "{}", p.body);
    let all = ui.kairos.schedule_list(None, None).await.expect("list");
    assert_eq!(all.len(), 1);
    let id = all[0].id.clone();
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/schedules/{id}?notice=created").as_str())
    );

    // Edit: the form holds the definition the API takes back; a rename is saved.
    let form = ui.get(&format!("/admin/schedules/{id}/edit")).await;
    assert!(form.text().contains("\"every\": \"15m\""), "{}", form.body);
    let renamed = json!({"name": "renamed-in-admin", "every": "15m",
                         "webhook": {"url": ui.receiver.url("/h"), "secret": SECRET}})
    .to_string();
    let p = ui
        .post_form(
            &format!("/admin/schedules/{id}/edit"),
            &[("csrf", &csrf), ("body", &renamed)],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/schedules/{id}?notice=updated").as_str())
    );
    assert_eq!(
        ui.kairos.schedule_get(&id).await.expect("get").name,
        "renamed-in-admin"
    );
    let p = ui
        .post_form(
            &format!("/admin/schedules/{id}/edit"),
            &[("csrf", &csrf), ("body", "[1]")],
        )
        .await;
    assert_eq!(p.status, StatusCode::BAD_REQUEST);
    assert!(
        p.text().contains("the body must be a JSON object"),
        "{}",
        p.body
    );
}

#[tokio::test]
async fn admin_search_opens_an_id_and_finds_schedules_by_name_and_jobs_by_payload_text() {
    let mut ui = Ui::start().await;
    let s = webhook_schedule(&ui, "weekly-invoices").await;
    let (job, _) = ui
        .kairos
        .job_enqueue(kairos_engine::ops::NewJob {
            webhook: Some(kairos_engine::ops::WebhookTarget {
                url: ui.receiver.url("/hook"),
                secret: SECRET.into(),
            }),
            payload: Some(json!({"order": "ORD-7781"})),
            ..Default::default()
        })
        .await
        .expect("enqueue");
    ui.login().await;
    let p = ui.get(&format!("/admin/search?q={}", job.id)).await;
    assert_eq!(p.status, StatusCode::SEE_OTHER);
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/jobs/{}", job.id).as_str())
    );
    let p = ui.get(&format!("/admin/search?q={}", s.id)).await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/schedules/{}", s.id).as_str())
    );

    let p = ui.get("/admin/search?q=INVOICE").await;
    assert!(
        p.text().contains(&format!(
            "href=\"/admin/schedules/{}\">weekly-invoices</a>",
            s.id
        )),
        "{}",
        p.body
    );
    assert!(
        !p.body.contains(&job.id),
        "the job does not match a schedule's name"
    );
    let p = ui.get("/admin/search?q=ord-7781").await;
    assert!(p.body.contains(&format!("{}</a>", job.id)), "{}", p.body);
    let p = ui.get("/admin/search?q=ord-7782").await;
    assert!(!p.body.contains(&job.id));
}

#[tokio::test]
async fn admin_running_page_lists_running_jobs_by_node_with_their_leases() {
    let mut ui = Ui::start().await;
    ui.login().await;
    let none = ui.get("/admin/running").await;
    assert!(none.body.contains("id=\"no-nodes\""), "{}", none.body);
    let job = ui.enqueue_due().await;
    let now = ui.clock.now();
    let claimed = ui
        .store
        .job_claim(kairos_store::JobClaim {
            now,
            limit: 10,
            node: "node-admin-test".into(),
            lease_token: "lease_t".into(),
            lease_until: now + chrono::Duration::seconds(30),
        })
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let p = ui.get("/admin/running").await;
    assert!(
        p.body
            .contains("<td class=\"mono node\">node-admin-test</td><td>1</td>"),
        "{}",
        p.body
    );
    assert!(p.body.contains(&format!("{}</a>", job.id)), "{}", p.body);
    let page = ui.get(&format!("/admin/jobs/{}", job.id)).await;
    assert!(
        page.body.contains("node-admin-test"),
        "the job page says where it runs"
    );
}

#[tokio::test]
async fn admin_endpoint_page_shows_deliveries_resends_sends_a_test_and_rotates() {
    let mut ui = Ui::start().await;
    let dead = ui
        .job_replying(Reply::status(400).with_body("no such customer"), 1)
        .await;
    let (job, _) = ui.kairos.job_get(&dead).await.expect("job");
    let ep = job.endpoint_id.clone().expect("endpoint");
    ui.login().await;
    let path = format!("/admin/endpoints/{ep}");
    let page = ui.get(&path).await;
    assert_eq!(page.status, StatusCode::OK);
    let text = page.text();
    assert!(text.contains(&format!("webhook-id: {dead}")), "{text}");
    assert!(text.contains("\"data\": {"), "the request body: {text}");
    assert!(
        text.contains("<strong class=\"response-status\">400</strong>"),
        "{text}"
    );
    assert!(
        text.contains("no such customer"),
        "the response excerpt: {text}"
    );
    let csrf = Ui::csrf_of(&page);

    // Resend the dead delivery: replayed, the same job (the same webhook-id).
    ui.receiver.respond_with(vec![Reply::status(200)]);
    let p = ui
        .post_form(
            &format!("{path}/resend"),
            &[("csrf", &csrf), ("job", &dead)],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("{path}?notice=resent&job={dead}").as_str())
    );
    run(&ui).await;
    assert_eq!(ui.receiver.ids_seen().get(&dead), Some(&2));

    // A test event: a new job to the same endpoint.
    let p = ui
        .post_form(
            &format!("{path}/test"),
            &[("csrf", &csrf), ("from", "page")],
        )
        .await;
    let loc = p.location.expect("redirect");
    let test_job = loc.split("job=").nth(1).expect("job id").to_string();
    let (tj, _) = ui.kairos.job_get(&test_job).await.expect("test job");
    assert_eq!(tj.endpoint_id.as_deref(), Some(ep.as_str()));
    assert_eq!(tj.payload["test"], true);

    // Rotate: the new secret shown once on the response, a window open.
    let p = ui
        .post_form(
            &format!("{path}/rotate"),
            &[("csrf", &csrf), ("from", "page")],
        )
        .await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.body.contains("id=\"new-secret\""), "{}", p.body);
    assert!(p.body.contains("whsec_"), "{}", p.body);
    let after = ui.get(&path).await;
    assert!(!after.body.contains("id=\"new-secret\""), "shown once");
    assert!(after.body.contains("class=\"rotation\""), "{}", after.body);
}

#[tokio::test]
async fn admin_endpoint_disabled_by_410_raises_a_warning_that_links_the_endpoint() {
    let mut ui = Ui::start().await;
    let id = ui.job(410).await;
    let (job, _) = ui.kairos.job_get(&id).await.expect("job");
    let ep = job.endpoint_id.expect("endpoint");
    let store = ui.kairos.store().clone();
    let monitor = kairos_engine::monitor::Monitor::new(Default::default(), store).expect("monitor");
    monitor.run_once(ui.clock.now()).await.expect("monitor run");
    ui.login().await;
    let page = ui.get("/admin/jobs").await;
    let text = page.text();
    assert!(text.contains("id=\"slo-banner\""), "{text}");
    assert!(text.contains("HTTP 410 Gone"), "{text}");
    assert!(
        text.contains(&format!(
            "<a class=\"id-link mono\" href=\"/admin/endpoints/{ep}\">{ep}</a>"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn admin_job_page_separates_replay_rounds() {
    let mut ui = Ui::start().await;
    let dead = ui.job(400).await;
    ui.login().await;
    let page = ui.get(&format!("/admin/jobs/{dead}")).await;
    assert!(
        !page.body.contains("<tr class=\"replay-round\">"),
        "one round: no separator"
    );
    ui.kairos.job_retry(&dead).await.expect("replay");
    ui.receiver.respond_with(vec![Reply::status(200)]);
    run(&ui).await;
    let page = ui.get(&format!("/admin/jobs/{dead}")).await;
    assert!(
        page.body.contains(
            "<tr class=\"replay-round\"><td colspan=\"10\"><strong>Replay — round 2</strong>"
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains("class=\"round-1\"") && page.body.contains("class=\"round-2\""));
}

#[tokio::test]
async fn admin_live_refresh_is_opt_in_and_bounded() {
    let mut ui = Ui::start().await;
    ui.login().await;
    for path in ["/admin", "/admin/jobs", "/admin/running"] {
        let off = ui.get(path).await;
        assert!(
            !off.body.contains("http-equiv=\"refresh\""),
            "{path}: off by default"
        );
        assert!(off.body.contains("id=\"refresh-on\""), "{path}: the toggle");
        let on = ui.get(&format!("{path}?refresh=10")).await;
        assert!(
            on.body
                .contains("<meta http-equiv=\"refresh\" content=\"10\">"),
            "{path}: {}",
            on.body
        );
        let fast = ui.get(&format!("{path}?refresh=1")).await;
        assert!(fast.body.contains("content=\"5\""), "{path}: at least 5 s");
        let junk = ui.get(&format!("{path}?refresh=soon")).await;
        assert_eq!(
            junk.status,
            StatusCode::OK,
            "{path}: a bad value is no refresh"
        );
        assert!(!junk.body.contains("http-equiv=\"refresh\""), "{path}");
    }
}

#[tokio::test]
async fn admin_overview_draws_succeeded_and_dead_over_the_last_hour_and_day_as_svg() {
    let mut ui = Ui::start().await;
    ui.job(200).await;
    ui.job(200).await;
    ui.job(400).await;
    ui.login().await;
    let page = ui.get("/admin").await;
    let body = &page.body;
    for id in ["chart-hour", "chart-day"] {
        assert!(
            body.contains(&format!("<svg id=\"{id}\" class=\"chart\"")),
            "{body}"
        );
    }
    assert!(
        body.contains("id=\"hour-succeeded\">2<") && body.contains("id=\"hour-dead\">1<"),
        "{body}"
    );
    assert!(
        body.contains("id=\"day-succeeded\">2<") && body.contains("id=\"day-dead\">1<"),
        "{body}"
    );
    assert!(
        body.contains("class=\"ok\"") && body.contains("class=\"dead\""),
        "bars drawn"
    );
    assert!(!body.contains("<script"), "no JavaScript needed");
    // An hour later the last hour is empty; the day still holds them.
    ui.clock.advance(chrono::Duration::minutes(61));
    let page = ui.get("/admin").await;
    assert!(
        page.body.contains("id=\"hour-succeeded\">0<"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("id=\"day-succeeded\">2<"),
        "{}",
        page.body
    );
}

/// The throughput charts take a minute the sampler recorded from its sample, not from the job
/// table, and count the job table for the minutes without one: a success committed after its
/// minute's sample (from a node whose clock runs behind) is not in the chart once that minute
/// is more than two minutes old.
#[tokio::test]
async fn admin_throughput_charts_take_sampled_minutes_from_their_samples() {
    let mut ui = Ui::start().await;
    ui.job(200).await;
    ui.job(200).await;
    let sample = ui
        .kairos
        .store()
        .queue_sample_record(kairos_store::QueueSampleRecord {
            minute: common::admin_ui::start_time(),
            now: common::admin_ui::start_time() + chrono::Duration::seconds(65),
        })
        .await
        .expect("sample")
        .expect("the minute's sample");
    assert_eq!((sample.succeeded, sample.dead), (Some(2), Some(0)));
    ui.job(200).await;
    ui.clock.advance(chrono::Duration::minutes(5));
    ui.job(400).await;
    ui.login().await;
    let body = ui.get("/admin").await.body;
    for chart in ["hour", "day"] {
        assert!(
            body.contains(&format!("id=\"{chart}-succeeded\">2<"))
                && body.contains(&format!("id=\"{chart}-dead\">1<")),
            "{chart}: two successes from the sample, the dead job from the table: {body}"
        );
    }
}
