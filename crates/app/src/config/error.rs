//! Configuration errors: the field, the reason, and where the value came from.

/// A configuration error: the field, the reason, and where the value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The field (`listen`, `database_url`, …), or `config` for the file as a whole.
    pub field: String,
    /// Why.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

pub(crate) fn from_figment(e: figment::Error) -> ConfigError {
    let field = if e.path.is_empty() {
        "config".to_string()
    } else {
        e.path.join(".")
    };
    let source = e
        .metadata
        .as_ref()
        .map(|m| {
            if m.name.contains("environment") {
                format!(
                    " (from environment variable KAIROS_{})",
                    field.to_uppercase()
                )
            } else {
                match &m.source {
                    Some(src) => format!(" (from {} {src})", m.name),
                    None => format!(" (from {})", m.name),
                }
            }
        })
        .unwrap_or_default();
    let reason = match &e.kind {
        figment::error::Kind::UnknownField(name, expected) => unknown_key(name, expected),
        kind => kind.to_string(),
    };
    ConfigError::new(field, format!("{reason}{source}"))
}

/// The reason for an unknown key: the closest known key when one is close (a typo), never
/// the list of all of them.
fn unknown_key(name: &str, expected: &[&str]) -> String {
    let closest = expected
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((_, k)) => format!("unknown key `{name}`; did you mean `{k}`?"),
        None => format!(
            "unknown key `{name}` (packaging/kairos.toml lists every key, and the README every \
             KAIROS_ variable)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::unknown_key;

    #[test]
    fn an_unknown_key_names_the_closest_one_and_not_all_of_them() {
        let keys = &["listen", "lease_secs", "data_dir", "database_url"];
        assert_eq!(
            unknown_key("lissen", keys),
            "unknown key `lissen`; did you mean `listen`?"
        );
        assert_eq!(
            unknown_key("databse_url", keys),
            "unknown key `databse_url`; did you mean `database_url`?"
        );
        let far = unknown_key("colour", keys);
        assert!(far.starts_with("unknown key `colour` ("), "{far}");
        assert!(!far.contains("lease_secs"), "{far}");
    }
}
