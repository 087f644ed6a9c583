//! The `http` kind: one HTTP call described by a stored target (`http_targets`), retried like
//! an API call, with a per-call timeout and an optional deadline from the request.

pub mod handler;
pub mod request;

use super::Kind;
use kairos_core::RetryPolicy;
use kairos_core::budget::DEFAULT_CALL_TIMEOUT;
use std::time::Duration;

pub use request::{HTTP_TARGET_KEY, HttpSpec};

/// The kind's name.
pub const NAME: &str = "http";

/// The `http` kind.
#[derive(Debug, Clone, Copy)]
pub struct Http;

impl Kind for Http {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_retry(&self) -> RetryPolicy {
        RetryPolicy::http_call()
    }

    fn call_timeout(&self) -> Option<Duration> {
        Some(DEFAULT_CALL_TIMEOUT)
    }
}
