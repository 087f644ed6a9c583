//! # kairos-store
//!
//! [`Store`] is the one seam between the engine and a database. It is made of role traits,
//! one per thing the engine needs ([`JobStore`] for the queue, [`JobAdminStore`] for
//! operators, [`ScheduleStore`], [`EndpointStore`], [`AudienceStore`], [`DeliveryStore`],
//! [`ArtifactStore`], [`InboundStore`], [`InsightStore`], [`NodeStore`]); a database
//! implements each role and is a [`Store`] by the blanket impl. Callers hold an
//! `Arc<dyn Store>` and bring the roles into scope with `use kairos_store::prelude::*`.
//!
//! Two implementations exist (SQLite, PostgreSQL) and both run the same conformance suite
//! (`kairos-store-conformance`): a store behaviour exists when the suite tests it.
//!
//! Methods are named noun-then-verb (`job_claim`, `schedule_due`) and take a params struct, so
//! that adding a field does not break every caller. Every method that changes state is one
//! transaction; the idempotency chain of DESIGN.md lives here:
//!
//! 1. enqueue and expansion: `INSERT … ON CONFLICT (dedupe_key) DO NOTHING RETURNING`;
//! 2. claim: a conditional update only one worker can win, with a lease and a fencing token;
//! 3. completion: only the holder of the current lease token can record an outcome.
#![deny(missing_docs)]

mod admin;
mod artifacts;
mod audience;
pub mod batch;
mod bulk;
pub mod concurrency;
mod db_health;
mod deliverability;
mod deliveries;
mod endpoint_health;
mod erasure;
mod error;
pub mod flow;
mod http_targets;
mod inbound;
mod leader;
mod nodes;
mod params;
mod quarters;
mod retention;
mod roles;
mod samples;
pub mod sealing;
mod slo;
pub mod sql;
mod types;

pub use admin::*;
pub use artifacts::*;
pub use audience::*;
pub use bulk::*;
pub use db_health::*;
pub use deliverability::*;
pub use deliveries::*;
pub use endpoint_health::*;
pub use erasure::*;
pub use error::{Error, ErrorKind, Result};
pub use http_targets::*;
pub use inbound::*;
pub use leader::Leader;
pub use nodes::*;
pub use params::*;
pub use quarters::*;
pub use retention::*;
pub use roles::*;
pub use samples::*;
pub use slo::*;
pub use types::*;

/// Everything a caller of the store needs in scope: [`Store`] and its role traits (whose
/// methods are callable on `dyn Store` only when the role trait is in scope).
pub mod prelude {
    pub use crate::Store;
    pub use crate::roles::*;
}

/// The storage seam: every role. Implement the roles; this follows by the blanket impl.
pub trait Store:
    JobStore
    + JobAdminStore
    + ScheduleStore
    + EndpointStore
    + AudienceStore
    + DeliveryStore
    + ArtifactStore
    + InboundStore
    + InsightStore
    + NodeStore
    + Send
    + Sync
    + 'static
{
}

impl<T> Store for T where
    T: JobStore
        + JobAdminStore
        + ScheduleStore
        + EndpointStore
        + AudienceStore
        + DeliveryStore
        + ArtifactStore
        + InboundStore
        + InsightStore
        + NodeStore
        + Send
        + Sync
        + 'static
{
}
