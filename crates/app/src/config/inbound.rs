//! The secrets of the inbound routes (`/hooks/*`, `/unsubscribe`), read from the
//! configuration and checked with it.

use super::{Config, ConfigError};
use kairos_channels::email::unsubscribe::UnsubscribeKey;
use kairos_channels::signing::WebhookSecret;
use std::collections::BTreeMap;

/// The secrets of the inbound routes. Its `Debug` shows no secret.
#[derive(Clone, Default)]
pub struct InboundConfig {
    /// `KAIROS_RESEND_WEBHOOK_SECRET` (empty: `/hooks/resend` is off).
    pub resend: Vec<WebhookSecret>,
    /// `KAIROS_INBOUND_SECRETS`, by source.
    pub standard: BTreeMap<String, Vec<WebhookSecret>>,
    /// `KAIROS_UNSUBSCRIBE_SECRET` first, then `KAIROS_UNSUBSCRIBE_OLD_SECRETS`.
    pub unsubscribe: Vec<UnsubscribeKey>,
}

impl std::fmt::Debug for InboundConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundConfig")
            .field("resend_secrets", &self.resend.len())
            .field(
                "standard_sources",
                &self.standard.keys().collect::<Vec<_>>(),
            )
            .field("unsubscribe_keys", &self.unsubscribe.len())
            .finish()
    }
}

fn secrets(field: &str, list: &str) -> Result<Vec<WebhookSecret>, ConfigError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            WebhookSecret::parse(s).map_err(|e| ConfigError {
                field: field.into(),
                reason: e.reason().to_string(),
            })
        })
        .collect()
}

fn valid_source(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The shortest accepted `unsubscribe_secret`: the secret signs every unsubscribe link, and a
/// short one could be guessed from a link offline.
pub const MIN_UNSUBSCRIBE_SECRET: usize = 32;

impl InboundConfig {
    /// From the configuration; errors name the field, never the secret.
    pub fn from_config(cfg: &Config) -> Result<Self, ConfigError> {
        let resend = secrets(
            "resend_webhook_secret",
            cfg.resend_webhook_secret.as_deref().unwrap_or_default(),
        )?;
        let mut standard: BTreeMap<String, Vec<WebhookSecret>> = BTreeMap::new();
        for entry in cfg
            .inbound_secrets
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (source, secret) = entry.split_once('=').ok_or_else(|| ConfigError {
                field: "inbound_secrets".into(),
                reason: "each entry must be source=whsec_…".into(),
            })?;
            let source = source.trim();
            if !valid_source(source) {
                return Err(ConfigError {
                    field: "inbound_secrets".into(),
                    reason: "a source name must be 1 to 64 of [a-z0-9_-]".into(),
                });
            }
            let s = secrets("inbound_secrets", secret)?;
            standard.entry(source.to_string()).or_default().extend(s);
        }
        if let Some(secret) = cfg.unsubscribe_secret.as_deref()
            && !secret.trim().is_empty()
            && secret.trim().chars().count() < MIN_UNSUBSCRIBE_SECRET
        {
            return Err(ConfigError {
                field: "unsubscribe_secret".into(),
                reason: format!(
                    "must be at least {MIN_UNSUBSCRIBE_SECRET} characters (for example \
                     `openssl rand -base64 32`)"
                ),
            });
        }
        let unsubscribe = std::iter::once(cfg.unsubscribe_secret.as_deref().unwrap_or_default())
            .chain(
                cfg.unsubscribe_old_secrets
                    .as_deref()
                    .unwrap_or_default()
                    .split(','),
            )
            .filter_map(UnsubscribeKey::new)
            .collect();
        Ok(InboundConfig {
            resend,
            standard,
            unsubscribe,
        })
    }
}
