//! Errors of the operations facade: a kind the API maps to an HTTP status, the field and
//! reason for bad input, and the store error as `source()`.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpsErrorKind {
    /// Bad input: `field` and `reason` say which and why. Nothing was changed.
    Invalid {
        /// The field (dotted path).
        field: String,
        /// Why.
        reason: String,
    },
    /// A request that cannot be read: a field no one owns (`"colour"`), or a kind's request
    /// part of the wrong shape (`"http": {"url": 5}`). The API answers 400, as for malformed
    /// JSON; `field` names the field. Nothing was changed.
    Malformed {
        /// The field (dotted path).
        field: String,
    },
    /// No such thing.
    NotFound,
    /// The request conflicts with the current state (a duplicate name, replaying a succeeded
    /// job).
    Conflict,
    /// The database is unreachable or busy; try again.
    Unavailable,
    /// Anything else.
    Internal,
}

/// An error of the facade.
#[derive(Debug)]
pub struct OpsError {
    kind: OpsErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl OpsError {
    /// A new error.
    pub fn new(kind: OpsErrorKind, message: impl Into<String>) -> Self {
        OpsError {
            kind,
            message: message.into(),
            source: None,
        }
    }
    /// Bad input for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let (field, reason) = (field.into(), reason.into());
        OpsError::new(
            OpsErrorKind::Invalid {
                field: field.clone(),
                reason: reason.clone(),
            },
            format!("{field}: {reason}"),
        )
    }
    /// A request that cannot be read at `field`; `message` says why (serde's words).
    pub fn malformed(field: impl Into<String>, message: impl Into<String>) -> Self {
        OpsError::new(
            OpsErrorKind::Malformed {
                field: field.into(),
            },
            message,
        )
    }
    /// Not found: `what` with `id`.
    pub fn not_found(what: &str, id: &str) -> Self {
        OpsError::new(
            OpsErrorKind::NotFound,
            format!("{what} {id:?} does not exist"),
        )
    }
    /// A conflict with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        OpsError::new(OpsErrorKind::Conflict, message)
    }
    /// The same error with its field under `prefix` (`http.url` → `channels[1].http.url`); a
    /// conflict's message starts with `prefix` (`jobs[3]: …`); other kinds are returned as
    /// they are.
    pub fn under(self, prefix: &str) -> Self {
        match &self.kind {
            OpsErrorKind::Invalid { field, reason } => {
                let mut e = OpsError::invalid(format!("{prefix}.{field}"), reason.clone());
                e.source = self.source;
                e
            }
            OpsErrorKind::Malformed { field } => OpsError {
                kind: OpsErrorKind::Malformed {
                    field: format!("{prefix}.{field}"),
                },
                message: format!("{prefix}: {}", self.message),
                source: self.source,
            },
            OpsErrorKind::Conflict => OpsError {
                kind: OpsErrorKind::Conflict,
                message: format!("{prefix}: {}", self.message),
                source: self.source,
            },
            _ => self,
        }
    }
    /// The kind.
    pub fn kind(&self) -> &OpsErrorKind {
        &self.kind
    }
    /// The message (safe to show to the API caller).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for OpsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<kairos_core::Error> for OpsError {
    fn from(e: kairos_core::Error) -> Self {
        OpsError::invalid(e.field(), e.reason())
    }
}

impl From<kairos_store::Error> for OpsError {
    fn from(e: kairos_store::Error) -> Self {
        use kairos_store::ErrorKind as K;
        let (kind, msg) = match e.kind() {
            // An idempotency key whose job was pruned: say so, there is no job to show.
            K::Conflict if e.to_string().contains(kairos_store::PRUNED_KEY) => (
                OpsErrorKind::Conflict,
                "the idempotency key was used by a job that has since been pruned (retention); nothing was created",
            ),
            K::Conflict => (OpsErrorKind::Conflict, "conflicts with an existing record"),
            K::Unavailable => (OpsErrorKind::Unavailable, "the database is unavailable"),
            K::Invalid => (OpsErrorKind::Internal, "the database refused a value"),
            _ => (OpsErrorKind::Internal, "database error"),
        };
        OpsError {
            kind,
            message: msg.to_string(),
            source: Some(Box::new(e)),
        }
    }
}
