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
    ConfigError::new(field, format!("{}{source}", e.kind))
}
