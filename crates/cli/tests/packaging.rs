//! What the release archive ships, checked against the real binary:
//! - every metric the Grafana dashboard (`docs/grafana/kairos.json`) and the Prometheus alert
//!   rules (`docs/grafana/alerts.yml`) name exists in a real `kairos serve`'s `GET /metrics`
//!   once it has done some work (webhook jobs delivered and one failed, a schedule fired, a
//!   missed firing dropped, an SLO warning raised);
//! - the systemd unit (`packaging/kairos.service`) passes `systemd-analyze verify` (skipped,
//!   loudly, where systemd-analyze is not installed).

mod common;

use chrono::Duration as ChronoDuration;
use common::{BIN, SECRET, Server, TOKEN, api};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec};
use kairos_core::{Clock, JobKind, SystemClock};
use kairos_store::ScheduleCreate;
use kairos_store::prelude::*;
use kairos_store_sqlite::SqliteStore;
use kairos_testkit::{Reply, TestReceiver, init_crypto};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const DASHBOARD: &str = include_str!("../../../docs/grafana/kairos.json");
const ALERTS: &str = include_str!("../../../docs/grafana/alerts.yml");
const UNIT: &str = include_str!("../../../packaging/kairos.service");

/// Every `kairos_…` identifier in `text` (a metric name wherever it appears: queries, legends,
/// descriptions).
fn metric_names(text: &str) -> BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("kairos_") {
        let before_is_ident = rest[..i].chars().next_back().is_some_and(ident);
        let tail = &rest[i..];
        let end = tail.find(|c: char| !ident(c)).unwrap_or(tail.len());
        if !before_is_ident {
            names.insert(tail[..end].trim_end_matches(':').to_string());
        }
        rest = &tail[end.max(1)..];
    }
    names
}

/// Every PromQL query of the dashboard: the targets' `expr` and the variables' queries.
fn dashboard_queries(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr" | "definition", Value::String(q)) => out.push(q.clone()),
                    _ => dashboard_queries(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| dashboard_queries(v, out)),
        _ => {}
    }
}

/// The names `/metrics` serves: each sample's name (`_bucket`, `_sum` and `_count` included,
/// as a histogram renders them) and each `# TYPE` family (a histogram's base name).
fn served_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some(name) = rest.split_whitespace().next() {
                names.insert(name.to_string());
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_string());
        }
    }
    names
}

#[test]
fn the_metric_name_extraction_finds_names_in_queries() {
    let q = r#"histogram_quantile(0.99, sum by (le) (rate(kairos_job_lateness_seconds_bucket{job=~"$job"}[5m]))) / max(kairos_queue_depth) + up{job="kairos"}"#;
    assert_eq!(
        metric_names(q).into_iter().collect::<Vec<_>>(),
        ["kairos_job_lateness_seconds_bucket", "kairos_queue_depth"]
    );
    let served = served_names(
        "# TYPE kairos_x_seconds histogram\nkairos_x_seconds_bucket{le=\"1\"} 2\nkairos_up 1\n",
    );
    assert!(served.contains("kairos_x_seconds") && served.contains("kairos_x_seconds_bucket"));
    assert!(served.contains("kairos_up"));
}

/// A data dir whose database holds an hourly schedule whose last three firings were missed
/// (the first due two and a half hours ago, misfire `skip`): the scheduler drops them when
/// `serve` starts, and fires nothing until the next one, half an hour later.
async fn data_dir_with_missed_firings() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    let now = SystemClock.now();
    let created = now - ChronoDuration::minutes(150);
    store
        .schedule_create(ScheduleCreate {
            id: new_id(IdPrefix::Schedule, created),
            name: "hourly-missed".into(),
            kind: JobKind::new("webhook"),
            spec: ScheduleSpec::Every {
                every_ms: 3_600_000,
                anchor: created,
            },
            timezone: "UTC".into(),
            period: PeriodUnit::default(),
            misfire: Misfire::Skip,
            misfire_threshold: None,
            misfire_window: None,
            overlap: Default::default(),
            payload: json!({}),
            endpoint_id: None,
            retry: None,
            channels: Vec::new(),
            paused: false,
            next_fire_at: Some(created),
            now: created,
            concurrency: None,
        })
        .await
        .expect("create the schedule");
    store.close().await;
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_of_the_dashboard_and_the_alert_rules_is_served_by_kairos() {
    init_crypto();
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let mut queries = Vec::new();
    dashboard_queries(&dashboard, &mut queries);
    assert!(queries.len() >= 10, "{queries:?}");
    for q in &queries {
        assert!(
            !metric_names(q).is_empty(),
            "a dashboard query names no kairos metric: {q}"
        );
    }
    let wanted: BTreeSet<String> = metric_names(DASHBOARD)
        .into_iter()
        .chain(metric_names(ALERTS))
        .collect();
    assert!(wanted.len() >= 10, "{wanted:?}");

    let dir = data_dir_with_missed_firings().await;
    let receiver = TestReceiver::start().await;
    // The first delivery fails for good (400, one attempt): the failure-rate check warns.
    receiver.respond_with(vec![Reply::status(400)]);
    let env = [
        ("KAIROS_SLO_INTERVAL_SECS", "1"),
        ("KAIROS_SLO_MIN_SAMPLE", "1"),
        ("KAIROS_SLO_FAILURE_RATE", "0.01"),
    ];
    let server = Server::start_with(dir.path(), Some(TOKEN), &env).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    for n in 0..4 {
        let (status, job) = api(
            &http,
            reqwest::Method::POST,
            format!("{}/v1/jobs", server.base),
            Some(json!({
                "kind": "webhook",
                "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
                "payload": {"n": n},
                "retry": {"delays": ["1s"], "max_attempts": 1},
            })),
        )
        .await;
        assert_eq!(status, 201, "{job}");
    }
    let (status, sched) = api(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/schedules", server.base),
        Some(json!({
            "name": "every-second",
            "every": "1s",
            "kind": "webhook",
            "webhook": {"url": receiver.url("/scheduled"), "secret": SECRET},
            "payload": {"hello": "world"},
        })),
    )
    .await;
    assert_eq!(status, 201, "{sched}");
    assert!(
        receiver.wait_for(5, Duration::from_secs(60)).await,
        "the jobs were not delivered; stderr:\n{}",
        server.stderr()
    );

    // Scrape until every wanted name is served (the SLO monitor runs every second): bounded.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (served, text) = loop {
        let res = http
            .get(format!("{}/metrics", server.base))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(res.status().as_u16(), 200);
        let text = res.text().await.expect("body");
        let served = served_names(&text);
        if wanted.is_subset(&served) || Instant::now() >= deadline {
            break (served, text);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let missing: Vec<&String> = wanted.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "named by docs/grafana but not served at /metrics: {missing:?}\n/metrics:\n{text}\nstderr:\n{}",
        server.stderr()
    );
    assert_eq!(
        server.terminate(Duration::from_secs(15)).await.code(),
        Some(0)
    );
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let Ok(version) = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
    else {
        eprintln!(
            "SKIPPED: systemd-analyze is not installed; packaging/kairos.service was not verified"
        );
        return;
    };
    assert!(version.status.success());
    for needed in [
        "DynamicUser=yes",
        "StateDirectory=kairos",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
    ] {
        assert!(
            UNIT.lines().any(|l| l.trim() == needed),
            "kairos.service lacks {needed}"
        );
    }
    // The unit runs /usr/local/bin/kairos; verify checks that the command exists, so point
    // it at the binary under test.
    let dir = tempfile::tempdir().expect("tempdir");
    let unit = dir.path().join("kairos.service");
    std::fs::write(&unit, UNIT.replace("/usr/local/bin/kairos", BIN)).expect("write the unit");
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .expect("run systemd-analyze verify");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "systemd-analyze verify: {said}"
    );
}
