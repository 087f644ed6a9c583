//! Checking a loaded configuration: every error names the field.

use super::{Config, ConfigError, parse_window, token};
use std::net::ToSocketAddrs;

impl Config {
    /// The email settings: a known transport with what it needs.
    pub fn validate_email(&self) -> Result<(), ConfigError> {
        let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
        if !(1..=300).contains(&self.email_timeout_secs) {
            return Err(ConfigError::new(
                "email_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        match self.email_transport.as_str() {
            "file" => {}
            "smtp" if set(&self.smtp_url) => {}
            "smtp" => {
                return Err(ConfigError::new(
                    "smtp_url",
                    "is required when email_transport is smtp (KAIROS_SMTP_URL=smtp://host:port)",
                ));
            }
            "resend" if set(&self.resend_api_key) => {}
            "resend" => {
                return Err(ConfigError::new(
                    "resend_api_key",
                    "is required when email_transport is resend (KAIROS_RESEND_API_KEY)",
                ));
            }
            other => {
                return Err(ConfigError::new(
                    "email_transport",
                    format!("{other:?} is not a transport: use file, smtp or resend"),
                ));
            }
        }
        for (field, v) in [
            ("public_url", &self.public_url),
            ("resend_api_url", &self.resend_api_url),
            ("settings_url", &self.settings_url),
        ] {
            if let Some(u) = v
                && !(u.starts_with("http://") || u.starts_with("https://"))
            {
                return Err(ConfigError::new(
                    field,
                    "must be an http:// or https:// URL",
                ));
            }
        }
        Ok(())
    }

    /// The template workers' settings (`KAIROS_TEMPLATE_*`).
    pub fn validate_templates(&self) -> Result<(), ConfigError> {
        if self.template_workers > 64 {
            return Err(ConfigError::new(
                "template_workers",
                "must be between 0 and 64 (KAIROS_TEMPLATE_WORKERS; 0 renders in-process)",
            ));
        }
        if !(1..=300).contains(&self.template_timeout_secs) {
            return Err(ConfigError::new(
                "template_timeout_secs",
                "must be between 1 and 300 seconds (KAIROS_TEMPLATE_TIMEOUT_SECS)",
            ));
        }
        if !(64..=65_536).contains(&self.template_memory_mb) {
            return Err(ConfigError::new(
                "template_memory_mb",
                "must be between 64 and 65536 MiB (KAIROS_TEMPLATE_MEMORY_MB)",
            ));
        }
        Ok(())
    }

    /// Where spans are posted: `<otlp_endpoint>/v1/traces`, or `None` when tracing is off (the
    /// setting unset or blank). The endpoint must be an `http://` or `https://` URL with a
    /// host and no query or fragment (the signal's path is appended to it).
    pub fn otlp_traces_url(&self) -> Result<Option<String>, ConfigError> {
        let Some(raw) = self.otlp_endpoint.as_deref().map(str::trim) else {
            return Ok(None);
        };
        if raw.is_empty() {
            return Ok(None);
        }
        let bad = |why: &str| {
            ConfigError::new(
                "otlp_endpoint",
                format!(
                    "{why} (KAIROS_OTLP_ENDPOINT: the collector's base URL, e.g. \
                     http://127.0.0.1:4318; spans go to <endpoint>/v1/traces)"
                ),
            )
        };
        let url = url::Url::parse(raw).map_err(|e| bad(&format!("is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("must be an http:// or https:// URL"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("must name a host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("must not have a query or a fragment"));
        }
        let mut base = url.to_string();
        while base.ends_with('/') {
            base.pop();
        }
        Ok(Some(format!("{base}/v1/traces")))
    }

    /// Check every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.retention()?;
        self.retention_artifacts()?;
        self.retention_events()?;
        self.retention_dedupe()?;
        self.misfire_threshold()?;
        parse_window("slo_dead_runs_window", &self.slo_dead_runs_window)?;
        parse_window("slo_skip_rate_window", &self.slo_skip_rate_window)?;
        parse_window(
            "slo_expansions_stuck_after",
            &self.slo_expansions_stuck_after,
        )?;
        parse_window("slo_deliverability_window", &self.slo_deliverability_window)?;
        parse_window(
            "slo_inbound_unknown_window",
            &self.slo_inbound_unknown_window,
        )?;
        self.validate_email()?;
        self.otlp_traces_url()?;
        super::inbound::InboundConfig::from_config(self)?;
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::new("data_dir", "must not be empty"));
        }
        let resolved = self
            .listen
            .to_socket_addrs()
            .map(|mut a| a.next().is_some());
        match resolved {
            Ok(true) => {}
            _ => {
                return Err(ConfigError::new(
                    "listen",
                    format!(
                        "{:?} is not an address like 127.0.0.1:8080 (port 0 picks a free port)",
                        self.listen
                    ),
                ));
            }
        }
        self.database()?;
        if let Some(t) = &self.api_token {
            token::check_length(t.trim(), "the configured token (KAIROS_API_TOKEN)")?;
        }
        for (field, value) in [("node", &self.node), ("node_id", &self.node_id)] {
            if let Some(n) = value
                && (n.trim().is_empty() || n.len() > 200 || n.chars().any(char::is_control))
            {
                return Err(ConfigError::new(
                    field,
                    "must be 1 to 200 characters, none of them control characters",
                ));
            }
        }
        if self.concurrency == 0 || self.concurrency > 100_000 {
            return Err(ConfigError::new(
                "concurrency",
                "must be between 1 and 100000",
            ));
        }
        if self.max_unrecorded > 100_000 {
            return Err(ConfigError::new(
                "max_unrecorded",
                "must be between 0 and 100000",
            ));
        }
        if !(3..=3600).contains(&self.lease_secs) {
            return Err(ConfigError::new(
                "lease_secs",
                "must be between 3 and 3600 seconds",
            ));
        }
        if !(1..=300).contains(&self.webhook_timeout_secs) {
            return Err(ConfigError::new(
                "webhook_timeout_secs",
                "must be between 1 and 300 seconds",
            ));
        }
        if self.shutdown_grace_secs > 3600 {
            return Err(ConfigError::new(
                "shutdown_grace_secs",
                "must be at most 3600 seconds",
            ));
        }
        if self.claim_cooldown_ms.is_some_and(|ms| ms > 1000) {
            return Err(ConfigError::new(
                "claim_cooldown_ms",
                "must be at most 1000 milliseconds",
            ));
        }
        if !(10..=60_000).contains(&self.poll_interval_ms) {
            return Err(ConfigError::new(
                "poll_interval_ms",
                "must be between 10 and 60000 milliseconds",
            ));
        }
        for (field, secs) in [
            ("model_timeout_secs", self.model_timeout_secs),
            ("feed_timeout_secs", self.feed_timeout_secs),
        ] {
            if !(1..=600).contains(&secs) {
                return Err(ConfigError::new(field, "must be between 1 and 600 seconds"));
            }
        }
        for (field, secs) in [
            ("http_header_timeout_secs", self.http_header_timeout_secs),
            ("http_body_timeout_secs", self.http_body_timeout_secs),
            ("http_request_timeout_secs", self.http_request_timeout_secs),
        ] {
            if !(1..=3600).contains(&secs) {
                return Err(ConfigError::new(
                    field,
                    "must be between 1 and 3600 seconds",
                ));
            }
        }
        if !(1..=86_400).contains(&self.http_max_connection_secs) {
            return Err(ConfigError::new(
                "http_max_connection_secs",
                "must be between 1 and 86400 seconds",
            ));
        }
        for (field, n) in [
            ("http_max_connections", self.http_max_connections),
            (
                "http_max_connections_per_source",
                self.http_max_connections_per_source.unwrap_or(1),
            ),
            ("http_max_requests", self.http_max_requests),
        ] {
            if !(1..=1_000_000).contains(&n) {
                return Err(ConfigError::new(field, "must be between 1 and 1000000"));
            }
        }
        self.validate_templates()?;
        if self.endpoint_disable_after_failures > 1_000_000 {
            return Err(ConfigError::new(
                "endpoint_disable_after_failures",
                "must be between 0 (off) and 1000000",
            ));
        }
        if self.endpoint_disable_after_secs > 30 * 24 * 3600 {
            return Err(ConfigError::new(
                "endpoint_disable_after_secs",
                "must be between 0 and 2592000 seconds (30 days)",
            ));
        }
        for (field, url) in [
            ("gemini_api_url", &self.gemini_api_url),
            ("openai_api_url", &self.openai_api_url),
        ] {
            if let Some(u) = url
                && !(u.starts_with("http://") || u.starts_with("https://"))
            {
                return Err(ConfigError::new(
                    field,
                    "must be an http:// or https:// base URL",
                ));
            }
        }
        Ok(())
    }
}
