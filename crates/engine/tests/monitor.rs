//! The SLO monitor on a real SQLite file and a manual clock: the failure rate without skipped
//! jobs, stuck work on its two axes, missed firings, and an alert
//! webhook that hears a warning once and a recovery once.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use kairos_channels::{WebhookConfig, WebhookSender};
use kairos_core::{Failure, Outcome};
use kairos_engine::monitor::{
    AlertSink, CheckResult, CheckStatus, Monitor, MonitorConfig, SloReport, names,
};
use kairos_store::JobClaim;
use kairos_testkit::Reply;
use kairos_testkit::TestReceiver;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration as StdDuration;

fn monitor(h: &Harness, cfg: MonitorConfig) -> Monitor {
    Monitor::new(cfg, h.store.clone()).expect("monitor config")
}

fn find<'a>(r: &'a SloReport, check: &str, subject: Option<&str>) -> &'a CheckResult {
    r.checks
        .iter()
        .find(|c| c.check == check && c.subject.as_deref() == subject)
        .unwrap_or_else(|| panic!("no {check} {subject:?} in {r:#?}"))
}

/// A handler whose outcome is the payload's `"r"`: `ok`, `skip` or `fail` (permanent).
fn scripted() -> Arc<TestHandler> {
    TestHandler::new(|job, _| match job.payload["r"].as_str() {
        Some("skip") => Outcome::Skipped("suppressed".into()),
        Some("fail") => Outcome::Failed(Failure::permanent("HTTP 422")),
        _ => Outcome::ok(),
    })
}

/// failed / (succeeded + failed). Six skipped jobs and a pending one are not in the
/// denominator: 2 of 4 decided jobs failed is 50 %, a warning above 30 % — counting the
/// skipped ones would make it 2 of 10, 20 %, and no warning.
#[tokio::test]
async fn failure_rate_excludes_skipped_and_pending_jobs() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    for r in [
        "ok", "ok", "fail", "fail", "skip", "skip", "skip", "skip", "skip", "skip",
    ] {
        h.enqueue(
            "mail",
            serde_json::json!({ "r": r }),
            None,
            Some(max_attempts(1)),
        )
        .await;
    }
    // Pending: due tomorrow, never decided in the window.
    h.enqueue(
        "mail",
        serde_json::json!({"r": "fail"}),
        Some(t0 + secs(86_400)),
        Some(max_attempts(1)),
    )
    .await;
    let run = h.exec(t0).await;
    assert_eq!((run.succeeded, run.dead, run.skipped), (2, 2, 6), "{run:?}");

    let cfg = MonitorConfig {
        failure_rate: 0.3,
        min_sample: 4,
        ..Default::default()
    };
    let report = monitor(&h, cfg.clone())
        .evaluate(t0 + mins(1))
        .await
        .unwrap();
    let rate = find(&report, names::FAILURE_RATE, Some("mail"));
    assert_eq!(rate.sample, Some(4), "skipped and pending are not decided");
    assert_eq!(rate.value, Some(0.5));
    assert_eq!(rate.status, CheckStatus::Warning, "{rate:?}");

    // Below the minimum sample, the same rate is not a warning.
    let few = MonitorConfig {
        min_sample: 5,
        ..cfg.clone()
    };
    let report = monitor(&h, few).evaluate(t0 + mins(1)).await.unwrap();
    let rate = find(&report, names::FAILURE_RATE, Some("mail"));
    assert_eq!(rate.status, CheckStatus::InsufficientData);

    // Outside the window (1 h), nothing is decided any more.
    let report = monitor(&h, cfg).evaluate(t0 + mins(61)).await.unwrap();
    let rate = find(&report, names::FAILURE_RATE, None);
    assert_eq!(rate.status, CheckStatus::InsufficientData);
}

/// A pass reads the failure rate's hour from the sampler's quarter counts of finished jobs
/// per kind and state, and the job table only for the window's start up to its first counted
/// quarter and for the quarters not counted yet; it finds what a count of the whole window
/// finds, and a quarter leaving the window stops counting.
#[tokio::test]
async fn failure_rate_sums_the_counted_quarters_and_reads_only_the_rest_of_the_window() {
    let t0 = t("2026-11-29T08:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    let run = |at, results: &'static [&'static str]| {
        let h = &h;
        async move {
            for r in results {
                h.enqueue("mail", json!({ "r": r }), Some(at), Some(max_attempts(1)))
                    .await;
            }
            h.exec(at).await
        }
    };
    // 08:10: 3 ok, 1 fail; 08:40: 4 fail (the quarter in progress at 08:50); 09:05: 2 ok,
    // 2 skipped (not decided).
    run(t0 + mins(10), &["ok", "ok", "ok", "fail"]).await;
    run(t0 + mins(40), &["fail", "fail", "fail", "fail"]).await;
    let cfg = MonitorConfig {
        failure_rate: 0.3,
        min_sample: 4,
        ..Default::default()
    };
    let counting = CountingStore::new(h.store.clone());
    let m = Monitor::new(cfg, counting.clone()).expect("monitor config");
    let now = t0 + mins(50);
    let until = now + ms(1);
    let expect = |r: &SloReport, failed: i64, decided: i64| {
        let f = find(r, names::FAILURE_RATE, Some("mail"));
        assert_eq!(f.sample, Some(decided), "{f:?}");
        assert_eq!(f.value, Some(failed as f64 / decided as f64), "{f:?}");
    };
    // No quarter counted yet: the whole hour from the job table.
    expect(&m.evaluate(now).await.unwrap(), 5, 8);
    assert_eq!(
        std::mem::take(&mut *counting.finished_ranges.lock().unwrap()),
        vec![(now - mins(60), until)]
    );
    // The sampler counts 08:30 (ended five minutes ago) and the gaps back to 07:30.
    h.engine.sampler().run_once(now).await.unwrap();
    expect(&m.evaluate(now).await.unwrap(), 5, 8);
    assert_eq!(
        std::mem::take(&mut *counting.finished_ranges.lock().unwrap()),
        vec![(now - mins(60), t0), (t0 + mins(45), until)],
        "ten minutes before the first quarter, and 08:45, in progress"
    );
    assert_eq!(
        std::mem::take(&mut *counting.sum_ranges.lock().unwrap()),
        vec![
            (t0, t0 + mins(45)),
            (t0 - mins(30), t0 + mins(45)),
            (t0 - mins(30), t0 + mins(45))
        ],
        "the failure rate's three quarters summed by the database in one range; the skip and \
         bounce rates' day and week, all five quarters counted"
    );
    run(t0 + mins(65), &["ok", "ok", "skip", "skip"]).await;
    // At 09:12 the 08:00 quarter starts before the window: its jobs (at 08:10) are read from
    // the job table and are out; 08:30 is counted by then.
    let later = t0 + mins(72);
    h.engine.sampler().run_once(later).await.unwrap();
    expect(&m.evaluate(later).await.unwrap(), 4, 6);
    assert_eq!(
        std::mem::take(&mut *counting.finished_ranges.lock().unwrap()),
        vec![
            (later - mins(60), t0 + mins(15)),
            (t0 + mins(60), later + ms(1))
        ],
        "08:12 to 08:15, and 09:00, in progress"
    );
    // The dead jobs replayed leave their counted quarters at once: the rate falls (0 of the 2
    // decided); when they die again they count in the quarter they die in, once.
    let replayed = h
        .store
        .job_bulk_retry(kairos_store::JobBulkRetry {
            select: kairos_store::JobSelect {
                filter: kairos_store::JobFilter {
                    state: Some("dead".into()),
                    ..Default::default()
                },
                limit: 100,
                ..Default::default()
            },
            now: later,
        })
        .await
        .unwrap();
    assert_eq!(replayed.count, 5);
    expect(&m.evaluate(later).await.unwrap(), 0, 2);
    h.exec(later).await;
    expect(&m.evaluate(later).await.unwrap(), 5, 7);
}

/// a job due and not claimed is stuck after the threshold, not before.
#[tokio::test]
async fn stuck_job_is_detected_after_the_threshold_and_not_before() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    h.enqueue("mail", serde_json::json!({"r": "ok"}), Some(t0), None)
        .await;
    let m = monitor(
        &h,
        MonitorConfig {
            stuck_after: StdDuration::from_secs(3600),
            ..Default::default()
        },
    );
    let before = m.evaluate(t0 + mins(59)).await.unwrap();
    assert_eq!(
        find(&before, names::STUCK_DUE, None).status,
        CheckStatus::Ok
    );
    let at = m.evaluate(t0 + mins(60)).await.unwrap();
    let stuck = find(&at, names::STUCK_DUE, None);
    assert_eq!(stuck.status, CheckStatus::Warning, "{stuck:?}");
    assert_eq!(stuck.value, Some(1.0));
    assert_eq!(
        find(&at, names::LEASE_EXPIRED, None).status,
        CheckStatus::Ok,
        "a waiting job is not running past its lease: its own axis"
    );
    // Claimed and done: no longer stuck.
    h.exec(t0 + mins(61)).await;
    let after = m.evaluate(t0 + mins(62)).await.unwrap();
    assert_eq!(find(&after, names::STUCK_DUE, None).status, CheckStatus::Ok);
}

/// S3-16, second axis: a job still running past its lease plus the grace (its node died and
/// no rescuer returned it) warns on `lease_expired`, not on `stuck_due`.
#[tokio::test]
async fn job_running_past_its_lease_warns_on_its_own_axis() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    h.enqueue("mail", serde_json::json!({}), Some(t0), None)
        .await;
    let claimed = h
        .store
        .job_claim(JobClaim {
            now: t0,
            limit: 1,
            node: "dead-node".into(),
            lease_token: "lease_x".into(),
            lease_until: t0 + secs(30),
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let m = monitor(&h, MonitorConfig::default()); // lease grace 60 s
    let within = m.evaluate(t0 + secs(89)).await.unwrap();
    assert_eq!(
        find(&within, names::LEASE_EXPIRED, None).status,
        CheckStatus::Ok
    );
    let past = m.evaluate(t0 + secs(91)).await.unwrap();
    assert_eq!(
        find(&past, names::LEASE_EXPIRED, None).status,
        CheckStatus::Warning
    );
    assert_eq!(find(&past, names::STUCK_DUE, None).status, CheckStatus::Ok);
}

/// S4-10: an hourly schedule whose scheduler did not run for a day (and whose misfire policy
/// drops missed firings) warns while it is overdue, then once for the gap the scheduler
/// recorded when it came back (subject `sch_…@<first missed firing>`, value the count), and
/// the gap's warning clears at the schedule's next on-time firing.
#[tokio::test]
async fn schedule_whose_scheduler_paused_for_a_day_reports_missed_firings_s4_10() {
    let t0 = t("2026-11-29T09:00:30Z");
    let h = Harness::new(t0, &[("tick", TestHandler::ok())]).await;
    let mut req = new_schedule("hourly", "tick");
    req.cron = Some("0 * * * *".into());
    req.misfire = Some("skip".into());
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let m = monitor(&h, MonitorConfig::default()); // 5 min grace
    h.sched(t("2026-11-29T10:00:00Z")).await;
    h.sched(t("2026-11-29T11:00:00Z")).await;
    let fine = m.evaluate(t("2026-11-29T11:10:00Z")).await.unwrap();
    let r = find(&fine, names::MISSED_FIRINGS, Some(&s.id));
    assert_eq!((r.status, r.value), (CheckStatus::Ok, Some(0.0)));

    // The scheduler stops: while it is out, the schedule is overdue.
    let out = m.evaluate(t("2026-11-30T10:30:00Z")).await.unwrap();
    let r = find(&out, names::MISSED_FIRINGS, Some(&s.id));
    assert_eq!(r.status, CheckStatus::Warning, "{r:?}");
    assert!(r.message.contains("not fired"), "{}", r.message);

    // Back after a day: the policy skips what it missed, recorded as one gap.
    let tick = h.sched(t("2026-11-30T11:00:10Z")).await;
    assert_eq!(tick.misfires_skipped, 23, "{tick:?}");
    let report = m.evaluate(t("2026-11-30T11:10:00Z")).await.unwrap();
    let gap = format!("{}@2026-11-29T12:00:00Z", s.id);
    let r = find(&report, names::MISSED_FIRINGS, Some(&gap));
    assert_eq!(r.status, CheckStatus::Warning, "{r:?}");
    assert_eq!(r.value, Some(23.0));
    assert!(r.message.contains("hourly"), "{}", r.message);
    assert!(r.message.contains("2026-11-30T10:00:00Z"), "{}", r.message);
    let r = find(&report, names::MISSED_FIRINGS, Some(&s.id));
    assert_eq!((r.status, r.value), (CheckStatus::Ok, Some(1.0)));

    // The next on-time firing recovers it.
    h.sched(t("2026-11-30T12:00:00Z")).await;
    let later = m.evaluate(t("2026-11-30T12:10:00Z")).await.unwrap();
    assert!(
        later
            .checks
            .iter()
            .all(|c| c.subject.as_deref() != Some(gap.as_str())),
        "{later:?}"
    );
}

/// A one-shot missed with `"misfire": "skip"` finishes with no job; its gap still warns (and
/// raises an alert), though the schedule is no longer active.
#[tokio::test]
async fn finished_one_shot_with_a_missed_firing_warns_per_gap() {
    let h = Harness::new(t("2026-11-29T09:00:00Z"), &[("tick", TestHandler::ok())]).await;
    let mut req = new_schedule("reminder", "tick");
    req.at = Some("2026-11-29T09:01:00Z".into());
    req.misfire = Some("skip".into());
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    h.sched(t("2026-11-29T09:04:00Z")).await;
    let s = h.kairos.schedule_get(&s.id).await.unwrap();
    assert_eq!(s.state, kairos_store::ScheduleState::Finished);
    let m = monitor(&h, MonitorConfig::default());
    let r = m.run_once(t("2026-11-29T09:05:00Z")).await.unwrap();
    let gap = format!("{}@2026-11-29T09:01:00Z", s.id);
    let c = find(&r.slo, names::MISSED_FIRINGS, Some(&gap));
    assert_eq!(
        (c.status, c.value),
        (CheckStatus::Warning, Some(1.0)),
        "{c:?}"
    );
    assert!(c.message.contains("reminder"), "{}", c.message);
    assert!(
        r.alerts.raised.contains(&format!("missed_firings:{gap}")),
        "{:?}",
        r.alerts
    );
}

fn alerting_monitor(h: &Harness, rx: &TestReceiver) -> Monitor {
    kairos_testkit::init_crypto();
    let sender = WebhookSender::new(WebhookConfig {
        allow_private_targets: true,
        ..Default::default()
    })
    .expect("sender");
    let sink = AlertSink::new(&rx.url("/alerts"), SECRET, sender).expect("sink");
    monitor(h, MonitorConfig::default()).with_alerts(sink)
}

fn body(r: &kairos_testkit::Received) -> serde_json::Value {
    serde_json::from_str(&r.body_text()).expect("JSON body")
}

fn unix(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

/// a warning reaches the alert webhook once, however many runs see it — also across a
/// restart (a new monitor over the same store) — and its recovery once, signed like every
/// kairos webhook.
#[tokio::test]
async fn alert_webhook_receives_one_warning_and_one_recovery() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    h.enqueue("mail", serde_json::json!({"r": "ok"}), Some(t0), None)
        .await;
    let m = alerting_monitor(&h, &rx);
    let quiet = m.run_once(t0 + mins(30)).await.unwrap();
    assert!(quiet.alerts.raised.is_empty());
    assert_eq!(rx.count(), 0);

    for i in 0..5 {
        let r = m.run_once(t0 + mins(61 + i)).await.unwrap();
        assert_eq!(r.alerts.raised.len(), usize::from(i == 0), "run {i}: {r:?}");
    }
    // A restart: a new monitor finds the warning already sent.
    let restarted = alerting_monitor(&h, &rx);
    restarted.run_once(t0 + mins(70)).await.unwrap();
    assert_eq!(rx.count(), 1, "one warning, not one per run");
    let warning = rx.received().remove(0);
    assert!(kairos_testkit::verify_standard_webhook(
        SECRET,
        &warning,
        unix(t0 + mins(61))
    ));
    let b = body(&warning);
    assert_eq!(b["type"], "slo.warning");
    assert_eq!(b["data"]["check"], "stuck_due");
    assert_eq!(warning.header("webhook-id"), Some("slo:stuck_due:1"));

    // The stuck job runs; the warning clears once.
    h.exec(t0 + mins(71)).await;
    for i in 0..3 {
        let r = restarted.run_once(t0 + mins(72 + i)).await.unwrap();
        assert_eq!(
            r.alerts.cleared.len(),
            usize::from(i == 0),
            "run {i}: {r:?}"
        );
    }
    assert_eq!(rx.count(), 2, "one warning and one recovery");
    let recovery = rx.received().remove(1);
    assert_eq!(body(&recovery)["type"], "slo.recovered");
    assert_eq!(recovery.header("webhook-id"), Some("slo:stuck_due:2"));
    assert!(kairos_testkit::verify_standard_webhook(
        SECRET,
        &recovery,
        unix(t0 + mins(72))
    ));
}

/// An alert the receiver did not accept is sent again at the next run, with the same
/// `webhook-id`, until it is accepted — and then never again.
#[tokio::test]
async fn undelivered_alert_is_retried_with_the_same_id_until_accepted() {
    let rx = TestReceiver::start().await;
    rx.respond_with(vec![Reply::status(503), Reply::status(500)]);
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    h.enqueue("mail", serde_json::json!({}), Some(t0), None)
        .await;
    let m = alerting_monitor(&h, &rx);
    let mut notified = Vec::new();
    for i in 0..5 {
        notified.push(m.run_once(t0 + mins(61 + i)).await.unwrap().alerts.notified);
    }
    assert_eq!(notified, vec![0, 0, 1, 0, 0]);
    let ids: Vec<_> = rx
        .received()
        .iter()
        .map(|r| r.header("webhook-id").unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids, vec!["slo:stuck_due:1"; 3]);
}

/// Each setting is validated with the field named.
#[test]
fn monitor_config_validation_names_the_field() {
    let bad = MonitorConfig {
        failure_rate: 1.5,
        ..Default::default()
    };
    assert_eq!(bad.validate().unwrap_err().field(), "monitor.failure_rate");
    let bad = MonitorConfig {
        disabled: vec!["nope".into()],
        ..Default::default()
    };
    assert_eq!(bad.validate().unwrap_err().field(), "monitor.disabled");
    assert!(MonitorConfig::default().validate().is_ok());
}

/// A disabled check is not evaluated.
#[tokio::test]
async fn disabled_check_is_not_evaluated() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    let m = monitor(
        &h,
        MonitorConfig {
            disabled: vec![names::STUCK_DUE.into()],
            ..Default::default()
        },
    );
    let r = m.evaluate(t0).await.unwrap();
    assert!(
        r.checks.iter().all(|c| c.check != names::STUCK_DUE),
        "{r:#?}"
    );
    assert!(r.checks.iter().any(|c| c.check == names::LEASE_EXPIRED));
}

/// Without an alert webhook, transitions are recorded as handled: a webhook configured later
/// hears only what happens from then on, not a replay of old warnings.
#[tokio::test]
async fn webhook_configured_later_does_not_replay_old_warnings() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", scripted())]).await;
    h.enqueue("mail", serde_json::json!({"r": "ok"}), Some(t0), None)
        .await;
    let silent = monitor(&h, MonitorConfig::default());
    let r = silent.run_once(t0 + mins(61)).await.unwrap();
    assert_eq!(r.alerts.raised, vec!["stuck_due".to_string()]);
    let loud = alerting_monitor(&h, &rx);
    loud.run_once(t0 + mins(62)).await.unwrap();
    assert_eq!(rx.count(), 0, "the old warning is not replayed");
    h.exec(t0 + mins(63)).await;
    loud.run_once(t0 + mins(64)).await.unwrap();
    assert_eq!(rx.count(), 1);
    assert_eq!(body(&rx.received()[0])["type"], "slo.recovered");
}

/// a digest period whose artifact is still missing after its last catch-up (13:00),
/// the digest's 15-minute deadline and the grace, warns — not before that — and the warning
/// clears once the period's artifact exists.
#[tokio::test]
async fn digest_period_without_artifact_after_its_last_catch_up_warns() {
    let t0 = t("2026-11-29T06:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let s = h
        .kairos
        .schedule_create(
            serde_json::from_value(serde_json::json!({
                "name": "daily-digest",
                "kind": "digest",
                "digest": {"name": "news", "feeds": ["https://feeds.example/rss"]},
                "cron": "0 7 * * *",
                "timezone": "UTC",
                "period": "day",
                "catch_up": ["13:00"],
            }))
            .expect("schedule body"),
        )
        .await
        .expect("digest schedule");
    let cfg = MonitorConfig::default(); // grace 5 min
    let check = |r: &SloReport| {
        r.checks
            .iter()
            .find(|c| c.check == names::MISSING_ARTIFACTS)
            .cloned()
    };
    // 13:19: the 13:00 catch-up may still be running (15 min deadline + 5 min grace).
    let before = monitor(&h, cfg.clone())
        .evaluate(t("2026-11-29T13:19:00Z"))
        .await
        .unwrap();
    assert!(check(&before).is_none(), "{before:#?}");
    // 13:21: its last chance has passed and there is no artifact.
    let after = monitor(&h, cfg.clone())
        .evaluate(t("2026-11-29T13:21:00Z"))
        .await
        .unwrap();
    let c = check(&after).expect("a missing_artifacts result");
    assert_eq!(c.status, CheckStatus::Warning, "{c:?}");
    assert_eq!(c.subject.as_deref(), Some(s.id.as_str()));
    assert_eq!((c.value, c.sample), (Some(1.0), Some(1)));
    assert!(c.message.contains("2026-11-29"), "{}", c.message);
    // The artifact arrives: the check is OK.
    h.store
        .artifact_put(kairos_store::ArtifactPut {
            artifact: kairos_store::Artifact {
                name: "news".into(),
                period_key: "2026-11-29".into(),
                content: "summary".into(),
                data: serde_json::json!({}),
                job_id: None,
                schedule_id: Some(s.id.clone()),
                created_at: t("2026-11-29T13:30:00Z"),
            },
            then: vec![],
        })
        .await
        .unwrap();
    let ok = monitor(&h, cfg)
        .evaluate(t("2026-11-29T13:31:00Z"))
        .await
        .unwrap();
    assert_eq!(check(&ok).expect("result").status, CheckStatus::Ok);
}

/// A daily schedule's one run that dies is a `dead_runs` warning for its schedule — naming the
/// channel, its kind and the last error — although the failure rate has "insufficient data"
/// and the firing counts as materialized; the alert webhook hears it once while it lasts — also
/// after the death left the window — and its recovery once when it is acknowledged. Before the
/// death there is no entry.
#[tokio::test]
async fn daily_run_that_dies_warns_dead_runs_once_per_transition() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-11-29T05:00:00Z");
    let failing =
        TestHandler::new(|_, _| Outcome::Failed(Failure::permanent("HTTP 404 from the route")));
    let h = Harness::new(t0, &[("call", failing)]).await;
    let mut req = new_schedule("nightly-call", "call");
    req.cron = Some("0 6 * * *".into());
    req.retry = Some(max_attempts(1));
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let m = alerting_monitor(&h, &rx);

    let fired = t("2026-11-29T06:00:00Z");
    h.sched(fired).await;
    let before = m.evaluate(fired).await.unwrap();
    assert!(
        before.checks.iter().all(|c| c.check != names::DEAD_RUNS),
        "no dead run yet: {before:#?}"
    );
    let run = h.exec(fired).await;
    assert_eq!(run.dead, 1, "{run:?}");

    let report = m.evaluate(fired + mins(10)).await.unwrap();
    let r = find(&report, names::DEAD_RUNS, Some(&s.id));
    assert_eq!(r.status, CheckStatus::Warning, "{r:?}");
    assert_eq!(r.value, Some(1.0));
    for needle in [
        "nightly-call",
        "channel \"call\"",
        "kind call",
        "HTTP 404 from the route",
    ] {
        assert!(r.message.contains(needle), "{needle:?} in {}", r.message);
    }
    let rate = find(&report, names::FAILURE_RATE, Some("call"));
    assert_eq!(
        rate.status,
        CheckStatus::InsufficientData,
        "one job is no rate"
    );
    let missed = find(&report, names::MISSED_FIRINGS, Some(&s.id));
    assert_eq!(
        missed.status,
        CheckStatus::Ok,
        "the dead run was materialized"
    );

    let key = format!("dead_runs:{}", s.id);
    for i in 0..3 {
        let r = m.run_once(fired + mins(11 + i)).await.unwrap();
        let raised: Vec<_> = r.alerts.raised.iter().filter(|k| **k == key).collect();
        assert_eq!(raised.len(), usize::from(i == 0), "run {i}: {r:?}");
    }
    // The death leaves the 24 h window and the job is still dead: the warning stays.
    let r = m.run_once(fired + mins(24 * 60 + 5)).await.unwrap();
    assert!(r.alerts.cleared.is_empty(), "{r:?}");
    // Acknowledged: it recovers, and the next runs deliver that recovery once.
    kairos_engine::monitor::ack(h.store.as_ref(), &key, fired + mins(24 * 60 + 6))
        .await
        .expect("ack");
    for i in 0..2 {
        // (The next day's firing is overdue by now — no scheduler runs in this test — so
        // `missed_firings` may warn; only the dead run matters here.)
        let r = m.run_once(fired + mins(24 * 60 + 7 + i)).await.unwrap();
        assert!(!r.alerts.raised.contains(&key), "run {i}: {r:?}");
    }
    let dead_runs: Vec<serde_json::Value> = rx
        .received()
        .iter()
        .map(body)
        .filter(|b| b["data"]["check"] == "dead_runs")
        .collect();
    assert_eq!(
        dead_runs.len(),
        2,
        "one warning, one recovery: {dead_runs:?}"
    );
    assert_eq!(dead_runs[0]["type"], "slo.warning");
    assert_eq!(dead_runs[0]["data"]["subject"], s.id.as_str());
    assert_eq!(dead_runs[1]["type"], "slo.recovered");
    assert_eq!(dead_runs[1]["data"]["acknowledged"], true);
}

/// The dead-runs window is a setting: a death older than it does not raise a warning.
#[tokio::test]
async fn dead_runs_window_is_a_setting() {
    let t0 = t("2026-11-29T05:00:00Z");
    let failing = TestHandler::new(|_, _| Outcome::Failed(Failure::permanent("HTTP 410")));
    let h = Harness::new(t0, &[("call", failing)]).await;
    let mut req = new_schedule("hourly-call", "call");
    req.cron = Some("0 6 * * *".into());
    req.retry = Some(max_attempts(1));
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let fired = t("2026-11-29T06:00:00Z");
    h.sched(fired).await;
    h.exec(fired).await;
    let short = MonitorConfig {
        dead_runs_window: StdDuration::from_secs(3600),
        ..Default::default()
    };
    let inside = monitor(&h, short.clone())
        .evaluate(fired + mins(59))
        .await
        .unwrap();
    assert_eq!(
        find(&inside, names::DEAD_RUNS, Some(&s.id)).status,
        CheckStatus::Warning
    );
    let outside = monitor(&h, short).evaluate(fired + mins(61)).await.unwrap();
    assert!(outside.checks.iter().all(|c| c.check != names::DEAD_RUNS));
    let zero = MonitorConfig {
        dead_runs_window: StdDuration::ZERO,
        ..Default::default()
    };
    let err = zero.validate().unwrap_err();
    assert_eq!(err.field(), "monitor.dead_runs_window");
}

/// A handler whose outcome is the payload's `"skip"` reason, or success without one.
fn skipping() -> Arc<TestHandler> {
    TestHandler::new(|job, _| match job.payload["skip"].as_str() {
        Some(reason) => Outcome::Skipped(reason.to_string()),
        None => Outcome::ok(),
    })
}

async fn enqueue_n(h: &Harness, n: usize, payload: serde_json::Value) {
    for _ in 0..n {
        h.enqueue("email", payload.clone(), None, None).await;
    }
}

/// A topic whose jobs are mostly skipped for one reason (a wrong entitlement URL makes every
/// recipient `not_entitled`) is a `skip_rate` warning naming the topic and the reason; at
/// exactly half, with fewer than 5 skips, or with the skips split between reasons, it is not.
#[tokio::test]
async fn skip_rate_warns_when_most_decided_jobs_of_a_topic_skip_for_one_reason() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("email", skipping()), ("hook", skipping())]).await;
    // "weekly": 5 of 10 skipped as not_entitled: exactly half, no warning yet.
    enqueue_n(&h, 5, json!({"topic": "weekly", "skip": "not_entitled"})).await;
    enqueue_n(&h, 5, json!({"topic": "weekly"})).await;
    // "tiny": 4 of 4 skipped: above half, but fewer than 5 skips.
    enqueue_n(&h, 4, json!({"topic": "tiny", "skip": "suppressed"})).await;
    // "mixed": 6 of 7 skipped, but 3 for each of two reasons.
    enqueue_n(&h, 3, json!({"topic": "mixed", "skip": "suppressed"})).await;
    enqueue_n(&h, 3, json!({"topic": "mixed", "skip": "unsubscribed"})).await;
    enqueue_n(&h, 1, json!({"topic": "mixed"})).await;
    // No topic and no schedule: not a subject.
    enqueue_n(&h, 6, json!({"skip": "not_entitled"})).await;
    // Another kind's payload `topic` is the caller's data, not an audience topic.
    for _ in 0..6 {
        h.enqueue(
            "hook",
            json!({"topic": "orders", "skip": "endpoint_disabled"}),
            None,
            None,
        )
        .await;
    }
    h.exec(t0).await;

    let m = monitor(&h, MonitorConfig::default());
    let below = m.evaluate(t0 + mins(1)).await.unwrap();
    assert!(
        below.checks.iter().all(|c| c.check != names::SKIP_RATE),
        "{below:#?}"
    );

    // One more not_entitled skip: 6 of 11, more than half.
    enqueue_n(&h, 1, json!({"topic": "weekly", "skip": "not_entitled"})).await;
    h.exec(t0 + mins(2)).await;
    let report = m.evaluate(t0 + mins(3)).await.unwrap();
    let skips: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.check == names::SKIP_RATE)
        .collect();
    assert_eq!(skips.len(), 1, "{skips:#?}");
    let r = skips[0];
    assert_eq!(r.subject.as_deref(), Some("weekly"));
    assert_eq!(r.status, CheckStatus::Warning);
    assert_eq!(r.sample, Some(11));
    assert!(r.message.starts_with("not_entitled"), "{}", r.message);
    assert!(r.message.contains("6 of 11"), "{}", r.message);

    // The minimum is a setting; an ignored reason does not count.
    let four = MonitorConfig {
        skip_min: 4,
        ..Default::default()
    };
    let report = monitor(&h, four.clone())
        .evaluate(t0 + mins(3))
        .await
        .unwrap();
    let tiny = find(&report, names::SKIP_RATE, Some("tiny"));
    assert!(tiny.message.starts_with("suppressed"), "{}", tiny.message);
    let ignoring = MonitorConfig {
        skip_ignore: vec!["suppressed".into()],
        ..four
    };
    let report = monitor(&h, ignoring).evaluate(t0 + mins(3)).await.unwrap();
    assert!(
        report
            .checks
            .iter()
            .all(|c| !(c.check == names::SKIP_RATE && c.subject.as_deref() == Some("tiny")))
    );
    // Outside the window (24 h) the skips are forgotten.
    let later = m.evaluate(t0 + mins(24 * 60 + 5)).await.unwrap();
    assert!(later.checks.iter().all(|c| c.check != names::SKIP_RATE));
}

/// A pass reads the jobs decided in the skip-rate window from the sampler's quarter-hour
/// counts, and the job table only for the window's start up to its first counted quarter and
/// for the quarter in progress; it finds what a count of the whole window finds.
#[tokio::test]
async fn skip_rate_sums_the_counted_quarters_and_finds_what_the_job_table_holds() {
    let t0 = t("2026-11-29T08:00:00Z");
    let mut cfg = kairos_engine::EngineConfig::default();
    cfg.monitor.skip_window = StdDuration::from_secs(2 * 3600);
    let h = Harness::with_config(t0, cfg.clone(), &[("email", skipping())]).await;
    // 08:20: 3 of "weekly" skipped as not_entitled, 4 sent; 09:05: 3 more skipped; 10:05
    // (the quarter in progress at 10:10): 1 sent.
    enqueue_n(&h, 3, json!({"topic": "weekly", "skip": "not_entitled"})).await;
    enqueue_n(&h, 4, json!({"topic": "weekly"})).await;
    h.exec(t0 + mins(20)).await;
    enqueue_n(&h, 3, json!({"topic": "weekly", "skip": "not_entitled"})).await;
    h.exec(t0 + mins(65)).await;
    enqueue_n(&h, 1, json!({"topic": "weekly"})).await;
    h.exec(t0 + mins(125)).await;
    let now = t0 + mins(130);
    let counting = CountingStore::new(h.store.clone());
    let m = Monitor::new(cfg.monitor.clone(), counting.clone())
        .expect("monitor config")
        .with_kinds(h.engine.kinds());
    let expect = |r: &SloReport| {
        let w = find(r, names::SKIP_RATE, Some("weekly"));
        assert_eq!(w.status, CheckStatus::Warning, "{w:?}");
        assert_eq!((w.sample, w.value), (Some(11), Some(6.0 / 11.0)), "{w:?}");
    };
    // No quarter counted yet: the whole window from the job table.
    expect(&m.evaluate(now).await.unwrap());
    let until = now + ms(1);
    assert_eq!(
        std::mem::take(&mut *counting.decided_ranges.lock().unwrap()),
        vec![(now - mins(120), until)]
    );
    for i in 0..2 {
        h.engine.sampler().run_once(now + secs(i)).await.unwrap();
    }
    expect(&m.evaluate(now).await.unwrap());
    assert_eq!(
        std::mem::take(&mut *counting.decided_ranges.lock().unwrap()),
        vec![(now - mins(120), t0 + mins(15)), (t0 + mins(120), until)],
        "five minutes before the first quarter, and the quarter in progress"
    );
}

/// A schedule whose runs are mostly skipped for one reason warns with the schedule as the
/// subject and its name in the message.
#[tokio::test]
async fn skip_rate_warns_per_schedule() {
    let t0 = t("2026-11-29T05:55:00Z");
    let h = Harness::new(t0, &[("mail", skipping())]).await;
    let mut req = new_schedule("every-ten-minutes", "mail");
    req.cron = Some("*/10 * * * *".into());
    req.payload = Some(serde_json::json!({"skip": "not_entitled"}));
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let first = t("2026-11-29T06:00:00Z");
    for i in 0..5 {
        let at = first + mins(10 * i);
        h.sched(at).await;
        h.exec(at).await;
    }
    let m = monitor(&h, MonitorConfig::default());
    let report = m.evaluate(first + mins(45)).await.unwrap();
    let r = find(&report, names::SKIP_RATE, Some(&s.id));
    assert_eq!(r.status, CheckStatus::Warning);
    assert_eq!((r.value, r.sample), (Some(1.0), Some(5)));
    assert!(r.message.contains("every-ten-minutes"), "{}", r.message);
    assert!(r.message.starts_with("not_entitled"), "{}", r.message);
}

/// An audience expansion that does not advance (the expander fails on it at every tick, or
/// does not run) is an `expansions_stuck` warning for its schedule after the threshold, not
/// before; one that advances is not stuck, and a finished one never is.
#[tokio::test]
async fn expansion_not_advancing_past_the_threshold_is_stuck() {
    use kairos_store::{ExpansionAdvance, ExpansionBegin};
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[("mail", skipping())]).await;
    let mut req = new_schedule("weekly-summary", "mail");
    req.cron = Some("0 9 * * 1".into());
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let begin = |period: &str| ExpansionBegin {
        schedule_id: s.id.clone(),
        period_key: period.into(),
        fire_at: t0,
        now: t0,
    };
    h.store.expansion_begin(begin("2026-W48")).await.unwrap();
    h.store.expansion_begin(begin("2026-W47")).await.unwrap();
    // W47 advances one page at +10 min and finishes at +12 min: never stuck.
    let step = |cursor: Option<&str>, next: &str, done: bool, now| ExpansionAdvance {
        schedule_id: s.id.clone(),
        period_key: "2026-W47".into(),
        expected_cursor: cursor.map(str::to_string),
        cursor: Some(next.to_string()),
        done,
        jobs: vec![],
        now,
    };
    h.store
        .expansion_advance(step(None, "rcp_1", false, t0 + mins(10)))
        .await
        .unwrap()
        .expect("advanced");

    let m = monitor(&h, MonitorConfig::default()); // 15 min
    let before = m.evaluate(t0 + mins(14)).await.unwrap();
    assert!(
        before
            .checks
            .iter()
            .all(|c| c.check != names::EXPANSIONS_STUCK),
        "{before:#?}"
    );
    let after = m.evaluate(t0 + mins(16)).await.unwrap();
    let r = find(&after, names::EXPANSIONS_STUCK, Some(&s.id));
    assert_eq!(r.status, CheckStatus::Warning);
    assert_eq!(r.value, Some(1.0), "W47 advanced at +10 min: {}", r.message);
    for needle in ["weekly-summary", "2026-W48"] {
        assert!(r.message.contains(needle), "{needle:?} in {}", r.message);
    }
    // At +26 min W47 has not advanced for 16 min either; then it finishes.
    let both = m.evaluate(t0 + mins(26)).await.unwrap();
    assert_eq!(
        find(&both, names::EXPANSIONS_STUCK, Some(&s.id)).value,
        Some(2.0)
    );
    h.store
        .expansion_advance(step(Some("rcp_1"), "rcp_1", true, t0 + mins(27)))
        .await
        .unwrap()
        .expect("finished");
    let later = m.evaluate(t0 + mins(60)).await.unwrap();
    assert_eq!(
        find(&later, names::EXPANSIONS_STUCK, Some(&s.id)).value,
        Some(1.0)
    );

    // The threshold is a setting.
    let patient = MonitorConfig {
        expansion_stuck_after: StdDuration::from_secs(2 * 3600),
        ..Default::default()
    };
    let r = monitor(&h, patient).evaluate(t0 + mins(60)).await.unwrap();
    assert!(r.checks.iter().all(|c| c.check != names::EXPANSIONS_STUCK));
}
