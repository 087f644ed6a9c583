//! What can stop a node from being built: bad configuration (naming the field) or a failure
//! while opening what it needs.

use crate::config::ConfigError;

/// Building a node failed.
#[derive(Debug, Clone)]
pub enum NodeError {
    /// A setting is wrong: the field and why.
    Usage {
        /// The setting.
        field: String,
        /// Why.
        reason: String,
    },
    /// Something failed while opening the database or setting up a part.
    Runtime(String),
}

impl NodeError {
    /// A usage error.
    pub fn usage(field: impl Into<String>, reason: impl Into<String>) -> Self {
        NodeError::Usage {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A runtime error: `what` failed, with the `source()` chain of `e`.
    pub fn runtime(what: &str, e: &dyn std::error::Error) -> Self {
        NodeError::Runtime(format!("{what}: {}", kairos_core::error_chain(e)))
    }
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::Usage { field, reason } => write!(f, "{field}: {reason}"),
            NodeError::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for NodeError {}

impl From<ConfigError> for NodeError {
    fn from(e: ConfigError) -> Self {
        NodeError::usage(e.field, e.reason)
    }
}

impl From<kairos_core::Error> for NodeError {
    fn from(e: kairos_core::Error) -> Self {
        NodeError::usage(e.field(), e.reason())
    }
}
