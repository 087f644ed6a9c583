//! One module per resource, each with `router()`.

pub mod dlq;
pub mod health;
pub mod jobs;
pub mod schedules;
