//! Shared by the test binaries: typed jobs that report to the test, bounded waits for a job's
//! outcome, and PostgreSQL schemas per test (dropped when the test ends), skipped loudly when
//! the server is not reachable unless `KAIROS_TEST_POSTGRES=required`.
#![allow(dead_code)] // each test binary uses a different part of this module

use kairos_embed::{Context, Job, JobArgs, JobError, Node, NodeBuilder, NodeBuilderExt};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::mpsc;

/// A typed job whose handler reports what it was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Greet {
    pub name: String,
    pub times: u32,
}

impl JobArgs for Greet {
    const KIND: &'static str = "greet";
}

/// What a [`Greet`] handler saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub args: Greet,
    pub ctx: Context,
}

/// Register a [`Greet`] handler on `b` that sends what it sees to the returned receiver.
pub fn with_greet(b: NodeBuilder) -> (NodeBuilder, mpsc::UnboundedReceiver<Seen>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let b =
        b.poll_interval(Duration::from_millis(100))
            .handler(move |args: Greet, ctx: Context| {
                let tx = tx.clone();
                async move {
                    tx.send(Seen { args, ctx }).map_err(JobError::permanent)?;
                    Ok(())
                }
            });
    (b, rx)
}

/// The next thing a handler saw; a guard against a hang, not a timing assertion.
pub async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("a handler ran within 60 s")
        .expect("the handler is registered")
}

/// The job once it has finished (at most 30 s).
pub async fn finished(node: &Node, id: &str) -> Job {
    node.wait_finished(id, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("job {id}: {e}"))
}

#[allow(unused_imports)] // not every test binary uses both
pub use kairos_testkit::pg::{SchemaGuard, database_url};

/// A fresh schema name and its guard; `None` (after a loud message) when PostgreSQL is not
/// reachable and not required.
pub async fn pg_schema() -> Option<SchemaGuard> {
    kairos_testkit::pg::fresh_schema("kairos_embed", "This embedding test").await
}
