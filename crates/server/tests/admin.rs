//! The admin UI over HTTP: the real app on a real SQLite file, served on 127.0.0.1:0,
//! jobs run by the real executor on a manual clock. What an outsider can reach without a
//! session, what a forged form can change (nothing), and what an operator sees and does.

use kairos_core::Clock;
use kairos_testkit::Reply;
use reqwest::StatusCode;
use serde_json::json;

mod common;

use common::TestApp;
use common::admin_ui::{SECRET, TOKEN, Ui, start_time};

#[tokio::test]
async fn admin_without_a_session_answers_401_login_page_and_never_data() {
    let ui = Ui::start().await;
    let id = ui.job(400).await;
    for path in [
        "/admin",
        "/admin/jobs",
        &format!("/admin/jobs/{id}"),
        "/admin/dead",
        "/admin/schedules",
    ] {
        let p = ui.get(path).await;
        assert_eq!(p.status, StatusCode::UNAUTHORIZED, "{path}");
        assert!(
            p.body.contains("name=\"token\""),
            "{path} shows the login form"
        );
        assert!(
            !p.body.contains(&id),
            "{path} leaks a job id without a session"
        );
    }
    // A forged or expired-looking cookie is no session either.
    let mut forged = ui;
    forged.cookie = Some("kairos_admin=99999999999.deadbeef".into());
    assert_eq!(
        forged.get("/admin/jobs").await.status,
        StatusCode::UNAUTHORIZED
    );
    // A POST without a session changes nothing.
    let p = forged
        .post_form(&format!("/admin/jobs/{id}/replay"), &[("csrf", "x")])
        .await;
    assert_eq!(p.status, StatusCode::UNAUTHORIZED);
    let (job, _) = forged.kairos.job_get(&id).await.expect("job");
    assert_eq!(job.state.as_str(), "dead");
}

#[tokio::test]
async fn admin_login_refuses_a_wrong_token() {
    let ui = Ui::start().await;
    let p = ui.post_form("/admin/login", &[("token", "not-it")]).await;
    assert_eq!(p.status, StatusCode::UNAUTHORIZED);
    assert!(p.set_cookie.is_none());
    assert!(p.body.contains("not this server"), "{}", p.body);
}

#[tokio::test]
async fn admin_form_without_its_csrf_token_changes_nothing() {
    let mut ui = Ui::start().await;
    let id = ui.job(400).await;
    ui.login().await;
    let p = ui
        .post_form(&format!("/admin/jobs/{id}/replay"), &[("csrf", "forged")])
        .await;
    assert_eq!(p.status, StatusCode::FORBIDDEN);
    let (job, _) = ui.kairos.job_get(&id).await.expect("job");
    assert_eq!(job.state.as_str(), "dead", "a forged form replayed the job");
}

#[tokio::test]
async fn admin_replays_a_dead_job_which_then_succeeds() {
    let mut ui = Ui::start().await;
    let dead = ui.job(400).await;
    ui.login().await;
    let page = ui.get(&format!("/admin/jobs/{dead}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("id=\"job-state\">dead<"),
        "{}",
        page.body
    );
    // Every attempt is shown with its status code and error.
    assert!(page.body.contains("<td>400</td>"), "{}", page.body);
    assert!(page.body.contains("permanent"));
    let csrf = Ui::csrf_of(&page);
    let p = ui
        .post_form(&format!("/admin/jobs/{dead}/replay"), &[("csrf", &csrf)])
        .await;
    assert_eq!(p.status, StatusCode::SEE_OTHER);
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/jobs/{dead}?notice=replayed").as_str())
    );
    ui.receiver.respond_with(vec![Reply::status(200)]);
    ui.engine
        .executor()
        .run_once(ui.clock.now())
        .await
        .expect("executor");
    let page = ui.get(&format!("/admin/jobs/{dead}?notice=replayed")).await;
    assert!(
        page.body.contains("id=\"job-state\">succeeded<"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Replayed"));
}

#[tokio::test]
async fn admin_jobs_filters_combine_two_axes_and_name_a_bad_field() {
    let mut ui = Ui::start().await;
    let dead = ui.job(400).await;
    let ok = ui.job(200).await;
    ui.login().await;
    let all = ui.get("/admin/jobs").await;
    assert!(all.body.contains(&dead) && all.body.contains(&ok));
    let p = ui.get("/admin/jobs?state=dead&kind=webhook").await;
    assert!(
        p.body.contains(&dead) && !p.body.contains(&ok),
        "{}",
        p.body
    );
    let p = ui.get("/admin/jobs?state=dead&kind=http").await;
    assert!(!p.body.contains(&dead) && p.body.contains("No jobs match"));
    let p = ui.get("/admin/jobs?state=exploded").await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(
        p.body.contains("state: &quot;exploded&quot; is not one of"),
        "{}",
        p.body
    );
    let p = ui.get("/admin/jobs?from=yesterday").await;
    assert!(p.body.contains("from: "), "{}", p.body);
}

#[tokio::test]
async fn admin_dead_page_replays_all_matching_jobs() {
    let mut ui = Ui::start().await;
    let a = ui.job(400).await;
    let b = ui.job(400).await;
    ui.login().await;
    let page = ui.get("/admin/dead").await;
    assert!(page.body.contains(&a) && page.body.contains(&b));
    let csrf = Ui::csrf_of(&page);
    let p = ui
        .post_form(
            "/admin/dead/replay",
            &[("csrf", &csrf), ("kind", "webhook")],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some("/admin/dead?replayed=2&kind=webhook")
    );
    for id in [&a, &b] {
        let (job, _) = ui.kairos.job_get(id).await.expect("job");
        assert_eq!(job.state.as_str(), "available");
    }
}

/// Issue 12, finding 6: "replay all" was one unbounded loop inside a request. It replays at
/// most 500 per request (in batches) and says when more remain; pressing again finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_replay_all_is_bounded_per_request_and_says_more_remain() {
    use kairos_server::admin::jobs::REPLAY_ALL_MAX;
    let mut ui = Ui::start().await;
    let total = REPLAY_ALL_MAX + 3;
    for i in 0..total {
        ui.kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                // Nothing listens on port 1: refused at once, and with one attempt, dead.
                webhook: Some(kairos_engine::ops::WebhookTarget {
                    url: "http://127.0.0.1:1/hook".into(),
                    secret: SECRET.into(),
                }),
                payload: Some(json!({"n": i})),
                retry: Some(serde_json::from_value(json!({"max_attempts": 1})).expect("retry")),
                ..Default::default()
            })
            .await
            .expect("enqueue");
    }
    for _ in 0..50 {
        let r = ui
            .engine
            .executor()
            .run_once(ui.clock.now())
            .await
            .expect("executor");
        if r.claimed == 0 {
            break;
        }
    }
    let dead = |ui: &Ui| {
        let k = ui.kairos.clone();
        async move { k.dead_job_ids(None).await.expect("dead ids").len() }
    };
    assert_eq!(dead(&ui).await, total);
    ui.login().await;
    let csrf = Ui::csrf_of(&ui.get("/admin/dead").await);
    let p = ui
        .post_form("/admin/dead/replay", &[("csrf", &csrf), ("kind", "")])
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/admin/dead?replayed={REPLAY_ALL_MAX}&more=true").as_str())
    );
    assert_eq!(dead(&ui).await, 3);
    let page = ui.get(p.location.as_deref().expect("location")).await;
    assert!(page.body.contains("More dead jobs remain"), "{}", page.body);
    let p = ui
        .post_form("/admin/dead/replay", &[("csrf", &csrf), ("kind", "")])
        .await;
    assert_eq!(p.location.as_deref(), Some("/admin/dead?replayed=3"));
    assert_eq!(dead(&ui).await, 0);
    let page = ui.get("/admin/dead?replayed=3").await;
    assert!(
        !page.body.contains("More dead jobs remain"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn admin_schedules_show_next_five_firings_in_zone_and_utc_and_pause() {
    let mut ui = Ui::start().await;
    let s = ui
        .kairos
        .schedule_create(
            serde_json::from_value(json!({
                "name": "tokyo-morning",
                "cron": "30 8 * * *",
                "timezone": "Asia/Tokyo",
                "webhook": {"url": ui.receiver.url("/hook"), "secret": SECRET},
            }))
            .expect("schedule body"),
        )
        .await
        .expect("schedule");
    ui.login().await;
    let page = ui.get("/admin/schedules").await;
    // 08:30 in Tokyo is 23:30 UTC the day before; five of them, from 2026-12-01 local.
    for day in 1..=5 {
        let local = format!("2026-12-0{day}T08:30:00+09:00");
        let utc = format!(
            "2026-{}T23:30:00Z",
            if day == 1 {
                "11-30".to_string()
            } else {
                format!("12-0{}", day - 1)
            }
        );
        assert!(
            page.body.contains(&format!("{local} / {utc}")),
            "missing {local} / {utc}:\n{}",
            page.body
        );
    }
    assert!(!page.body.contains("2026-12-06T08:30"), "only five");
    let csrf = Ui::csrf_of(&page);
    let p = ui
        .post_form(
            &format!("/admin/schedules/{}/pause", s.id),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some("/admin/schedules?notice=paused")
    );
    assert_eq!(
        ui.kairos
            .schedule_get(&s.id)
            .await
            .expect("get")
            .state
            .as_str(),
        "paused"
    );
}

#[tokio::test]
async fn admin_shows_slo_panel_and_a_banner_while_a_warning_is_active() {
    let mut ui = Ui::start().await;
    ui.login().await;
    // A job due now that nobody claims: after the stuck threshold (1 h by default) the
    // `stuck_due` check warns.
    ui.enqueue_due().await;
    let page = ui.get("/admin").await;
    assert!(page.body.contains("id=\"slo\""), "{}", page.body);
    assert!(!page.body.contains("id=\"slo-banner\""), "no warning yet");

    ui.clock.advance(chrono::Duration::hours(2));
    let page = ui.get("/admin").await;
    assert!(page.body.contains("<td>stuck_due</td>"), "{}", page.body);
    assert!(
        page.body.contains(">warning</span>"),
        "the panel shows the warning"
    );

    // The banner follows the leader monitor's stored alert state: after its run, every page
    // shows it.
    let store = ui.kairos.store().clone();
    let monitor = kairos_engine::monitor::Monitor::new(Default::default(), store).expect("monitor");
    monitor.run_once(ui.clock.now()).await.expect("monitor run");
    for path in ["/admin", "/admin/jobs", "/admin/schedules"] {
        let page = ui.get(path).await;
        assert!(
            page.body.contains("id=\"slo-banner\""),
            "{path}: {}",
            page.body
        );
    }
}

#[tokio::test]
async fn admin_occurrences_show_each_firing_with_its_derived_status() {
    let mut ui = Ui::start().await;
    let s = ui
        .kairos
        .schedule_create(
            serde_json::from_value(json!({
                "name": "daily-report",
                "cron": "0 9 * * *",
                "timezone": "UTC",
                "period": "day",
                "webhook": {"url": ui.receiver.url("/hook"), "secret": SECRET},
                "retry": {"max_attempts": 1},
            }))
            .expect("schedule body"),
        )
        .await
        .expect("schedule");
    // Two manual firings on two days: the first delivery refused for good, the second OK.
    ui.receiver.respond_with(vec![Reply::status(400)]);
    ui.kairos.schedule_fire_now(&s.id).await.expect("fire");
    ui.engine
        .executor()
        .run_once(ui.clock.now())
        .await
        .expect("run");
    ui.clock.advance(chrono::Duration::days(1));
    ui.kairos.schedule_fire_now(&s.id).await.expect("fire");
    ui.engine
        .executor()
        .run_once(ui.clock.now())
        .await
        .expect("run");
    ui.login().await;
    let page = ui
        .get(&format!("/admin/schedules/{}/occurrences", s.id))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<th>webhook</th>"), "{}", page.body);
    assert!(
        page.body.contains(">2026-11-30</a>") && page.body.contains(">2026-12-01</a>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("occ-failure") && page.body.contains("occ-success"),
        "{}",
        page.body
    );
    let one = ui
        .get(&format!(
            "/admin/schedules/{}/occurrences?period=2026-12-01",
            s.id
        ))
        .await;
    assert!(one.body.contains("occ-success") && !one.body.contains("occ-failure"));
    // The status filter (the API's `state`), applied by the store.
    let failed = ui
        .get(&format!(
            "/admin/schedules/{}/occurrences?state=failure",
            s.id
        ))
        .await;
    assert!(
        failed.body.contains(">2026-11-30</a>") && !failed.body.contains(">2026-12-01</a>"),
        "{}",
        failed.body
    );
    assert!(failed.body.contains("<option value=\"failure\" selected>"));
    let bad = ui
        .get(&format!(
            "/admin/schedules/{}/occurrences?state=bogus",
            s.id
        ))
        .await;
    assert!(bad.body.contains("id=\"error\"") && bad.body.contains("state"));
    let missing = ui.get("/admin/schedules/sch_nope/occurrences").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

/// The job list's bulk actions: ticked jobs are cancelled at once; "all matching this
/// filter" first shows a confirmation with the count (and changes nothing), then acts on
/// every match; the list says how many jobs were acted on. A forged form changes nothing.
#[tokio::test]
async fn admin_jobs_bulk_cancels_selected_and_retries_all_matching_after_confirming_the_count() {
    let mut ui = Ui::start().await;
    ui.login().await;
    let dead: Vec<String> = [ui.job(400).await, ui.job(400).await, ui.job(400).await].into();
    let waiting: Vec<String> = {
        let mut ids = Vec::new();
        for _ in 0..3 {
            let (job, _) = ui
                .kairos
                .job_enqueue(kairos_engine::ops::NewJob {
                    webhook: Some(kairos_engine::ops::WebhookTarget {
                        url: ui.receiver.url("/later"),
                        secret: SECRET.into(),
                    }),
                    run_at: Some("2027-01-01T00:00:00Z".into()),
                    ..Default::default()
                })
                .await
                .expect("enqueue");
            ids.push(job.id);
        }
        ids
    };
    let page = ui.get("/admin/jobs").await;
    assert!(
        page.body.contains("id=\"cancel-selected\""),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("name=\"ids\" value=\"{}\"", waiting[0]))
    );
    let csrf = Ui::csrf_of(&page);

    // Without the session's CSRF token: nothing.
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[
                ("csrf", "forged"),
                ("action", "cancel-selected"),
                ("ids", &waiting[0]),
            ],
        )
        .await;
    assert_eq!(p.status, StatusCode::FORBIDDEN);
    let (job, _) = ui.kairos.job_get(&waiting[0]).await.expect("job");
    assert_eq!(job.state.as_str(), "available");

    // Cancel selected: two ticked waiting jobs and a dead one (not cancellable: not counted).
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[
                ("csrf", &csrf),
                ("action", "cancel-selected"),
                ("ids", &waiting[0]),
                ("ids", &waiting[1]),
                ("ids", &dead[0]),
                ("kind", "webhook"),
            ],
        )
        .await;
    assert_eq!(p.status, StatusCode::SEE_OTHER, "{}", p.body);
    let to = p.location.expect("redirect");
    assert_eq!(to, "/admin/jobs?kind=webhook&notice=bulk-cancelled&done=2");
    assert!(ui.get(&to).await.body.contains("Cancelled 2 job(s)."));
    for (id, want) in [
        (&waiting[0], "cancelled"),
        (&waiting[1], "cancelled"),
        (&waiting[2], "available"),
        (&dead[0], "dead"),
    ] {
        let (job, _) = ui.kairos.job_get(id).await.expect("job");
        assert_eq!(job.state.as_str(), want, "{id}");
    }

    // Retry all matching state=dead: a confirmation with the count first, nothing changed.
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[
                ("csrf", &csrf),
                ("action", "retry-matching"),
                ("state", "dead"),
            ],
        )
        .await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert!(
        p.body
            .contains("<strong>3</strong> job(s) will be queued again"),
        "{}",
        p.body
    );
    assert!(p.body.contains("name=\"confirmed\" value=\"1\""));
    assert!(p.body.contains("name=\"state\" value=\"dead\""));
    let (job, _) = ui.kairos.job_get(&dead[1]).await.expect("job");
    assert_eq!(
        job.state.as_str(),
        "dead",
        "the confirmation page changes nothing"
    );
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[
                ("csrf", &csrf),
                ("action", "retry-matching"),
                ("state", "dead"),
                ("confirmed", "1"),
            ],
        )
        .await;
    assert_eq!(
        p.location.as_deref(),
        Some("/admin/jobs?state=dead&notice=bulk-retried&done=3")
    );
    for id in &dead {
        let (job, _) = ui.kairos.job_get(id).await.expect("job");
        assert_eq!(job.state.as_str(), "available", "{id}");
    }

    // Cancel all matching with no filter: the count is every unfinished job.
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[("csrf", &csrf), ("action", "cancel-matching")],
        )
        .await;
    assert!(
        p.body
            .contains("<strong>4</strong> job(s) will be cancelled"),
        "{}",
        p.body
    );
    // A bad filter names the field and acts on nothing.
    let p = ui
        .post_form(
            "/admin/jobs/bulk",
            &[
                ("csrf", &csrf),
                ("action", "cancel-matching"),
                ("from", "someday"),
                ("confirmed", "1"),
            ],
        )
        .await;
    assert!(p.body.contains("from:"), "{}", p.body);
    let (job, _) = ui.kairos.job_get(&waiting[2]).await.expect("job");
    assert_eq!(job.state.as_str(), "available");
}

#[tokio::test]
async fn admin_logout_revokes_the_session_so_the_old_cookie_and_csrf_replay_nothing() {
    let mut ui = Ui::start().await;
    let id = ui.job(400).await;
    ui.login().await;
    let page = ui.get("/admin/dead").await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = Ui::csrf_of(&page);
    let p = ui.post_form("/admin/logout", &[("csrf", &csrf)]).await;
    assert_eq!(p.location.as_deref(), Some("/admin/login"));
    assert!(
        p.set_cookie
            .as_deref()
            .is_some_and(|c| c.contains("Max-Age=0")),
        "{:?}",
        p.set_cookie
    );
    // The attacker kept the cookie and its CSRF token: both are dead.
    assert_eq!(ui.get("/admin/dead").await.status, StatusCode::UNAUTHORIZED);
    let p = ui
        .post_form(
            "/admin/dead/replay",
            &[("csrf", &csrf), ("kind", "webhook")],
        )
        .await;
    assert_eq!(p.status, StatusCode::UNAUTHORIZED);
    let (job, _) = ui.kairos.job_get(&id).await.expect("job");
    assert_eq!(
        job.state.as_str(),
        "dead",
        "a revoked session replayed the job"
    );
    // Logging in again gives a new, working session.
    ui.login().await;
    assert_eq!(ui.get("/admin/dead").await.status, StatusCode::OK);
}

#[tokio::test]
async fn admin_session_ends_when_its_stored_row_expires() {
    let mut ui = Ui::start().await;
    ui.login().await;
    assert_eq!(ui.get("/admin").await.status, StatusCode::OK);
    ui.clock.advance(chrono::Duration::hours(12));
    assert_eq!(ui.get("/admin").await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn admin_cookie_is_secure_only_when_the_public_url_is_https() {
    let ui = Ui::start().await;
    let p = ui.post_form("/admin/login", &[("token", TOKEN)]).await;
    let c = p.set_cookie.expect("cookie");
    assert!(!c.contains("Secure"), "{c}");
    let app = TestApp::start_with(start_time(), TOKEN, |s| s.with_secure_cookies(true)).await;
    let res = app
        .http
        .post(format!("{}/admin/login", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(common::form_body(&[("token", TOKEN)]))
        .send()
        .await
        .expect("login");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let c = res.headers()["set-cookie"].to_str().expect("ascii");
    assert!(
        c.contains("; Secure") && c.contains("HttpOnly") && c.contains("SameSite=Strict"),
        "{c}"
    );
}

#[tokio::test]
async fn admin_login_answers_429_with_retry_after_after_five_wrong_tokens_from_an_address() {
    let ui = Ui::start().await;
    for i in 0..5 {
        let p = ui.post_form("/admin/login", &[("token", "wrong")]).await;
        assert_eq!(p.status, StatusCode::UNAUTHORIZED, "attempt {i}");
    }
    let res = ui
        .http
        .post(format!("{}/admin/login", ui.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(common::form_body(&[("token", "wrong")]))
        .send()
        .await
        .expect("sixth attempt");
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: i64 = res.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!(retry >= 1, "{retry}");
    // While blocked, not even the right token is looked at.
    let p = ui.post_form("/admin/login", &[("token", TOKEN)]).await;
    assert_eq!(p.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(p.set_cookie.is_none());
    // After the wait (the engine's clock), the right token logs in and clears the count.
    ui.clock.advance(chrono::Duration::seconds(retry));
    let p = ui.post_form("/admin/login", &[("token", TOKEN)]).await;
    assert_eq!(p.status, StatusCode::SEE_OTHER, "{}", p.body);
    let p = ui.post_form("/admin/login", &[("token", "wrong")]).await;
    assert_eq!(p.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn admin_and_unsubscribe_pages_forbid_framing_sniffing_and_referrers() {
    let ui = Ui::start().await;
    for path in [
        "/admin/login",
        "/admin",
        "/admin/jobs",
        "/unsubscribe?token=x",
    ] {
        let res = ui
            .http
            .get(format!("{}{path}", ui.base))
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
        assert_eq!(h("x-frame-options"), "DENY", "{path}");
        assert!(
            h("content-security-policy").contains("frame-ancestors 'none'"),
            "{path}"
        );
        assert!(
            h("content-security-policy").contains("script-src 'none'"),
            "{path}"
        );
        assert_eq!(h("cache-control"), "no-store", "{path}");
        assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(h("referrer-policy"), "no-referrer", "{path}");
    }
}

/// The schedule list and a schedule's occurrences page show its overlap policy (issue 34).
#[tokio::test]
async fn admin_schedule_pages_show_the_overlap_policy() {
    let mut ui = Ui::start().await;
    let s = ui
        .kairos
        .schedule_create(
            serde_json::from_value(json!({
                "name": "exclusive",
                "cron": "0 2 * * *",
                "overlap": "buffer_one",
                "webhook": {"url": ui.receiver.url("/hook"), "secret": SECRET},
            }))
            .expect("schedule body"),
        )
        .await
        .expect("schedule");
    ui.login().await;
    let page = ui.get("/admin/schedules").await;
    assert!(page.body.contains("overlap: buffer_one"), "{}", page.body);
    let page = ui
        .get(&format!("/admin/schedules/{}/occurrences", s.id))
        .await;
    assert!(page.body.contains("overlap: buffer_one"), "{}", page.body);
}

/// The number in the overview's row of `state` (`<td>N</td>` after its link).
fn overview_count(body: &str, state: &str) -> Option<i64> {
    let at = body.find(&format!("/admin/jobs?state={state}\""))?;
    let rest = &body[at..];
    let start = rest.find("</a></td><td>")? + "</a></td><td>".len();
    let end = rest[start..].find("</td>")?;
    rest[start..start + end].trim().parse().ok()
}

/// When the background count of the finished states fails, the overview says so and when it
/// is tried again, instead of "being counted" (the failure is real: a finished job whose kind
/// SQLite stores as a blob cannot be read back as text).
#[tokio::test]
async fn admin_overview_says_when_the_count_of_finished_jobs_failed_and_is_tried_again() {
    use kairos_server::job_counts::{CountPolicy, JobCounts};
    let counts = std::sync::Arc::new(JobCounts::new(CountPolicy {
        first_wait: std::time::Duration::ZERO,
        ..CountPolicy::default()
    }));
    let shared = counts.clone();
    let mut ui = Ui::start_with(move |mut s| {
        s.job_counts = shared;
        s
    })
    .await;
    ui.login().await;
    let _raw = common::unreadable::unreadable_finished_job(&ui.dir().join("kairos.db")).await;
    let page = ui.get("/admin").await;
    assert!(page.body.contains("are being counted"), "{}", page.body);
    let retry = common::unreadable::count_failure(&counts).await;
    let page = ui.get("/admin").await;
    assert!(
        page.body.contains("id=\"count-failed\"")
            && page.body.contains("failed: they are not shown")
            && page.body.contains(&format!(
                "tried again at {}",
                retry.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            ))
            && !page.body.contains("are being counted"),
        "{}",
        page.body
    );
}

/// Once counting finished jobs is slow, the overview shows the queue as it is and the finished
/// states as last counted, and says when they were counted.
#[tokio::test]
async fn admin_overview_says_when_finished_jobs_were_counted_once_counting_is_slow() {
    use kairos_server::job_counts::{CountPolicy, JobCounts};
    let mut ui = Ui::start_with(|mut s| {
        s.job_counts = std::sync::Arc::new(JobCounts::new(CountPolicy {
            inline_below: std::time::Duration::ZERO,
            spacing: u32::MAX,
            max_age: std::time::Duration::from_secs(3600),
            // The first count lands in milliseconds; a loaded machine may take longer.
            first_wait: std::time::Duration::from_secs(30),
        }));
        s
    })
    .await;
    ui.login().await;
    let later = (start_time() + chrono::Duration::hours(1)).to_rfc3339();
    let enqueue = || kairos_engine::ops::NewJob {
        webhook: Some(kairos_engine::ops::WebhookTarget {
            url: ui.receiver.url("/hook"),
            secret: SECRET.into(),
        }),
        run_at: Some(later.clone()),
        ..Default::default()
    };
    let (job, _) = ui.kairos.job_enqueue(enqueue()).await.expect("enqueue");
    ui.kairos.job_cancel(&job.id, None).await.expect("cancel");

    let page = ui.get("/admin").await;
    assert_eq!(
        overview_count(&page.body, "cancelled"),
        Some(1),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("id=\"counted-at\""),
        "counted for this page"
    );

    let (job, _) = ui.kairos.job_enqueue(enqueue()).await.expect("enqueue");
    ui.kairos.job_cancel(&job.id, None).await.expect("cancel");
    ui.kairos.job_enqueue(enqueue()).await.expect("enqueue");
    ui.clock.advance(chrono::Duration::minutes(5));
    let page = ui.get("/admin").await;
    assert_eq!(
        overview_count(&page.body, "available"),
        Some(1),
        "the queue, now"
    );
    assert_eq!(
        overview_count(&page.body, "cancelled"),
        Some(1),
        "finished states as last counted"
    );
    assert!(
        page.body.contains("id=\"counted-at\"")
            && page.body.contains("as counted at 2026-11-30T10:00:00.000Z"),
        "{}",
        page.body
    );
}

/// The overview's SLO panel shows what the background monitor's last pass found, as of that
/// pass, rather than evaluating every check at each load; before the first pass and once the
/// monitor is stale it evaluates them for the page.
#[tokio::test]
async fn admin_slo_panel_shows_the_monitors_last_pass_until_it_is_stale() {
    let mut ui = Ui::start().await;
    ui.login().await;
    ui.receiver.respond_with(vec![Reply::ok()]);
    ui.enqueue_due().await;
    ui.clock.advance(chrono::Duration::hours(2));
    let pass = ui.clock.now();
    let store = ui.kairos.store().clone();
    let monitor = kairos_engine::monitor::Monitor::new(Default::default(), store).expect("monitor");
    monitor.run_once(pass).await.expect("monitor run");
    // The stuck job runs after the pass: evaluated now, `stuck_due` would be ok.
    let run = ui.engine.executor().run_once(pass).await.expect("executor");
    assert_eq!(run.succeeded, 1);

    let page = ui.get("/admin").await;
    assert!(
        page.body
            .contains("As of 2026-11-30T12:00:00.000Z, the monitor's last pass"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<td>stuck_due</td>") && page.body.contains(">warning</span>"),
        "what the pass found: {}",
        page.body
    );

    // Three intervals without a pass: the panel evaluates for the page.
    ui.clock.advance(chrono::Duration::minutes(4));
    let page = ui.get("/admin").await;
    assert!(
        page.body.contains("As of 2026-11-30T12:04:00.000Z.")
            && !page.body.contains("the monitor's last pass"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<td>monitor_stale</td>"),
        "{}",
        page.body
    );
}
