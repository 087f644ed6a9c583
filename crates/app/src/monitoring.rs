//! Operating kairos: the Prometheus recorder behind `/metrics`, and the SLO monitor's settings
//! and alert webhook from the configuration (`KAIROS_SLO_…`, `KAIROS_ALERT_WEBHOOK_…`).

use crate::config::{Config, ConfigError, parse_window};
use kairos_engine::monitor::{AlertSink, MonitorConfig, names};
use kairos_engine::telemetry::{SECONDS_BUCKETS, names as metric};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Install the process's Prometheus recorder once (later calls return the same handle), so
/// that the engine's counters and histograms reach `/metrics`. `None` when another recorder
/// was installed first (an embedding application's): `/metrics` then shows the database
/// gauges only. Building the HTTP app several times in one process (tests) shares the
/// one recorder.
pub fn metrics_recorder() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full(metric::LATENESS.to_string()),
                    SECONDS_BUCKETS,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(metric::ATTEMPT_DURATION.to_string()),
                        SECONDS_BUCKETS,
                    )
                });
            let builder = match builder {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics buckets rejected; using summaries");
                    PrometheusBuilder::new()
                }
            };
            match builder.install_recorder() {
                Ok(h) => Some(h),
                Err(e) => {
                    tracing::warn!(error = %e, "a metrics recorder is already installed; /metrics shows database gauges only");
                    None
                }
            }
        })
        .as_ref()
}

/// The monitor's settings from `cfg`; errors name the `slo_…` field.
pub fn monitor_config(cfg: &Config) -> Result<MonitorConfig, ConfigError> {
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let disabled = list(&cfg.slo_disabled);
    let m = MonitorConfig {
        interval: Duration::from_secs(cfg.slo_interval_secs),
        window: Duration::from_secs(cfg.slo_window_secs),
        failure_rate: cfg.slo_failure_rate,
        min_sample: cfg.slo_min_sample,
        stuck_after: Duration::from_secs(cfg.slo_stuck_secs),
        lease_grace: Duration::from_secs(cfg.slo_lease_grace_secs),
        missed_window: Duration::from_secs(cfg.slo_missed_window_secs),
        missed_grace: Duration::from_secs(cfg.slo_missed_grace_secs),
        dead_runs_window: parse_window("slo_dead_runs_window", &cfg.slo_dead_runs_window)?,
        skip_window: parse_window("slo_skip_rate_window", &cfg.slo_skip_rate_window)?,
        skip_min: cfg.slo_skip_rate_min,
        skip_ignore: list(&cfg.slo_skip_rate_ignore),
        expansion_stuck_after: parse_window(
            "slo_expansions_stuck_after",
            &cfg.slo_expansions_stuck_after,
        )?,
        db_horizon: Duration::from_secs(cfg.slo_db_horizon_secs),
        bounce_rate: cfg.slo_bounce_rate,
        complaint_rate: cfg.slo_complaint_rate,
        deliverability_window: parse_window(
            "slo_deliverability_window",
            &cfg.slo_deliverability_window,
        )?,
        deliverability_min_sent: cfg.slo_deliverability_min_sent,
        inbound_unknown_window: parse_window(
            "slo_inbound_unknown_window",
            &cfg.slo_inbound_unknown_window,
        )?,
        disabled,
        ..MonitorConfig::default()
    };
    m.validate().map_err(|e| {
        let field = match e.field() {
            "monitor.interval" => "slo_interval_secs",
            "monitor.window" => "slo_window_secs",
            "monitor.failure_rate" => "slo_failure_rate",
            "monitor.stuck_after" => "slo_stuck_secs",
            "monitor.lease_grace" => "slo_lease_grace_secs",
            "monitor.missed_window" => "slo_missed_window_secs",
            "monitor.missed_grace" => "slo_missed_grace_secs",
            "monitor.dead_runs_window" => "slo_dead_runs_window",
            "monitor.skip_window" => "slo_skip_rate_window",
            "monitor.skip_min" => "slo_skip_rate_min",
            "monitor.expansion_stuck_after" => "slo_expansions_stuck_after",
            "monitor.db_horizon" => "slo_db_horizon_secs",
            "monitor.bounce_rate" => "slo_bounce_rate",
            "monitor.complaint_rate" => "slo_complaint_rate",
            "monitor.deliverability_window" => "slo_deliverability_window",
            "monitor.deliverability_min_sent" => "slo_deliverability_min_sent",
            "monitor.inbound_unknown_window" => "slo_inbound_unknown_window",
            "monitor.disabled" => "slo_disabled",
            other => other,
        };
        ConfigError {
            field: field.to_string(),
            reason: e.reason().to_string(),
        }
    })?;
    Ok(m)
}

/// The alert webhook from `KAIROS_ALERT_WEBHOOK_URL` and `KAIROS_ALERT_WEBHOOK_SECRET` (both
/// or neither), sent through `webhook` settings (timeout, private targets). `None` when not
/// configured.
pub fn alert_sink(
    cfg: &Config,
    webhook: kairos_channels::WebhookConfig,
) -> Result<Option<AlertSink>, ConfigError> {
    let url = cfg.alert_webhook_url.as_deref().filter(|s| !s.is_empty());
    let secret = cfg
        .alert_webhook_secret
        .as_deref()
        .filter(|s| !s.is_empty());
    let (url, secret) = match (url, secret) {
        (None, None) => return Ok(None),
        (Some(u), Some(s)) => (u, s),
        (Some(_), None) => {
            return Err(ConfigError {
                field: "alert_webhook_secret".into(),
                reason: "is required with alert_webhook_url (a whsec_… secret)".into(),
            });
        }
        (None, Some(_)) => {
            return Err(ConfigError {
                field: "alert_webhook_url".into(),
                reason: "is required with alert_webhook_secret".into(),
            });
        }
    };
    let sender = kairos_channels::WebhookSender::new(webhook).map_err(|e| ConfigError {
        field: "alert_webhook_url".into(),
        reason: format!("cannot build the webhook sender: {e}"),
    })?;
    AlertSink::new(url, secret, sender)
        .map(Some)
        .map_err(|e| ConfigError {
            field: e.field().to_string(),
            reason: e.reason().to_string(),
        })
}

/// The check names always present in `kairos_slo_warning` (0 when not warning).
pub fn builtin_checks() -> &'static [&'static str] {
    names::ALL
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook() -> kairos_channels::WebhookConfig {
        kairos_testkit::init_crypto();
        kairos_channels::WebhookConfig::default()
    }

    #[test]
    fn monitor_settings_come_from_the_config_and_errors_name_the_field() {
        let cfg = Config {
            slo_window_secs: 600,
            slo_failure_rate: 0.25,
            slo_disabled: " missed_firings , ".into(),
            ..Config::default()
        };
        let m = monitor_config(&cfg).expect("valid");
        assert_eq!(m.window, Duration::from_secs(600));
        assert_eq!(m.failure_rate, 0.25);
        assert_eq!(m.disabled, vec!["missed_firings".to_string()]);
        for (bad, field) in [
            (
                Config {
                    slo_failure_rate: 2.0,
                    ..Config::default()
                },
                "slo_failure_rate",
            ),
            (
                Config {
                    slo_disabled: "nope".into(),
                    ..Config::default()
                },
                "slo_disabled",
            ),
            (
                Config {
                    slo_window_secs: 0,
                    ..Config::default()
                },
                "slo_window_secs",
            ),
            (
                Config {
                    slo_window_secs: u64::MAX,
                    ..Config::default()
                },
                "slo_window_secs",
            ),
            (
                Config {
                    slo_stuck_secs: 367 * 86_400,
                    ..Config::default()
                },
                "slo_stuck_secs",
            ),
            (
                Config {
                    slo_lease_grace_secs: u64::MAX,
                    ..Config::default()
                },
                "slo_lease_grace_secs",
            ),
        ] {
            assert_eq!(monitor_config(&bad).unwrap_err().field, field);
        }
    }

    #[test]
    fn alert_webhook_needs_url_and_secret_together() {
        assert!(alert_sink(&Config::default(), webhook()).unwrap().is_none());
        let only_url = Config {
            alert_webhook_url: Some("https://alerts.example.com/hook".into()),
            ..Config::default()
        };
        let e = alert_sink(&only_url, webhook()).unwrap_err();
        assert_eq!(e.field, "alert_webhook_secret");
        let bad_secret = Config {
            alert_webhook_secret: Some("not-a-secret".into()),
            ..only_url.clone()
        };
        let e = alert_sink(&bad_secret, webhook()).unwrap_err();
        assert_eq!(e.field, "alert_webhook_secret");
        let bad_url = Config {
            alert_webhook_url: Some("ftp://x".into()),
            alert_webhook_secret: Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
            ..Config::default()
        };
        assert_eq!(
            alert_sink(&bad_url, webhook()).unwrap_err().field,
            "alert_webhook_url"
        );
        let ok = Config {
            alert_webhook_url: Some("https://alerts.example.com/hook".into()),
            ..bad_url
        };
        assert!(alert_sink(&ok, webhook()).unwrap().is_some());
    }
}
