//! The error type of the pure core: invalid input, named by field.

use std::fmt;

/// What went wrong, broadly. New kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value given by a user is not valid (the field and the reason are in the message).
    Invalid,
}

/// A validation error that names the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    field: String,
    reason: String,
}

impl Error {
    /// An invalid value for `field`, because of `reason`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Invalid,
            field: field.into(),
            reason: reason.into(),
        }
    }
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The field (dotted path, e.g. `retry.delays[1]`) that was wrong.
    pub fn field(&self) -> &str {
        &self.field
    }
    /// Why it was wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
    /// Prefix the field with a parent path (`delays` → `retry.delays`).
    pub fn within(mut self, parent: &str) -> Self {
        self.field = if self.field.is_empty() {
            parent.to_string()
        } else {
            format!("{parent}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for Error {}

/// An error and its `source()` chain on one line (`a: b: c`); a cause whose text the line
/// already ends with (an error that repeats its source) is not repeated.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let next = c.to_string();
        if !s.ends_with(&next) {
            s.push_str(": ");
            s.push_str(&next);
        }
        cur = c.source();
    }
    s
}
