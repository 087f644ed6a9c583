//! The digest channel: fetch RSS/Atom feeds, de-duplicate and order their items, and
//! summarize them — with no model (`extractive`, the default) or with an LLM over HTTP
//! (`gemini`'s generateContent API, `openai`'s chat completions).
//!
//! Every external call has its own timeout: each feed (one slow feed does not hold the
//! others, and one failing feed is recorded without losing the others), and the model call
//! (2 min by default), so a silent hang becomes a retryable failure. Failures carry an
//! [`ErrorClass`](kairos_core::ErrorClass) by the retry classification table: 503, 429, 408, other 5xx,
//! dropped connections and timeouts are transient, other 4xx permanent, `Retry-After` is
//! honoured. API keys come from the configuration only (`KAIROS_GEMINI_API_KEY`,
//! `KAIROS_OPENAI_API_KEY`): never from a job's payload, never in a message or a log.
//!
//! - [`feeds`]: fetching and parsing (feed-rs), items, de-duplication and order.
//! - [`summarize`]: the three summarizers.

pub mod feeds;
mod http;
pub mod summarize;

pub use feeds::{FeedFailure, FeedInfo, Fetched, Item};
pub use summarize::{Summarizer, Summary};

use reqwest::header::HeaderValue;
use std::fmt;
use std::time::Duration;

/// Where an LLM API is and how to call it. The key is never printed (`Debug` redacts it).
#[derive(Clone, PartialEq, Eq)]
pub struct ModelApi {
    /// Base URL (`https://generativelanguage.googleapis.com`, `https://api.openai.com`); the
    /// API path is appended. Tests point it at a local server.
    pub url: String,
    /// The API key, if configured.
    pub api_key: Option<String>,
    /// The model name (`gemini-2.5-flash`, `gpt-4o-mini`).
    pub model: String,
}

impl fmt::Debug for ModelApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelApi")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish()
    }
}

/// Settings of a [`Digester`]. Every field has a default; [`DigestConfig::validate`] names the
/// field that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestConfig {
    /// Timeout of one feed request, connection to last byte. Default 30 s.
    pub feed_timeout: Duration,
    /// Timeout of one model call. Default 2 min.
    pub model_timeout: Duration,
    /// Most items taken from one feed (the newest). Default 20.
    pub max_items_per_feed: usize,
    /// Largest feed document read. Default 5 MiB.
    pub max_feed_bytes: usize,
    /// Allow feeds on loopback, private and link-local networks
    /// (`KAIROS_ALLOW_PRIVATE_TARGETS=1`). Default `false`.
    pub allow_private_targets: bool,
    /// The `user-agent` header. Default `kairos-digest/<version>`.
    pub user_agent: String,
    /// The longest `Retry-After` honoured. Default 15 min.
    pub retry_after_cap: Duration,
    /// The Gemini API (generateContent).
    pub gemini: ModelApi,
    /// The OpenAI API (chat completions).
    pub openai: ModelApi,
}

impl Default for DigestConfig {
    fn default() -> Self {
        DigestConfig {
            feed_timeout: Duration::from_secs(30),
            model_timeout: Duration::from_secs(120),
            max_items_per_feed: 20,
            max_feed_bytes: 5 << 20,
            allow_private_targets: false,
            user_agent: concat!("kairos-digest/", env!("CARGO_PKG_VERSION")).to_string(),
            retry_after_cap: Duration::from_secs(15 * 60),
            gemini: ModelApi {
                url: "https://generativelanguage.googleapis.com".into(),
                api_key: None,
                model: "gemini-2.5-flash".into(),
            },
            openai: ModelApi {
                url: "https://api.openai.com".into(),
                api_key: None,
                model: "gpt-4o-mini".into(),
            },
        }
    }
}

impl DigestConfig {
    /// The longest accepted timeout (feed or model).
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

    /// Check every field; the error names the field and the reason.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        for (field, t) in [
            ("digest.feed_timeout", self.feed_timeout),
            ("digest.model_timeout", self.model_timeout),
        ] {
            if t.is_zero() || t > Self::MAX_TIMEOUT {
                return Err(Error::invalid(
                    field,
                    format!("must be more than 0 and at most {:?}", Self::MAX_TIMEOUT),
                ));
            }
        }
        if self.max_items_per_feed == 0 || self.max_items_per_feed > 1000 {
            return Err(Error::invalid(
                "digest.max_items_per_feed",
                "must be between 1 and 1000",
            ));
        }
        if self.max_feed_bytes < 1024 || self.max_feed_bytes > 64 << 20 {
            return Err(Error::invalid(
                "digest.max_feed_bytes",
                "must be between 1 KiB and 64 MiB",
            ));
        }
        if self.user_agent.trim().is_empty() || HeaderValue::from_str(&self.user_agent).is_err() {
            return Err(Error::invalid(
                "digest.user_agent",
                "must be a non-empty header value (visible ASCII)",
            ));
        }
        for (field, api) in [
            ("digest.gemini_api_url", &self.gemini),
            ("digest.openai_api_url", &self.openai),
        ] {
            match url::Url::parse(&api.url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => {
                    return Err(Error::invalid(
                        field,
                        "must be an http:// or https:// base URL",
                    ));
                }
            }
            if api.model.trim().is_empty() || api.model.contains(['/', '?', '#', ' ']) {
                return Err(Error::invalid(
                    field.replace("_api_url", "_model"),
                    "must be a model name without '/', '?', '#' or spaces",
                ));
            }
        }
        Ok(())
    }
}

/// Fetches feeds and calls summarizers over two HTTP clients: one for feeds (user-given URLs:
/// guarded against private targets, see [`crate::ssrf`]) and one for the configured model
/// APIs (the operator's own URLs).
#[derive(Debug, Clone)]
pub struct Digester {
    feeds: reqwest::Client,
    models: reqwest::Client,
    config: DigestConfig,
}

impl Digester {
    /// Validate `config` and build the clients (see [`crate::transport`]).
    pub fn new(config: DigestConfig) -> Result<Self, crate::Error> {
        config.validate()?;
        // No redirects (a feed that moved is a permanent failure naming the redirect:
        // configure the final URL), no proxies; feeds — user-given URLs — go through the
        // SSRF-safe resolver unless private targets are allowed; model APIs are the
        // operator's own URLs. Each request sets its own timeout too.
        let feeds = crate::transport::build_client(
            &config.user_agent,
            Some(config.feed_timeout),
            config.allow_private_targets,
            "feed",
        )?;
        let models = crate::transport::build_client(
            &config.user_agent,
            Some(config.model_timeout),
            true,
            "model",
        )?;
        Ok(Digester {
            feeds,
            models,
            config,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &DigestConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_validation_and_a_redacted_key() {
        let c = DigestConfig::default();
        assert_eq!(c.model_timeout, Duration::from_secs(120), "S4-7");
        assert_eq!(c.validate(), Ok(()));
        let bad = |f: fn(&mut DigestConfig)| {
            let mut c = DigestConfig::default();
            f(&mut c);
            c.validate().unwrap_err().field().to_string()
        };
        assert_eq!(
            bad(|c| c.model_timeout = Duration::ZERO),
            "digest.model_timeout"
        );
        assert_eq!(
            bad(|c| c.feed_timeout = Duration::from_secs(601)),
            "digest.feed_timeout"
        );
        assert_eq!(
            bad(|c| c.max_items_per_feed = 0),
            "digest.max_items_per_feed"
        );
        assert_eq!(
            bad(|c| c.gemini.url = "ftp://x".into()),
            "digest.gemini_api_url"
        );
        assert_eq!(
            bad(|c| c.openai.model = "a/b".into()),
            "digest.openai_model"
        );
        let mut c = DigestConfig::default();
        c.gemini.api_key = Some("sekret-key-123".into());
        assert!(!format!("{c:?}").contains("sekret-key-123"));
        assert!(Digester::new(c).is_ok());
    }
}
