//! The store's error: a kind to act on and the database error as its `source()`.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input violates a constraint (a duplicate name, an unknown reference).
    Conflict,
    /// The input is not valid for the store (a field that does not fit).
    Invalid,
    /// The database could not be reached or is busy; trying again later may work.
    Unavailable,
    /// The stored data or the schema is not what this version expects.
    Corrupt,
    /// Anything else from the database driver.
    Database,
}

/// A store error.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// Which entry of a batch the error is about (its index in the batch).
    entry: Option<usize>,
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
            entry: None,
        }
    }
    /// Say which entry of a batch (its index) the error is about.
    pub fn with_entry(mut self, index: usize) -> Self {
        self.entry = Some(index);
        self
    }
    /// Which entry of a batch the error is about, if it is about one.
    pub fn entry(&self) -> Option<usize> {
        self.entry
    }
    /// Attach the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(s) = &self.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
