//! The error returned when a channel cannot be built.

use std::error::Error as StdError;
use std::fmt;

/// What went wrong when building a channel, broadly. New kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration is invalid; the message names the field and the reason.
    InvalidConfig,
    /// The HTTP client could not be built (TLS set-up, for example).
    Client,
}

/// An error building a channel. Sending never returns this: send problems are outcomes.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn client(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Error {
            kind: ErrorKind::Client,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }
}

impl From<kairos_core::Error> for Error {
    fn from(e: kairos_core::Error) -> Self {
        Error {
            kind: ErrorKind::InvalidConfig,
            message: format!("invalid configuration: {e}"),
            source: None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}
