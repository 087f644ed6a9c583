//! # kairos-core
//!
//! The pure heart of kairos: the types every other crate speaks, and the math that decides
//! *when* work happens. Nothing here performs I/O or reads the system clock except
//! [`clock::SystemClock`]; everything else takes `now` as an argument so that tests can drive
//! weeks of schedule in milliseconds with a [`clock::ManualClock`].
//!
//! - [`id`]: prefixed, time-ordered ids (`job_…`, `sch_…`).
//! - [`job`]: job states, the job record, outcomes and error classes.
//! - [`schedule`]: cron / one-shot / interval specs in IANA time zones, DST rules, period keys,
//!   misfire policies.
//! - [`retry`]: retry policies as data, backoff, `Retry-After`.
//! - [`budget`]: call timeouts and job-kind deadlines.
//! - [`concurrency`]: concurrency keys (at most N jobs of one key at once).
//! - [`clock`]: the only place that reads the system time.
#![deny(missing_docs)]

pub mod audience;
pub mod budget;
pub mod clock;
pub mod concurrency;
pub mod error;
pub mod id;
pub mod job;
pub mod retry;
pub mod schedule;
pub mod text;

pub use audience::JobAudience;
pub use clock::{Clock, ManualClock, SystemClock};
pub use concurrency::Concurrency;
pub use error::{Error, ErrorKind, error_chain};
pub use id::{IdPrefix, new_id};
pub use job::{AttemptOutcome, ErrorClass, Failure, Job, JobKind, JobState, Outcome};
pub use retry::RetryPolicy;
