//! One module per resource, each with `router()`.

pub mod artifacts;
pub mod deliveries;
pub mod dlq;
pub mod endpoints;
pub mod health;
pub mod hooks;
pub mod jobs;
pub mod metrics;
pub mod occurrences;
pub mod recipients;
pub mod schedules;
pub mod slo;
pub mod subscriptions;
pub mod suppressions;
pub mod topics;
pub mod unsubscribe;
