//! The crate's one error: what went wrong ([`ErrorKind`]), a message that is safe to show,
//! and the underlying error as `source()`.

use kairos_engine::{OpsError, OpsErrorKind};
use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad input or settings: `field` and `reason` say which and why. Nothing was changed.
    Invalid {
        /// The field (`kind`, `payload`, `run_at`, `idempotency_key`, `executor.concurrency`…).
        field: String,
        /// Why.
        reason: String,
    },
    /// The request conflicts with what is stored (an idempotency key whose job was pruned).
    Conflict,
    /// No such thing.
    NotFound,
    /// The database is unreachable or busy; trying again may work.
    Unavailable,
    /// A wait ended before what it waited for ([`crate::Node::wait_finished`]).
    Timeout,
    /// Anything else (a database error, a task that could not be joined).
    Internal,
}

/// An error of kairos-embed.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// Bad input or settings for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let (field, reason) = (field.into(), reason.into());
        Error {
            message: format!("{field}: {reason}"),
            kind: ErrorKind::Invalid { field, reason },
            source: None,
        }
    }

    pub(crate) fn not_found(id: &str) -> Self {
        Error {
            kind: ErrorKind::NotFound,
            message: format!("job {id} does not exist"),
            source: None,
        }
    }

    pub(crate) fn timeout(id: &str, after: std::time::Duration) -> Self {
        Error {
            kind: ErrorKind::Timeout,
            message: format!("job {id} did not finish within {} ms", after.as_millis()),
            source: None,
        }
    }

    pub(crate) fn internal(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error {
            kind: ErrorKind::Internal,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The field of an [`ErrorKind::Invalid`] error.
    pub fn field(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<OpsError> for Error {
    fn from(e: OpsError) -> Self {
        let kind = match e.kind() {
            OpsErrorKind::Invalid { field, reason } => ErrorKind::Invalid {
                field: field.clone(),
                reason: reason.clone(),
            },
            OpsErrorKind::Malformed { field } => ErrorKind::Invalid {
                field: field.clone(),
                reason: e.message().to_string(),
            },
            OpsErrorKind::NotFound => ErrorKind::NotFound,
            OpsErrorKind::Conflict => ErrorKind::Conflict,
            OpsErrorKind::Unavailable => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        };
        Error {
            kind,
            message: e.message().to_string(),
            source: Some(Box::new(e)),
        }
    }
}

impl From<kairos_store::Error> for Error {
    /// Through the facade's mapping, so that an error reads the same as the API's.
    fn from(e: kairos_store::Error) -> Self {
        OpsError::from(e).into()
    }
}

impl Error {
    /// A node that could not be built: a setting (named as this crate names it: `url`,
    /// `schema`, `kind`, `executor.concurrency`…) or a failure opening the database.
    pub(crate) fn from_node(e: kairos_app::node::NodeError) -> Self {
        match e {
            kairos_app::node::NodeError::Usage { field, reason } => {
                let field = match field.as_str() {
                    "database_url" => "url".to_string(),
                    "database_schema" => "schema".to_string(),
                    _ => field,
                };
                Error::invalid(field, reason)
            }
            e @ kairos_app::node::NodeError::Runtime(_) => Error {
                kind: ErrorKind::Internal,
                message: e.to_string(),
                source: Some(Box::new(e)),
            },
        }
    }
}

impl From<kairos_core::Error> for Error {
    fn from(e: kairos_core::Error) -> Self {
        Error::invalid(e.field(), e.reason())
    }
}
