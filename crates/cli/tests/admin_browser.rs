//! The admin UI in a real browser (issue 7's end-to-end test): headless chromium under
//! chromedriver drives `kairos serve` (the real binary on a temp dir): it logs in, filters the
//! jobs list on two axes (state and kind), opens the dead job, replays it, and sees it succeed.
//! A screenshot of each page is saved under `target/tmp/admin-screenshots/` for review.
//!
//! Skips loudly when chromium/chromedriver are missing, unless `KAIROS_TEST_BROWSER=required`
//! (`.ci/run` installs them and sets it).

mod common;

use common::{SECRET, Server, TOKEN, api};
use kairos_testkit::webdriver::Browser;
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn shot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("admin-screenshots")
        .join(format!("{name}.png"))
}

/// Wait (bounded) until the job has reached `state` through the API.
async fn wait_state(http: &reqwest::Client, base: &str, id: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, job) = api(
            http,
            reqwest::Method::GET,
            format!("{base}/v1/jobs/{id}"),
            None,
        )
        .await;
        if job["state"] == state {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} not {state} within 30 s: {job}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_ui_in_a_browser_filters_replays_a_dead_job_and_sees_it_succeed() {
    init_crypto();
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    // The first delivery is refused for good (400, one attempt: dead); later ones succeed.
    receiver.respond_with(vec![Reply::status(400)]);
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let enqueue = |n: u32| {
        let (http, base, url) = (http.clone(), base.clone(), receiver.url("/hook"));
        async move {
            let (status, job) = api(
                &http,
                reqwest::Method::POST,
                format!("{base}/v1/jobs"),
                Some(json!({
                    "kind": "webhook",
                    "webhook": {"url": url, "secret": SECRET},
                    "payload": {"n": n},
                    "retry": {"max_attempts": 1}
                })),
            )
            .await;
            assert_eq!(status, 201, "{job}");
            job["id"].as_str().expect("id").to_string()
        }
    };
    let dead = enqueue(1).await;
    wait_state(&http, &base, &dead, "dead").await;
    let ok = enqueue(2).await;
    wait_state(&http, &base, &ok, "succeeded").await;

    // Without a session: the login page, never data.
    browser.goto(&format!("{base}/admin/jobs")).await;
    let text = browser.page_text().await;
    assert!(text.contains("Log in"), "{text}");
    assert!(!text.contains(&dead));
    browser.screenshot(&shot("1-login")).await;

    let token = browser.find("#token").await;
    browser.type_into(&token, TOKEN).await;
    browser.click(&browser.find("#login").await).await;
    // The overview's table of jobs per state: logged in.
    let counts = browser.text(&browser.wait_find("#counts").await).await;
    assert!(
        counts.contains("dead") && counts.contains("succeeded"),
        "{counts}"
    );
    browser.screenshot(&shot("2-overview")).await;

    // Filter on two axes: state = dead and kind = webhook.
    browser.goto(&format!("{base}/admin/jobs")).await;
    let all = browser.find_all("a.job-link").await;
    assert_eq!(all.len(), 2, "both jobs listed before filtering");
    browser
        .click(&browser.find("#f-state option[value=dead]").await)
        .await;
    let kind = browser.find("#f-kind").await;
    browser.type_into(&kind, "webhook").await;
    browser.click(&browser.find("#filter").await).await;
    let url = browser.wait_url("state=dead").await;
    assert!(
        url.contains("state=dead") && url.contains("kind=webhook"),
        "{url}"
    );
    let links = browser.find_all("a.job-link").await;
    assert_eq!(links.len(), 1, "only the dead job matches both filters");
    assert_eq!(browser.text(&links[0]).await, dead);
    browser.screenshot(&shot("3-jobs-filtered")).await;

    // Open it: dead, with its attempt (400, permanent).
    browser.click(&links[0]).await;
    browser.wait_url(&format!("/admin/jobs/{dead}")).await;
    let state = browser.find("#job-state").await;
    assert_eq!(browser.text(&state).await, "dead");
    let attempts = browser.text(&browser.find("#attempts").await).await;
    assert!(
        attempts.contains("400") && attempts.contains("permanent"),
        "{attempts}"
    );
    browser.screenshot(&shot("4-dead-job")).await;

    // Replay it and watch it succeed (the receiver now answers 200).
    browser.click(&browser.find("#replay").await).await;
    browser.wait_url("notice=replayed").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = browser.text(&browser.find("#job-state").await).await;
        if state == "succeeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replayed job still {state} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        browser.goto(&browser.url().await).await;
    }
    let attempts = browser.text(&browser.find("#attempts").await).await;
    assert!(attempts.contains("succeeded"), "{attempts}");
    browser.screenshot(&shot("5-replayed-succeeded")).await;
    assert_eq!(
        receiver.ids_seen().get(&dead),
        Some(&2),
        "delivered twice: refused, then replayed"
    );

    browser.quit().await;
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success());
}

/// Issue 36 in a real browser, as an operator new to kairos would go: from the overview to a
/// schedule by its name, the schedule's page (target, next firings), its job, the job's
/// endpoint with the request that failed, a resend, a test event and a secret rotation, the
/// search box, the running jobs and the nodes page (heartbeat, leader), an http schedule's
/// masked URL, every list and a topic's page, the create form's refusal with the API's
/// message, and a schedule edited, paused, resumed, fired and deleted from its page. Every
/// table fits a 1,280 px window. The screenshots of each page are
/// the ones `docs/admin.md` shows (copied to `docs/admin/`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_ui_in_a_browser_connects_schedule_job_endpoint_and_search() {
    init_crypto();
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.set_window_size(1280, 900).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = TestReceiver::start().await;
    receiver.respond_with(vec![Reply::status(400).with_body("unknown customer 81")]);
    let server = Server::start(dir.path(), Some(TOKEN)).await;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let post = |path: &str, body: serde_json::Value| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { api(&http, reqwest::Method::POST, url, Some(body)).await }
    };
    let (status, sched) = post(
        "/v1/schedules",
        json!({"name": "nightly-invoices", "cron": "0 2 * * *", "timezone": "Europe/Paris",
               "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
               "payload": {"batch": "invoices-eu"}, "retry": {"max_attempts": 1}}),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    let sid = sched["id"].as_str().expect("id").to_string();
    let (status, call) = post(
        "/v1/schedules",
        json!({"name": "partner-sync", "kind": "http", "every": "1h", "paused": true,
               "http": {"url": "https://sync:s3cret@partner.example/api?key=k123", "method": "PUT"}}),
    )
    .await;
    assert_eq!(status, 201, "{call}");
    let call_id = call["id"].as_str().expect("id").to_string();
    let (status, topic) = api(
        &http,
        reqwest::Method::PUT,
        format!("{base}/v1/topics/weekly"),
        Some(json!({"subject": "Your week {{ period.key }}",
                    "text": "Hello {{ recipient.id }}"})),
    )
    .await;
    assert_eq!(status, 200, "{topic}");
    let (status, fired) = post(&format!("/v1/schedules/{sid}/fire"), json!({})).await;
    assert_eq!(status, 200, "{fired}");
    let job = fired["job_ids"][0].as_str().expect("a job").to_string();
    wait_state(&http, &base, &job, "dead").await;

    browser.goto(&format!("{base}/admin/login")).await;
    browser
        .type_into(&browser.find("#token").await, TOKEN)
        .await;
    browser.click(&browser.find("#login").await).await;
    browser.wait_find("#counts").await;
    assert!(
        browser.find_all("#refresh-on").await.len() == 1,
        "the live refresh toggle"
    );
    for chart in [
        "#chart-depth-hour",
        "#chart-depth-day",
        "#chart-late-hour",
        "#chart-late-day",
    ] {
        browser.find(chart).await;
    }
    browser.screenshot(&shot("6-overview-1280")).await;

    // The jobs list names the schedule; its link opens the schedule's page.
    browser.goto(&format!("{base}/admin/jobs")).await;
    browser.screenshot(&shot("7-jobs-1280")).await;
    assert_eq!(
        browser.horizontal_overflow().await,
        0,
        "the jobs table fits 1,280 px"
    );
    let link = browser.find("a.schedule-link").await;
    assert_eq!(browser.text(&link).await, "nightly-invoices");
    browser.click(&link).await;
    browser.wait_url(&format!("/admin/schedules/{sid}")).await;
    let text = browser.page_text().await;
    assert!(
        text.contains("Next firings") && text.contains("invoices-eu"),
        "{text}"
    );
    assert!(text.contains("Europe/Paris"), "{text}");
    browser.screenshot(&shot("8-schedule")).await;
    assert_eq!(
        browser.horizontal_overflow().await,
        0,
        "the schedule page fits"
    );

    // Its recent occurrence → its jobs → the job → its endpoint.
    browser
        .click(&browser.find("a.occurrence-link").await)
        .await;
    browser.wait_url("period=").await;
    browser.click(&browser.find("a.job-link").await).await;
    browser.wait_url(&format!("/admin/jobs/{job}")).await;
    let back = browser.find("#schedule-link").await;
    assert_eq!(browser.text(&back).await, "nightly-invoices");
    browser.click(&browser.find("#endpoint-link").await).await;
    browser.wait_url("/admin/endpoints/ep_").await;
    browser
        .click(&browser.find("#deliveries details summary").await)
        .await;
    let deliveries = browser.text(&browser.find("#deliveries").await).await;
    assert!(
        deliveries.contains(&format!("webhook-id: {job}"))
            && deliveries.contains("400")
            && deliveries.contains("unknown customer 81"),
        "{deliveries}"
    );
    browser.screenshot(&shot("9-endpoint")).await;
    assert_eq!(
        browser.horizontal_overflow().await,
        0,
        "the endpoint page fits"
    );

    // Resend the failed delivery (now answered 200) and send a test event.
    receiver.set_default(Reply::status(200));
    browser.click(&browser.find("button.resend").await).await;
    browser.wait_url("notice=resent").await;
    wait_state(&http, &base, &job, "succeeded").await;
    browser.click(&browser.find("#send-test").await).await;
    let url = browser.wait_url("notice=test-sent").await;
    let test_job = url.split("job=").nth(1).expect("test job").to_string();
    wait_state(&http, &base, &test_job, "succeeded").await;
    // Rotate the secret: the old one keeps signing beside the new for a window.
    let ep = url
        .split("/admin/endpoints/")
        .nth(1)
        .and_then(|r| r.split('?').next())
        .expect("the endpoint's id")
        .to_string();
    browser.click(&browser.find("#rotate").await).await;
    // The rotation's answer shows the new secret once (the page before it had `#deliveries`
    // already: waiting for that raced the POST).
    browser.wait_find("#new-secret").await;
    let (status, rotated) = api(
        &http,
        reqwest::Method::GET,
        format!("{base}/v1/endpoints/{ep}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{rotated}");
    assert!(
        rotated["previous_secret_expires_at"].is_string(),
        "rotated from the page: {rotated}"
    );

    // The job page now shows two rounds.
    browser.goto(&format!("{base}/admin/jobs/{job}")).await;
    let attempts = browser.text(&browser.find("#attempts").await).await;
    assert!(attempts.contains("Replay — round 2"), "{attempts}");
    browser.screenshot(&shot("10-job-rounds")).await;

    // Search: a schedule's name, then a job id straight to its page.
    browser
        .type_into(&browser.find("#search-q").await, "partner")
        .await;
    browser.click(&browser.find("#search").await).await;
    browser.wait_url("/admin/search").await;
    let hits = browser.text(&browser.find("#schedule-hits").await).await;
    assert!(hits.contains("partner-sync"), "{hits}");
    browser.screenshot(&shot("11-search")).await;
    browser
        .click(&browser.find("#schedule-hits a.schedule-link").await)
        .await;
    browser
        .wait_url(&format!("/admin/schedules/{call_id}"))
        .await;
    let target = browser.text(&browser.find("#channels").await).await;
    assert!(
        target.contains("PUT") && target.contains("https://sync:***@partner.example/api?key=***"),
        "{target}"
    );
    assert!(!browser.page_text().await.contains("s3cret"));
    browser.screenshot(&shot("12-http-schedule")).await;
    browser
        .type_into(&browser.find("#search-q").await, &job)
        .await;
    browser.click(&browser.find("#search").await).await;
    browser.wait_url(&format!("/admin/jobs/{job}")).await;

    // Running jobs and nodes (none running now).
    browser.goto(&format!("{base}/admin/running")).await;
    browser.wait_find("#nodes").await;
    browser.screenshot(&shot("13-running")).await;
    // The nodes page, from the running page's link: this node, alive and leading.
    browser.click(&browser.find("#nodes-link").await).await;
    browser.wait_url("/admin/nodes").await;
    let nodes = browser.text(&browser.wait_find("#nodes").await).await;
    assert!(
        nodes.contains("alive") && nodes.contains("leader"),
        "{nodes}"
    );
    assert_eq!(
        browser.find_all("#nav-nodes").await.len(),
        1,
        "the nav links the nodes page"
    );
    browser.screenshot(&shot("20-nodes")).await;
    assert_eq!(
        browser.horizontal_overflow().await,
        0,
        "the nodes page fits"
    );

    // The other lists, each fitting the window, for the docs' screenshots.
    for (path, table, name) in [
        ("/admin/schedules".to_string(), "#schedules", "15-schedules"),
        (
            format!("/admin/schedules/{sid}/occurrences"),
            "#occurrences",
            "16-occurrences",
        ),
        ("/admin/endpoints".to_string(), "#endpoints", "17-endpoints"),
        ("/admin/dead".to_string(), "#dead", "18-dead"),
        (
            "/admin/deliveries".to_string(),
            "#deliveries",
            "19-deliveries",
        ),
        (
            "/admin/topics/weekly".to_string(),
            "#variant-stats",
            "21-topic",
        ),
    ] {
        browser.goto(&format!("{base}{path}")).await;
        browser.wait_find(table).await;
        browser.screenshot(&shot(name)).await;
        assert_eq!(
            browser.horizontal_overflow().await,
            0,
            "{path} fits 1,280 px"
        );
    }
    // Create: the API's refusal, on the form.
    browser.goto(&format!("{base}/admin/schedules/new")).await;
    let body = browser.find("#schedule-body").await;
    browser
        .type_into(&body, r#"{"name": "x", "kind": "http", "cron": "61 * * * *", "http": {"url": "https://example.com/"}}"#)
        .await;
    browser.click(&browser.find("#save").await).await;
    let problem = browser.text(&browser.wait_find("#problem").await).await;
    assert!(
        problem.contains("422") && problem.contains("cron"),
        "{problem}"
    );
    browser.screenshot(&shot("14-schedule-form")).await;

    // Edit, pause, resume, fire and delete from a schedule's page, as an operator would; each
    // reaches the API's view.
    let get = |path: String| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { api(&http, reqwest::Method::GET, url, None).await }
    };
    browser
        .goto(&format!("{base}/admin/schedules/{call_id}"))
        .await;
    browser.click(&browser.find("#edit").await).await;
    browser.wait_url("/edit").await;
    let body = browser.find("#schedule-body").await;
    browser
        .type_into(&body, r#"{"name": "partner-sync-eu", "kind": "http", "every": "2h", "paused": true, "http": {"url": "https://partner.example/api", "method": "PUT"}}"#)
        .await;
    browser.click(&browser.find("#save").await).await;
    // The edit page's own URL holds `/admin/schedules/{id}`: wait for the redirect's notice.
    browser
        .wait_url(&format!("/admin/schedules/{call_id}?notice=updated"))
        .await;
    let (status, edited) = get(format!("/v1/schedules/{call_id}")).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["name"], "partner-sync-eu", "{edited}");
    browser.goto(&format!("{base}/admin/schedules/{sid}")).await;
    browser.click(&browser.find("#pause").await).await;
    browser.wait_url("notice=paused").await;
    assert_eq!(get(format!("/v1/schedules/{sid}")).await.1["paused"], true);
    browser.click(&browser.find("#resume").await).await;
    browser.wait_url("notice=resumed").await;
    assert_eq!(get(format!("/v1/schedules/{sid}")).await.1["paused"], false);
    browser.click(&browser.find("#fire").await).await;
    browser.wait_url("notice=fired").await;
    browser.click(&browser.find("#delete-confirm").await).await;
    browser.click(&browser.find("#delete").await).await;
    browser.wait_url("notice=deleted").await;
    assert_eq!(get(format!("/v1/schedules/{sid}")).await.0, 404);

    browser.quit().await;
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success());
}
