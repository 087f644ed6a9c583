//! Parsers for setting values: flexible booleans and durations from environment variables,
//! retention ages, PostgreSQL schema names.

use super::ConfigError;
use serde::{Deserialize, Deserializer};

/// A PostgreSQL schema name kairos accepts: `[a-z_][a-z0-9_]{0,62}`, not `pg_…` (the store
/// checks the same).
pub(crate) fn valid_schema(schema: &str) -> bool {
    let b = schema.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        && !schema.starts_with("pg_")
}

/// A boolean that also accepts `1`/`0`, `yes`/`no`, `on`/`off` (environment variables).
pub(crate) fn flex_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flex {
        Bool(bool),
        Int(i64),
        Str(String),
    }
    match Flex::deserialize(d)? {
        Flex::Bool(b) => Ok(b),
        Flex::Int(0) => Ok(false),
        Flex::Int(1) => Ok(true),
        Flex::Int(n) => Err(serde::de::Error::custom(format!(
            "{n} is not a boolean: use 1 or 0, true or false"
        ))),
        Flex::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" | "" => Ok(false),
            other => Err(serde::de::Error::custom(format!(
                "{other:?} is not a boolean: use 1 or 0, true or false"
            ))),
        },
    }
}

/// A duration setting given as text (`"7d"`, `"off"`) or as a number of seconds.
pub(crate) fn flex_duration<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flex {
        Int(u64),
        Str(String),
    }
    Ok(match Flex::deserialize(d)? {
        Flex::Int(n) => format!("{n}s"),
        Flex::Str(s) => s,
    })
}

/// Parse a retention age: a duration (`7d`, `12h`, `3600s`, a number of seconds), or `off` /
/// `never` / `0` to keep forever (`None`). At least 1 minute.
pub fn parse_retention(
    field: &str,
    value: &str,
) -> Result<Option<std::time::Duration>, ConfigError> {
    let v = value.trim();
    if ["off", "never", "0", "0s"].contains(&v.to_ascii_lowercase().as_str()) {
        return Ok(None);
    }
    let d = if v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>().map(std::time::Duration::from_secs).ok()
    } else {
        kairos_core::retry::parse_duration(field, v).ok()
    };
    match d {
        Some(d)
            if d >= std::time::Duration::from_secs(60)
                && d <= std::time::Duration::from_secs(100 * 365 * 86_400) =>
        {
            Ok(Some(d))
        }
        _ => Err(ConfigError::new(
            field,
            format!(
                "{v:?} is not a retention age like \"7d\" or \"12h\" (1 minute to 100 years), or \"off\""
            ),
        )),
    }
}

/// Parse a monitor window or threshold: a duration (`24h`, `15m`, `3600s`) or a bare number
/// of seconds; more than zero.
pub fn parse_window(field: &str, value: &str) -> Result<std::time::Duration, ConfigError> {
    let v = value.trim();
    let d = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>().map(std::time::Duration::from_secs).ok()
    } else {
        kairos_core::retry::parse_duration(field, v).ok()
    };
    match d {
        Some(d) if !d.is_zero() && d <= std::time::Duration::from_secs(366 * 86_400) => Ok(d),
        _ => Err(ConfigError::new(
            field,
            format!(
                "{v:?} is not a duration like \"24h\" or \"15m\" (or a number of seconds), more than 0 and at most 366 days"
            ),
        )),
    }
}
