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
