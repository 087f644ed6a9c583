//! # kairos-engine
//!
//! The engine is a set of small services of one shape ([`service::Service`]) — a config
//! with defaults and `validate()`, `run_once(now) -> Result<Report>` — run by one loop,
//! [`service::Runner`] (wake-ups, cancellation, back-off, the leader gate):
//!
//! - [`scheduler`]: claims due schedules, plans firings per misfire policy, expands each
//!   firing into jobs with unique dedupe keys and advances `next_fire_at` in one transaction.
//! - [`catch_up`]: catch-up times of schedules, handled by the scheduler: a period
//!   runs again only when its product is missing.
//! - [`audience`]: audience schedules (kind `email` with a topic): resumable, paged
//!   expansion of a firing into one job per subscription × channel.
//! - [`executor`]: claims due jobs in batches under a lease, runs handlers concurrently under
//!   a per-kind timeout, catches panics, renews leases, completes outcomes in batches.
//! - [`rescuer`]: returns jobs whose lease expired (a crashed node) to `available`; runs
//!   only on the leader ([`Engine::with_leader`]).
//! - [`service`]: the service shape and its runner.
//! - [`pruner`]: retention — deletes finished jobs and their attempts older than their
//!   configured ages (dead letters kept longer), in bounded batches; leader-only.
//! - [`monitor`]: SLO checks (failure rate, stuck work, missed firings) as warnings, with an
//!   optional alert webhook; leader-only too.
//! - [`endpoint_health`]: folds the attempt log into each webhook endpoint's failure streak
//!   and 24 h counters, off the delivery path, and disables an endpoint after a sustained
//!   failure streak when configured; leader-only.
//! - [`sampler`]: once a minute, the queue's depth, running jobs and lateness p99 for the
//!   admin's charts (kept 2 days); leader-only.
//! - [`heartbeat`]: every node's row in `nodes` (last heartbeat, start, leader) for the
//!   admin's nodes page.
//! - [`buckets`]: which part of a window comes from stored per-bucket counts (the monitor's
//!   quarter hours, the admin's minutes) and which from the job table.
//! - [`telemetry`]: one log line and the metrics per attempt and per scheduler firing.
//! - [`kinds`]: the kind layer — per job kind its request validation, retry default,
//!   deadline, handler, after-success behaviour and product checks; [`Kinds`] is the set a
//!   node owns (the built-in kinds with their handlers from [`handlers::builtin`], plus an
//!   application's [`AppKind`]s), given to the [`Engine`] and the [`Kairos`] facade.
//!
//! [`Engine`] runs them together and wakes at the earliest due time it knows, on a local
//! enqueue (or, on PostgreSQL, another node's, through `LISTEN`), and at a short poll
//! interval as a fallback. [`Kairos`] is the operations facade
//! (validation + store calls) shared by the HTTP API and the CLI. Time always comes from an
//! injected [`Clock`](kairos_core::Clock).
#![deny(missing_docs)]

pub mod audience;
pub mod buckets;
pub mod catch_up;
pub mod concurrency;
pub mod endpoint_health;
pub mod engine;
pub mod error;
pub mod executor;
pub mod expand;
pub mod handler;
pub mod handlers;
pub mod heartbeat;
pub mod inbound;
pub mod kinds;
pub mod maintenance;
pub mod monitor;
pub mod ops;
pub mod overlap;
pub mod pruner;
pub mod rescuer;
pub mod sampler;
pub mod scheduler;
pub mod service;
pub mod telemetry;
pub mod zone;

pub use engine::{Engine, EngineConfig};
pub use error::{OpsError, OpsErrorKind};
pub use handler::{Handler, JobContext};
pub use handlers::KindSettings;
pub use kinds::{AppKind, Kind, Kinds};
pub use ops::Kairos;
