//! # kairos-engine
//!
//! The engine is a set of small services of one shape — a config with defaults and
//! `validate()`, `run_once(now) -> Result<Report>`, and a loop with a cancellation token:
//!
//! - [`scheduler`]: claims due schedules, plans firings per misfire policy, expands each
//!   firing into jobs with unique dedupe keys and advances `next_fire_at` in one transaction.
//! - [`executor`]: claims due jobs in batches under a lease, runs handlers concurrently under
//!   a per-kind timeout, catches panics, renews leases, completes outcomes in batches.
//! - [`rescuer`]: returns jobs whose lease expired (a crashed node) to `available`; runs
//!   only on the leader ([`Engine::with_leader`]).
//!
//! [`Engine`] runs them together and wakes at the earliest due time it knows, on a local
//! enqueue (or, on PostgreSQL, another node's, through `LISTEN`), and at a short poll
//! interval as a fallback. [`Kairos`] is the operations facade
//! (validation + store calls) shared by the HTTP API and the CLI. Time always comes from an
//! injected [`Clock`](kairos_core::Clock).
#![deny(missing_docs)]

pub mod engine;
pub mod error;
pub mod executor;
pub mod expand;
pub mod handler;
pub mod handlers;
pub mod ops;
pub mod rescuer;
pub mod scheduler;

pub use engine::{Engine, EngineConfig};
pub use error::{OpsError, OpsErrorKind};
pub use handler::{Handler, HandlerRegistry, JobContext};
pub use ops::Kairos;
