//! The monitor watches itself and its warnings recover when fixed (issue 30), on a real
//! SQLite file and a manual clock: a check that fails is an `error` result while the others
//! answer; a completed pass is recorded and a monitor without one for three intervals is
//! itself a warning; a dead run and a missing artifact stay warnings until fixed or
//! acknowledged, not until they leave the window; a rate recovers when it falls.

mod common;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::*;
use kairos_core::{Failure, Outcome};
use kairos_engine::monitor::{
    AckError, CheckResult, CheckStatus, ExtraCheck, Monitor, MonitorConfig, SloReport, ack, names,
};
use kairos_store::{Artifact, ArtifactPut, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn monitor(h: &Harness, cfg: MonitorConfig) -> Monitor {
    Monitor::new(cfg, h.store.clone()).expect("monitor config")
}

fn results<'a>(r: &'a SloReport, check: &str) -> Vec<&'a CheckResult> {
    r.checks.iter().filter(|c| c.check == check).collect()
}

async fn alert(h: &Harness, key: &str) -> kairos_store::SloAlert {
    h.store
        .slo_alert_list()
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.key == key)
        .unwrap_or_else(|| panic!("no stored alert {key}"))
}

/// A check whose store read fails, as a locked or unreachable database answers.
struct Unreadable;

#[async_trait]
impl ExtraCheck for Unreadable {
    fn name(&self) -> &str {
        "unreadable"
    }
    async fn evaluate(
        &self,
        _store: &dyn Store,
        _now: DateTime<Utc>,
    ) -> Result<Vec<CheckResult>, kairos_store::Error> {
        Err(kairos_store::Error::new(
            kairos_store::ErrorKind::Unavailable,
            "unreadable check: database is locked",
        ))
    }
}

/// One check whose read fails is an `error` result naming it and the error; the other checks
/// still answer (the failure rate warns), the pass completes and its warning is raised (S3-15,
/// S3-17).
#[tokio::test]
async fn failing_check_is_an_error_result_and_the_others_still_answer_s3_15() {
    let t0 = t("2026-11-29T09:00:00Z");
    let failing = TestHandler::new(|_, _| Outcome::Failed(Failure::permanent("HTTP 422")));
    let h = Harness::new(t0, &[("mail", failing)]).await;
    for _ in 0..4 {
        h.enqueue("mail", serde_json::json!({}), None, Some(max_attempts(1)))
            .await;
    }
    h.exec(t0).await;
    let cfg = MonitorConfig {
        min_sample: 4,
        ..Default::default()
    };
    let m = monitor(&h, cfg).with_check(Arc::new(Unreadable));
    let run = m.run_once(t0 + mins(1)).await.expect("the pass completes");
    let err = results(&run.slo, "unreadable");
    assert_eq!(err.len(), 1, "{:#?}", run.slo);
    assert_eq!(err[0].status, CheckStatus::Error);
    assert!(
        err[0].message.contains("unreadable") && err[0].message.contains("database is locked"),
        "{}",
        err[0].message
    );
    let rate = results(&run.slo, names::FAILURE_RATE);
    assert_eq!(rate[0].status, CheckStatus::Warning, "{rate:?}");
    assert!(!results(&run.slo, names::STUCK_DUE).is_empty());
    assert_eq!(run.alerts.raised, vec!["failure_rate:mail".to_string()]);
    assert_eq!(
        h.store.monitor_pass_last().await.unwrap(),
        Some(t0 + mins(1))
    );
}

/// `run_once` records its completed pass; the report read later carries it as
/// `monitor_last_pass_at` and warns `monitor_stale` once three intervals went by without
/// another (S3-17).
#[tokio::test]
async fn run_once_records_the_last_pass_and_a_stale_monitor_warns_s3_17() {
    let t0 = t("2026-11-29T09:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let m = monitor(&h, MonitorConfig::default()); // every 60 s
    let stale = |r: &SloReport| results(r, names::MONITOR_STALE)[0].clone();

    let before = m.report(t0).await.unwrap();
    assert_eq!(before.monitor_last_pass_at, None);
    assert_eq!(stale(&before).status, CheckStatus::InsufficientData);
    assert_eq!(before.warnings, 0);

    let pass = t0 + secs(5);
    m.run_once(pass).await.unwrap();
    let fresh = m.report(pass + secs(180)).await.unwrap();
    assert_eq!(fresh.monitor_last_pass_at, Some(pass));
    assert_eq!(stale(&fresh).status, CheckStatus::Ok);
    assert_eq!(fresh.warnings, 0);

    let late = m.report(pass + secs(181)).await.unwrap();
    let s = stale(&late);
    assert_eq!(s.status, CheckStatus::Warning, "{s:?}");
    assert_eq!(s.since, Some(pass));
    assert_eq!(late.warnings, 1);
    assert_eq!(s.threshold, Some(180.0));

    // The background run never evaluates itself stale: only readers do.
    let run = m.run_once(pass + secs(600)).await.unwrap();
    assert!(results(&run.slo, names::MONITOR_STALE).is_empty());
}

/// A daily schedule whose run dies, with a handler that works again once `fixed` is set.
async fn dying_daily(fixed: Arc<AtomicBool>) -> (Harness, String, String) {
    let t0 = t("2026-11-29T05:00:00Z");
    let handler = TestHandler::new(move |_, _| {
        if fixed.load(Ordering::SeqCst) {
            Outcome::ok()
        } else {
            Outcome::Failed(Failure::permanent("HTTP 404 from the route"))
        }
    });
    let h = Harness::new(t0, &[("call", handler)]).await;
    let mut req = new_schedule("nightly-call", "call");
    req.cron = Some("0 6 * * *".into());
    req.retry = Some(max_attempts(1));
    let s = h.kairos.schedule_create(req).await.expect("schedule");
    let fired = t("2026-11-29T06:00:00Z");
    h.sched(fired).await;
    assert_eq!(h.exec(fired).await.dead, 1);
    let job = h.schedule_jobs(&s.id).await.remove(0);
    let key = format!("dead_runs:{}", s.id);
    (h, key, job.id)
}

/// A dead run is still a warning 25 h later when nothing was done — leaving the 24 h window
/// does not fix it — and recovers once its job is replayed and succeeds (S4-10).
#[tokio::test]
async fn dead_run_stays_a_warning_after_25h_and_recovers_when_the_replay_succeeds_s4_10() {
    let fixed = Arc::new(AtomicBool::new(false));
    let (h, key, job_id) = dying_daily(fixed.clone()).await;
    let m = monitor(&h, MonitorConfig::default());
    let fired = t("2026-11-29T06:00:00Z");
    let raised = m.run_once(fired + mins(10)).await.unwrap();
    assert_eq!(raised.alerts.raised, vec![key.clone()]);

    let later = fired + mins(25 * 60);
    let run = m.run_once(later).await.unwrap();
    assert!(run.alerts.cleared.is_empty(), "{run:?}");
    assert!(alert(&h, &key).await.active);
    let report = m.report(later).await.unwrap();
    let dead = results(&report, names::DEAD_RUNS);
    assert_eq!(dead.len(), 1, "{report:#?}");
    assert_eq!(dead[0].status, CheckStatus::Warning);
    assert_eq!(dead[0].since, Some(fired + mins(10)));

    // Replayed after the fix: the job succeeds and the warning recovers, once.
    fixed.store(true, Ordering::SeqCst);
    h.clock.set(later + mins(1));
    h.kairos.job_retry(&job_id).await.expect("replay");
    assert_eq!(h.exec(later + mins(1)).await.succeeded, 1);
    let run = m.run_once(later + mins(2)).await.unwrap();
    assert_eq!(run.alerts.cleared, vec![key.clone()]);
    let a = alert(&h, &key).await;
    assert!(!a.active && !a.acked(), "{a:?}");
    let run = m.run_once(later + mins(3)).await.unwrap();
    assert!(run.alerts.raised.is_empty() && run.alerts.cleared.is_empty());
}

/// An acknowledged dead run is recovered and shown as acknowledged, stays so while the same
/// job is dead, and a run that dies later warns again (S3-17, S4-10).
#[tokio::test]
async fn acked_dead_run_is_recovered_and_a_later_death_warns_again_s3_17() {
    let (h, key, _) = dying_daily(Arc::new(AtomicBool::new(false))).await;
    let m = monitor(&h, MonitorConfig::default());
    let fired = t("2026-11-29T06:00:00Z");
    m.run_once(fired + mins(10)).await.unwrap();

    let acked_at = fired + mins(30);
    let a = ack(h.store.as_ref(), &key, acked_at).await.expect("ack");
    assert!(a.acked() && !a.active, "{a:?}");
    assert_eq!(a.acked_at, Some(acked_at));
    assert_eq!(a.seq, 2, "a recovery transition, told to the alert webhook");
    for i in 1..=3 {
        let run = m.run_once(acked_at + mins(i)).await.unwrap();
        assert!(run.alerts.raised.is_empty(), "run {i}: {run:?}");
    }
    assert!(alert(&h, &key).await.acked());
    let report = m.report(acked_at + mins(5)).await.unwrap();
    assert!(results(&report, names::DEAD_RUNS).is_empty(), "{report:#?}");

    // The next day's run dies too: that is new, and warns again.
    let next = t("2026-11-30T06:00:00Z");
    h.sched(next).await;
    assert_eq!(h.exec(next).await.dead, 1);
    let run = m.run_once(next + mins(1)).await.unwrap();
    assert_eq!(run.alerts.raised, vec![key.clone()]);
    let a = alert(&h, &key).await;
    assert!(a.active && !a.acked());
    assert_eq!(a.acked_at, Some(acked_at), "the acknowledgement is kept");

    // Unknown ids and checks that recover on their own are refused.
    assert!(matches!(
        ack(h.store.as_ref(), "dead_runs:nope", next).await,
        Err(AckError::Unknown)
    ));
}

fn artifact(schedule_id: &str, period: &str, at: DateTime<Utc>) -> ArtifactPut {
    ArtifactPut {
        artifact: Artifact {
            name: "news".into(),
            period_key: period.into(),
            content: "summary".into(),
            data: serde_json::json!({}),
            job_id: None,
            schedule_id: Some(schedule_id.into()),
            created_at: at,
        },
        then: vec![],
    }
}

/// A digest period whose artifact is missing stays a warning two days later, after the
/// period left the 24 h window, and recovers when its artifact exists (S4-10).
#[tokio::test]
async fn missing_artifact_stays_a_warning_until_the_artifact_exists_s4_10() {
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
    let key = format!("missing_artifacts:{}", s.id);
    let m = monitor(&h, MonitorConfig::default());
    let run = m.run_once(t("2026-11-29T13:21:00Z")).await.unwrap();
    assert!(run.alerts.raised.contains(&key), "{run:?}");

    // The later days get their artifact; 2026-11-29's never came.
    for day in ["2026-11-30", "2026-12-01"] {
        h.store
            .artifact_put(artifact(&s.id, day, t(&format!("{day}T07:05:00Z"))))
            .await
            .unwrap();
    }
    let later = t("2026-12-01T13:30:00Z");
    let run = m.run_once(later).await.unwrap();
    assert!(!run.alerts.cleared.contains(&key), "{run:?}");
    let report = m.report(later).await.unwrap();
    let c = results(&report, names::MISSING_ARTIFACTS)[0];
    assert_eq!(c.status, CheckStatus::Warning, "{c:?}");
    assert!(c.message.contains("2026-11-29"), "{}", c.message);

    h.store
        .artifact_put(artifact(&s.id, "2026-11-29", later + mins(1)))
        .await
        .unwrap();
    let run = m.run_once(later + mins(2)).await.unwrap();
    assert!(run.alerts.cleared.contains(&key), "{run:?}");
}

/// A failure-rate warning recovers when the rate falls below the threshold, and cannot be
/// acknowledged: it recovers on its own (S3-15).
#[tokio::test]
async fn failure_rate_warning_recovers_when_the_rate_falls_s3_15() {
    let t0 = t("2026-11-29T09:00:00Z");
    let scripted = TestHandler::new(|job, _| match job.payload["r"].as_str() {
        Some("fail") => Outcome::Failed(Failure::permanent("HTTP 422")),
        _ => Outcome::ok(),
    });
    let h = Harness::new(t0, &[("mail", scripted)]).await;
    for r in ["fail", "fail", "ok", "ok"] {
        h.enqueue(
            "mail",
            serde_json::json!({ "r": r }),
            None,
            Some(max_attempts(1)),
        )
        .await;
    }
    h.exec(t0).await;
    let cfg = MonitorConfig {
        failure_rate: 0.3,
        min_sample: 4,
        ..Default::default()
    };
    let m = monitor(&h, cfg);
    let run = m.run_once(t0 + mins(1)).await.unwrap();
    assert_eq!(run.alerts.raised, vec!["failure_rate:mail".to_string()]);
    assert!(matches!(
        ack(h.store.as_ref(), "failure_rate:mail", t0 + mins(2)).await,
        Err(AckError::NotAckable(c)) if c == names::FAILURE_RATE
    ));

    for _ in 0..6 {
        h.enqueue(
            "mail",
            serde_json::json!({ "r": "ok" }),
            None,
            Some(max_attempts(1)),
        )
        .await;
    }
    h.exec(t0 + mins(3)).await;
    // 2 of 10 failed: 20 %, under 30 %.
    let run = m.run_once(t0 + mins(4)).await.unwrap();
    assert_eq!(run.alerts.cleared, vec!["failure_rate:mail".to_string()]);
}

/// A completed pass records what it found; `report_last` reads it back as a report of that
/// pass (its instant, each warning's `since`), so a page can show it without evaluating the
/// checks again — and gives nothing before the first pass and once the monitor is stale
/// (S3-17).
#[tokio::test]
async fn report_last_reads_back_the_last_pass_until_the_monitor_is_stale_s3_17() {
    let fixed = Arc::new(AtomicBool::new(false));
    let (h, key, _job) = dying_daily(fixed).await;
    let m = monitor(&h, MonitorConfig::default());
    let pass = t("2026-11-29T06:30:00Z");
    assert_eq!(m.report_last(pass).await.unwrap(), None, "no pass yet");

    let run = m.run_once(pass).await.unwrap();
    let warned: Vec<String> = run
        .slo
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Warning)
        .map(CheckResult::key)
        .collect();
    assert_eq!(warned, vec![key.clone()]);

    let read = m
        .report_last(pass + chrono::Duration::seconds(30))
        .await
        .unwrap()
        .expect("the pass's findings");
    assert_eq!(read.at, pass, "as of the pass, not of the read");
    assert_eq!(read.monitor_last_pass_at, Some(pass));
    let dead = read
        .checks
        .iter()
        .find(|c| c.key() == key)
        .expect("the dead run");
    assert_eq!(dead.status, CheckStatus::Warning);
    assert_eq!(dead.since, Some(pass), "since, from the stored alert");
    let without_stale: Vec<_> = read
        .checks
        .iter()
        .filter(|c| c.check != names::MONITOR_STALE)
        .map(|c| CheckResult {
            since: None,
            ..c.clone()
        })
        .collect();
    assert_eq!(
        without_stale, run.slo.checks,
        "what the pass found, as found"
    );

    assert_eq!(
        m.report_last(pass + chrono::Duration::seconds(181))
            .await
            .unwrap(),
        None,
        "a stale monitor's findings are not shown as the state now"
    );
}
