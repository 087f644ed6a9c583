//! Configuration tests: layering, field-named errors, the token file.
use super::*;
use figment::Jail;

fn load() -> Result<Config, ConfigError> {
    Config::load(&Overrides::default())
}

#[test]
fn model_apis_and_digest_settings_come_from_the_environment() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!((c.model_timeout_secs, c.feed_timeout_secs), (120, 30));
        assert_eq!(
            c.retention_artifacts().map_err(|e| e.to_string())?,
            Some(std::time::Duration::from_secs(365 * 86_400))
        );
        jail.set_env("KAIROS_GEMINI_API_KEY", "g-key");
        jail.set_env("KAIROS_GEMINI_API_URL", "http://127.0.0.1:9");
        jail.set_env("KAIROS_OPENAI_MODEL", "gpt-x");
        jail.set_env("KAIROS_MODEL_TIMEOUT_SECS", "30");
        jail.set_env("KAIROS_RETENTION_ARTIFACTS", "off");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.gemini_api_key.as_deref(), Some("g-key"));
        assert_eq!(c.gemini_api_url.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(c.openai_model.as_deref(), Some("gpt-x"));
        assert_eq!(c.model_timeout_secs, 30);
        assert_eq!(c.retention_artifacts().map_err(|e| e.to_string())?, None);
        jail.set_env("KAIROS_MODEL_TIMEOUT_SECS", "0");
        assert_eq!(
            load().expect_err("zero timeout").field,
            "model_timeout_secs"
        );
        jail.set_env("KAIROS_MODEL_TIMEOUT_SECS", "30");
        jail.set_env("KAIROS_OPENAI_API_URL", "api.openai.com");
        assert_eq!(load().expect_err("no scheme").field, "openai_api_url");
        Ok(())
    });
}

#[test]
fn defaults_then_file_then_env_then_flags() {
    Jail::expect_with(|jail| {
        assert_eq!(load().map_err(|e| e.to_string())?.listen, "127.0.0.1:8080");
        jail.create_file(
            "kairos.toml",
            "listen = \"127.0.0.1:9000\"\nconcurrency = 7\n",
        )?;
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!((c.listen.as_str(), c.concurrency), ("127.0.0.1:9000", 7));
        jail.set_env("KAIROS_LISTEN", "127.0.0.1:9001");
        jail.set_env("KAIROS_ALLOW_PRIVATE_TARGETS", "1");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.listen, "127.0.0.1:9001");
        assert!(c.allow_private_targets);
        let o = Overrides {
            listen: Some("127.0.0.1:0".into()),
            ..Overrides::default()
        };
        let c = Config::load(&o).map_err(|e| e.to_string())?;
        assert_eq!(c.listen, "127.0.0.1:0");
        Ok(())
    });
}

#[test]
fn email_transport_is_read_from_env_and_needs_its_settings() {
    Jail::expect_with(|jail| {
        jail.set_env("KAIROS_EMAIL_TRANSPORT", "smtp");
        let e = load().expect_err("smtp without a URL");
        assert_eq!(e.field, "smtp_url");
        jail.set_env("KAIROS_SMTP_URL", "smtp://127.0.0.1:2525");
        jail.set_env("KAIROS_EMAIL_FROM", "Weekly <w@example.com>");
        jail.set_env("KAIROS_PUBLIC_URL", "https://kairos.example.com");
        let c = load().expect("smtp with a URL");
        assert_eq!(c.smtp_url.as_deref(), Some("smtp://127.0.0.1:2525"));
        assert_eq!(c.email_from.as_deref(), Some("Weekly <w@example.com>"));
        jail.set_env("KAIROS_EMAIL_TRANSPORT", "resend");
        assert_eq!(load().expect_err("no key").field, "resend_api_key");
        jail.set_env("KAIROS_RESEND_API_KEY", "re_x");
        jail.set_env("KAIROS_RESEND_API_URL", "http://127.0.0.1:9");
        assert_eq!(
            load().expect("resend").resend_api_url.as_deref(),
            Some("http://127.0.0.1:9")
        );
        jail.set_env("KAIROS_EMAIL_TRANSPORT", "pigeon");
        assert_eq!(load().expect_err("unknown").field, "email_transport");
        Ok(())
    });
    Jail::expect_with(|_| {
        assert_eq!(load().expect("defaults").email_transport, "file");
        Ok(())
    });
}

/// Issue 12, finding 6: an unsubscribe secret signs every unsubscribe link; a short one is
/// refused when the configuration is loaded, naming the setting (never showing the secret).
#[test]
fn unsubscribe_secret_needs_at_least_32_characters() {
    Jail::expect_with(|jail| {
        jail.set_env(
            "KAIROS_UNSUBSCRIBE_SECRET",
            "short-secret-31-characters-long",
        );
        let e = load().expect_err("31 characters");
        assert_eq!(e.field, "unsubscribe_secret");
        assert!(e.reason.contains("at least 32"), "{e}");
        assert!(!e.to_string().contains("short-secret"), "{e}");
        jail.set_env(
            "KAIROS_UNSUBSCRIBE_SECRET",
            "a-secret-of-exactly-32-chars-ok!",
        );
        let c = load().expect("32 characters");
        assert!(c.unsubscribe_secret.is_some());
        Ok(())
    });
}

#[test]
fn errors_name_the_field_and_source() {
    Jail::expect_with(|jail| {
        jail.set_env("KAIROS_LEASE_SECS", "soon");
        let e = load().expect_err("a bad number");
        assert_eq!(e.field, "lease_secs");
        assert!(e.reason.contains("KAIROS_LEASE_SECS"), "{e}");
        Ok(())
    });
    Jail::expect_with(|jail| {
        jail.create_file("kairos.toml", "lissen = \"x\"\n")?;
        let e = load().expect_err("an unknown field");
        assert!(e.to_string().contains("lissen"), "{e}");
        assert!(e.to_string().contains("did you mean `listen`?"), "{e}");
        assert!(!e.to_string().contains("lease_secs"), "not every key: {e}");
        Ok(())
    });
    Jail::expect_with(|jail| {
        jail.set_env("KAIROS_DATABASE_URL", "mysql://localhost/kairos");
        let e = load().expect_err("mysql");
        assert_eq!(e.field, "database_url");
        assert!(e.reason.contains("not supported"), "{e}");
        Ok(())
    });
    // Issue 12, finding 6: the password of a URL with an unknown scheme is never echoed.
    Jail::expect_with(|jail| {
        jail.set_env(
            "KAIROS_DATABASE_URL",
            "mysql://app:hunter2-secret@db.internal:3306/kairos?password=alsosecret",
        );
        let e = load().expect_err("mysql");
        assert_eq!(e.field, "database_url");
        let shown = e.to_string();
        assert!(shown.contains("\"mysql\""), "{shown}");
        for secret in ["hunter2-secret", "alsosecret", "app:", "db.internal"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        Ok(())
    });
    Jail::expect_with(|jail| {
        jail.set_env("KAIROS_DATABASE_URL", "postgres://localhost/kairos");
        jail.set_env("KAIROS_DATABASE_SCHEMA", "Bad-Name");
        let e = load().expect_err("bad schema");
        assert_eq!(e.field, "database_schema");
        Ok(())
    });
}

#[test]
fn the_database_is_chosen_by_url_scheme() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.database().map_err(|e| e.to_string())?,
            Database::Sqlite(PathBuf::from("./kairos.db"))
        );
        jail.set_env("KAIROS_DATABASE_URL", "sqlite:///tmp/k.db");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.database().map_err(|e| e.to_string())?,
            Database::Sqlite(PathBuf::from("/tmp/k.db"))
        );
        jail.set_env("KAIROS_DATABASE_URL", "data/k.db");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.database().map_err(|e| e.to_string())?,
            Database::Sqlite(PathBuf::from("data/k.db"))
        );
        jail.set_env("KAIROS_DATABASE_URL", "postgres://app:secret@db:5432/app");
        let c = load().map_err(|e| e.to_string())?;
        let db = c.database().map_err(|e| e.to_string())?;
        assert_eq!(
            db,
            Database::Postgres {
                url: "postgres://app:secret@db:5432/app".into(),
                schema: "kairos".into()
            }
        );
        assert_eq!(db.describe(), "postgres://db:5432/app (schema kairos)");
        jail.set_env("KAIROS_DATABASE_URL", "postgresql://db/app");
        jail.set_env("KAIROS_DATABASE_SCHEMA", "jobs_k");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.database().map_err(|e| e.to_string())?,
            Database::Postgres {
                url: "postgresql://db/app".into(),
                schema: "jobs_k".into()
            }
        );
        Ok(())
    });
}

/// retention ages from the environment, `off` to keep, bad values named.
#[test]
fn retention_ages_come_from_the_environment() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        let day = std::time::Duration::from_secs(86_400);
        assert_eq!(
            c.retention().map_err(|e| e.to_string())?,
            (Some(7 * day), Some(30 * day))
        );
        jail.set_env("KAIROS_RETENTION_SUCCEEDED", "2d");
        jail.set_env("KAIROS_RETENTION_DEAD", "off");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.retention().map_err(|e| e.to_string())?,
            (Some(2 * day), None)
        );
        jail.set_env("KAIROS_RETENTION_SUCCEEDED", "3600");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.retention().map_err(|e| e.to_string())?.0, Some(day / 24));
        jail.set_env("KAIROS_RETENTION_DEAD", "soon");
        let e = load().expect_err("a bad age");
        assert_eq!(e.field, "retention_dead");
        jail.set_env("KAIROS_RETENTION_DEAD", "5s");
        assert_eq!(load().expect_err("too short").field, "retention_dead");
        Ok(())
    });
}

#[test]
fn token_is_generated_once_with_mode_0600() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    let (t1, s1) = api_token(&cfg).expect("generate");
    assert_eq!(s1, TokenSource::Generated);
    assert!(t1.starts_with("kairos_") && t1.len() > 40);
    let (t2, s2) = api_token(&cfg).expect("read");
    assert_eq!((t2.as_str(), s2), (t1.as_str(), TokenSource::File));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(cfg.data_dir.join(TOKEN_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn an_api_token_shorter_than_32_characters_is_refused_naming_the_setting() {
    Jail::expect_with(|jail| {
        jail.set_env("KAIROS_API_TOKEN", "x");
        let e = load().expect_err("one character");
        assert_eq!(e.field, "api_token");
        assert!(
            e.reason.contains("KAIROS_API_TOKEN") && e.reason.contains("32"),
            "{e}"
        );
        jail.set_env("KAIROS_API_TOKEN", "a".repeat(31));
        assert_eq!(load().expect_err("31 characters").field, "api_token");
        jail.set_env("KAIROS_API_TOKEN", "a".repeat(32));
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.api_token.as_deref().map(str::len), Some(32));
        Ok(())
    });
}

#[test]
fn a_short_token_file_is_refused_and_a_generated_token_is_long_enough() {
    assert!(generate_token().chars().count() >= MIN_TOKEN_CHARS);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(TOKEN_FILE), "short\n").expect("write");
    let cfg = Config {
        data_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    let e = api_token(&cfg).expect_err("a 5-character token file");
    assert_eq!(e.field, "api_token");
    assert!(e.reason.contains(TOKEN_FILE), "{e}");
}

#[test]
fn http_limits_come_from_the_environment_and_are_bounded() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.http_limits(), HttpLimits::default());
        jail.set_env("KAIROS_HTTP_HEADER_TIMEOUT_SECS", "2");
        jail.set_env("KAIROS_HTTP_BODY_TIMEOUT_SECS", "3");
        jail.set_env("KAIROS_HTTP_REQUEST_TIMEOUT_SECS", "4");
        jail.set_env("KAIROS_HTTP_MAX_CONNECTIONS", "50");
        jail.set_env("KAIROS_HTTP_MAX_REQUESTS", "20");
        let l = load().map_err(|e| e.to_string())?.http_limits();
        assert_eq!(l.header_timeout, std::time::Duration::from_secs(2));
        assert_eq!(l.body_timeout, std::time::Duration::from_secs(3));
        assert_eq!(l.request_timeout, std::time::Duration::from_secs(4));
        assert_eq!((l.max_connections, l.max_requests), (50, 20));
        assert_eq!(l.per_source(), 12, "a quarter of 50 by default");
        jail.set_env("KAIROS_HTTP_MAX_CONNECTIONS_PER_SOURCE", "7");
        jail.set_env("KAIROS_HTTP_MAX_CONNECTION_SECS", "30");
        let l = load().map_err(|e| e.to_string())?.http_limits();
        assert_eq!(l.per_source(), 7);
        assert_eq!(l.max_connection_age, std::time::Duration::from_secs(30));
        jail.set_env("KAIROS_HTTP_MAX_CONNECTIONS_PER_SOURCE", "0");
        assert_eq!(
            load().expect_err("zero").field,
            "http_max_connections_per_source"
        );
        jail.set_env("KAIROS_HTTP_MAX_CONNECTIONS_PER_SOURCE", "7");
        jail.set_env("KAIROS_HTTP_MAX_CONNECTION_SECS", "0");
        assert_eq!(load().expect_err("zero").field, "http_max_connection_secs");
        jail.set_env("KAIROS_HTTP_MAX_CONNECTION_SECS", "30");
        jail.set_env("KAIROS_HTTP_HEADER_TIMEOUT_SECS", "0");
        assert_eq!(load().expect_err("zero").field, "http_header_timeout_secs");
        jail.set_env("KAIROS_HTTP_HEADER_TIMEOUT_SECS", "2");
        jail.set_env("KAIROS_HTTP_MAX_REQUESTS", "0");
        assert_eq!(load().expect_err("zero").field, "http_max_requests");
        Ok(())
    });
}

/// The SLO monitor's windows from the environment: durations or seconds, bad values named.
#[test]
fn slo_windows_come_from_the_environment() {
    Jail::expect_with(|jail| {
        let m = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(m.dead_runs_window, std::time::Duration::from_secs(86_400));
        jail.set_env("KAIROS_SLO_DEAD_RUNS_WINDOW", "6h");
        let m = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(m.dead_runs_window, std::time::Duration::from_secs(6 * 3600));
        jail.set_env("KAIROS_SLO_DEAD_RUNS_WINDOW", "7200");
        let m = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(m.dead_runs_window, std::time::Duration::from_secs(7200));
        jail.set_env("KAIROS_SLO_DEAD_RUNS_WINDOW", "0");
        assert_eq!(load().expect_err("zero").field, "slo_dead_runs_window");
        jail.set_env("KAIROS_SLO_DEAD_RUNS_WINDOW", "a while");
        assert_eq!(
            load().expect_err("not a duration").field,
            "slo_dead_runs_window"
        );
        jail.set_env("KAIROS_SLO_DEAD_RUNS_WINDOW", "24h");
        jail.set_env("KAIROS_SLO_SKIP_RATE_WINDOW", "2h");
        jail.set_env("KAIROS_SLO_SKIP_RATE_MIN", "10");
        jail.set_env("KAIROS_SLO_SKIP_RATE_IGNORE", "unsubscribed, suppressed");
        let m = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(m.skip_window, std::time::Duration::from_secs(2 * 3600));
        assert_eq!(m.skip_min, 10);
        assert_eq!(m.skip_ignore, vec!["unsubscribed", "suppressed"]);
        assert_eq!(
            m.expansion_stuck_after,
            std::time::Duration::from_secs(15 * 60)
        );
        jail.set_env("KAIROS_SLO_EXPANSIONS_STUCK_AFTER", "1h");
        let m = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(
            m.expansion_stuck_after,
            std::time::Duration::from_secs(3600)
        );
        jail.set_env("KAIROS_SLO_SKIP_RATE_MIN", "0");
        let e = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .expect_err("zero");
        assert_eq!(e.field, "slo_skip_rate_min");
        Ok(())
    });
}

/// The deliverability checks' settings: 5 %, 0.3 %, 7 days, 200 mails and 24 h unless set;
/// each variable arrives, and a bad value is refused naming its setting.
#[test]
fn slo_deliverability_settings_come_from_the_environment() {
    Jail::expect_with(|jail| {
        let monitor = || {
            crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())
        };
        let m = monitor()?;
        assert_eq!((m.bounce_rate, m.complaint_rate), (0.05, 0.003));
        assert_eq!(
            m.deliverability_window,
            std::time::Duration::from_secs(7 * 86_400)
        );
        assert_eq!(m.deliverability_min_sent, 200);
        assert_eq!(
            m.inbound_unknown_window,
            std::time::Duration::from_secs(86_400)
        );
        jail.set_env("KAIROS_SLO_BOUNCE_RATE", "0.02");
        jail.set_env("KAIROS_SLO_COMPLAINT_RATE", "0.001");
        jail.set_env("KAIROS_SLO_DELIVERABILITY_WINDOW", "3d");
        jail.set_env("KAIROS_SLO_DELIVERABILITY_MIN_SENT", "500");
        jail.set_env("KAIROS_SLO_INBOUND_UNKNOWN_WINDOW", "6h");
        let m = monitor()?;
        assert_eq!((m.bounce_rate, m.complaint_rate), (0.02, 0.001));
        assert_eq!(
            m.deliverability_window,
            std::time::Duration::from_secs(3 * 86_400)
        );
        assert_eq!(m.deliverability_min_sent, 500);
        assert_eq!(
            m.inbound_unknown_window,
            std::time::Duration::from_secs(6 * 3600)
        );
        jail.set_env("KAIROS_SLO_DELIVERABILITY_WINDOW", "a week");
        assert_eq!(
            load().expect_err("not a duration").field,
            "slo_deliverability_window"
        );
        jail.set_env("KAIROS_SLO_DELIVERABILITY_WINDOW", "7d");
        jail.set_env("KAIROS_SLO_INBOUND_UNKNOWN_WINDOW", "0");
        assert_eq!(
            load().expect_err("zero").field,
            "slo_inbound_unknown_window"
        );
        jail.set_env("KAIROS_SLO_INBOUND_UNKNOWN_WINDOW", "24h");
        jail.set_env("KAIROS_SLO_BOUNCE_RATE", "5");
        assert_eq!(
            monitor().expect_err("over 1"),
            "slo_bounce_rate: must be between 0 and 1"
        );
        jail.set_env("KAIROS_SLO_BOUNCE_RATE", "0.05");
        jail.set_env("KAIROS_SLO_COMPLAINT_RATE", "-1");
        let e = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .expect_err("negative");
        assert_eq!(e.field, "slo_complaint_rate");
        jail.set_env("KAIROS_SLO_COMPLAINT_RATE", "0.003");
        jail.set_env("KAIROS_SLO_DELIVERABILITY_MIN_SENT", "0");
        let e = crate::monitoring::monitor_config(&load().map_err(|e| e.to_string())?)
            .expect_err("zero");
        assert_eq!(e.field, "slo_deliverability_min_sent");
        Ok(())
    });
}

/// The dedupe keys of pruned jobs are kept 400 days unless set; `off` keeps them; a bad value
/// is named.
#[test]
fn retention_dedupe_comes_from_the_environment() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.retention_dedupe().map_err(|e| e.to_string())?,
            Some(std::time::Duration::from_secs(400 * 86_400))
        );
        jail.set_env("KAIROS_RETENTION_DEDUPE", "off");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.retention_dedupe().map_err(|e| e.to_string())?, None);
        jail.set_env("KAIROS_RETENTION_DEDUPE", "2d");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.retention_dedupe().map_err(|e| e.to_string())?,
            Some(std::time::Duration::from_secs(2 * 86_400))
        );
        jail.set_env("KAIROS_RETENTION_DEDUPE", "soon");
        assert_eq!(load().expect_err("bad age").field, "retention_dedupe");
        Ok(())
    });
}

/// `KAIROS_MISFIRE_THRESHOLD` sets the scheduler's default misfire threshold (60 s unset; a
/// duration or seconds); a bad value is named.
#[test]
fn misfire_threshold_comes_from_the_environment_and_reaches_the_scheduler() {
    Jail::expect_with(|jail| {
        let ec = crate::node::engine_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(
            ec.scheduler.misfire_threshold,
            std::time::Duration::from_secs(60)
        );
        jail.set_env("KAIROS_MISFIRE_THRESHOLD", "5m");
        let ec = crate::node::engine_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(
            ec.scheduler.misfire_threshold,
            std::time::Duration::from_secs(300)
        );
        jail.set_env("KAIROS_MISFIRE_THRESHOLD", "90");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            c.misfire_threshold().map_err(|e| e.to_string())?,
            std::time::Duration::from_secs(90)
        );
        for bad in ["0", "soon"] {
            jail.set_env("KAIROS_MISFIRE_THRESHOLD", bad);
            assert_eq!(load().expect_err(bad).field, "misfire_threshold");
        }
        Ok(())
    });
}

/// `KAIROS_OTLP_ENDPOINT`: unset or blank is off; a base URL gets `/v1/traces` appended
/// (with or without a trailing slash, after a path prefix); anything else is refused with an
/// error naming the variable.
#[test]
fn otlp_endpoint_comes_from_the_environment_and_must_be_an_http_url() {
    Jail::expect_with(|jail| {
        assert_eq!(
            load().map_err(|e| e.to_string())?.otlp_traces_url(),
            Ok(None)
        );
        jail.set_env("KAIROS_OTLP_ENDPOINT", " ");
        assert_eq!(
            load().map_err(|e| e.to_string())?.otlp_traces_url(),
            Ok(None)
        );
        for (given, url) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example.com/collector/",
                "https://otel.example.com/collector/v1/traces",
            ),
        ] {
            jail.set_env("KAIROS_OTLP_ENDPOINT", given);
            let c = load().map_err(|e| e.to_string())?;
            assert_eq!(c.otlp_traces_url(), Ok(Some(url.to_string())), "{given}");
        }
        for bad in [
            "127.0.0.1:4318",
            "ftp://collector:21",
            "not a url",
            "http://collector:4318/?token=x",
            "http://collector:4318/#x",
        ] {
            jail.set_env("KAIROS_OTLP_ENDPOINT", bad);
            let e = load().expect_err(bad);
            assert_eq!(e.field, "otlp_endpoint", "{bad}");
            assert!(e.reason.contains("KAIROS_OTLP_ENDPOINT"), "{bad}: {e}");
        }
        Ok(())
    });
}

/// Issue 12, finding 3: the template workers' settings, bounded, errors naming the variable.
#[test]
fn i12_3_template_worker_settings_come_from_the_environment_and_are_bounded() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            (
                c.template_workers,
                c.template_timeout_secs,
                c.template_memory_mb
            ),
            (2, 10, 512)
        );
        jail.set_env("KAIROS_TEMPLATE_WORKERS", "0");
        jail.set_env("KAIROS_TEMPLATE_TIMEOUT_SECS", "3");
        jail.set_env("KAIROS_TEMPLATE_MEMORY_MB", "256");
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            (
                c.template_workers,
                c.template_timeout_secs,
                c.template_memory_mb
            ),
            (0, 3, 256)
        );
        for (var, bad, good, field) in [
            ("KAIROS_TEMPLATE_WORKERS", "65", "1", "template_workers"),
            (
                "KAIROS_TEMPLATE_TIMEOUT_SECS",
                "0",
                "3",
                "template_timeout_secs",
            ),
            (
                "KAIROS_TEMPLATE_MEMORY_MB",
                "8",
                "256",
                "template_memory_mb",
            ),
            ("KAIROS_TEMPLATE_WORKERS", "two", "1", "template_workers"),
        ] {
            jail.set_env(var, bad);
            let e = load().expect_err(bad);
            assert_eq!(e.field, field, "{e}");
            assert!(e.reason.contains(var), "{var}: {e}");
            jail.set_env(var, good);
        }
        Ok(())
    });
}

/// I15-3b: auto-disable is off by default; both settings come from the environment, reach
/// the engine's endpoint health settings, and are bounded with errors naming the setting.
#[test]
fn endpoint_auto_disable_comes_from_the_environment_and_is_bounded() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(
            (
                c.endpoint_disable_after_failures,
                c.endpoint_disable_after_secs
            ),
            (0, 3600)
        );
        jail.set_env("KAIROS_ENDPOINT_DISABLE_AFTER_FAILURES", "25");
        jail.set_env("KAIROS_ENDPOINT_DISABLE_AFTER_SECS", "7200");
        let c = load().map_err(|e| e.to_string())?;
        let ec = crate::node::engine_config(&c).map_err(|e| e.to_string())?;
        assert_eq!(ec.endpoint_health.disable_after_failures, 25);
        assert_eq!(
            ec.endpoint_health.disable_after,
            std::time::Duration::from_secs(7200)
        );
        jail.set_env("KAIROS_ENDPOINT_DISABLE_AFTER_SECS", "2592001");
        assert_eq!(
            load().expect_err("too long").field,
            "endpoint_disable_after_secs"
        );
        jail.set_env("KAIROS_ENDPOINT_DISABLE_AFTER_SECS", "60");
        jail.set_env("KAIROS_ENDPOINT_DISABLE_AFTER_FAILURES", "1000001");
        assert_eq!(
            load().expect_err("too many").field,
            "endpoint_disable_after_failures"
        );
        Ok(())
    });
}

/// `KAIROS_MAX_UNRECORDED` reaches the executor, defaults to 500, and is bounded.
#[test]
fn max_unrecorded_comes_from_the_environment_reaches_the_executor_and_is_bounded() {
    Jail::expect_with(|jail| {
        let c = load().map_err(|e| e.to_string())?;
        assert_eq!(c.max_unrecorded, 500);
        jail.set_env("KAIROS_MAX_UNRECORDED", "0");
        let c = load().map_err(|e| e.to_string())?;
        let ec = crate::node::engine_config(&c).map_err(|e| e.to_string())?;
        assert_eq!(ec.executor.max_unrecorded, 0);
        jail.set_env("KAIROS_MAX_UNRECORDED", "100001");
        assert_eq!(load().expect_err("too many").field, "max_unrecorded");
        jail.set_env("KAIROS_MAX_UNRECORDED", "-1");
        assert_eq!(load().expect_err("negative").field, "max_unrecorded");
        Ok(())
    });
}

/// `KAIROS_LEASE_SECS` is also the scheduler's claim on a due schedule, so a node killed
/// between claiming and firing one delays it by one lease, not the engine's minute.
#[test]
fn a_dead_nodes_schedule_claim_lasts_one_lease() {
    Jail::expect_with(|jail| {
        let ec = crate::node::engine_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(ec.scheduler.lock, std::time::Duration::from_secs(30));
        jail.set_env("KAIROS_LEASE_SECS", "10");
        let ec = crate::node::engine_config(&load().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        assert_eq!(ec.scheduler.lock, std::time::Duration::from_secs(10));
        assert_eq!(ec.executor.lease, std::time::Duration::from_secs(10));
        Ok(())
    });
}

/// The claim cooldown follows the database unless `KAIROS_CLAIM_COOLDOWN_MS` sets it: 1 ms on
/// SQLite, where a claim is a call on the node's writer thread, 5 ms on PostgreSQL, where it
/// is a round trip that a held snapshot lengthens; a value over a second is refused by name.
#[test]
fn claim_cooldown_defaults_by_database_and_the_environment_overrides_it() {
    Jail::expect_with(|jail| {
        let cooldown = || -> Result<std::time::Duration, String> {
            let c = load().map_err(|e| e.to_string())?;
            let ec = crate::node::engine_config(&c).map_err(|e| e.to_string())?;
            Ok(ec.executor.claim_cooldown)
        };
        let ms = std::time::Duration::from_millis;
        assert_eq!(cooldown()?, ms(1), "SQLite");
        jail.set_env("KAIROS_CLAIM_COOLDOWN_MS", "20");
        assert_eq!(cooldown()?, ms(20), "set, on SQLite");
        jail.set_env(
            "KAIROS_DATABASE_URL",
            "postgres://kairos@127.0.0.1:5432/kairos",
        );
        assert_eq!(cooldown()?, ms(20), "set, on PostgreSQL");
        jail.set_env("KAIROS_CLAIM_COOLDOWN_MS", "1001");
        assert_eq!(
            load().expect_err("over a second").field,
            "claim_cooldown_ms"
        );
        jail.clear_env();
        jail.set_env(
            "KAIROS_DATABASE_URL",
            "postgres://kairos@127.0.0.1:5432/kairos",
        );
        assert_eq!(cooldown()?, ms(5), "PostgreSQL");
        Ok(())
    });
}
