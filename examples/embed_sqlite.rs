//! Embedding kairos on an SQLite file: typed jobs, run in-process, enqueued on their own and
//! inside the application's transactions (one committed, one rolled back).
//!
//! `cargo run --example embed_sqlite [path/to/app.db]` (default: a new temporary file).
//! Prints one final line, `embed_sqlite: ok: …`, and exits 0 when every check held.

use kairos_embed::sqlx::{self, SqlitePool};
use kairos_embed::{Context, EnqueueOptions, JobArgs, JobError, Node, NodeBuilderExt, RetryPolicy};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::mpsc;

/// The job: mail the invoice of an order. Ids only; the handler reads the rest.
#[derive(Debug, Serialize, Deserialize)]
struct SendInvoice {
    order_id: i64,
}

/// The kind brings, with its handler, its retry default and its request check: one call to
/// `.handler(…)` registers all three.
impl JobArgs for SendInvoice {
    const KIND: &'static str = "send_invoice";
    const TIMEOUT: Duration = Duration::from_secs(30);

    fn retry() -> Option<RetryPolicy> {
        Some(RetryPolicy::http_call())
    }

    fn validate(&self) -> Result<(), String> {
        if self.order_id <= 0 {
            return Err("order_id must be positive".into());
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = match std::env::args().nth(1) {
        Some(p) => p.into(),
        None => dir.path().join("app.db"),
    };

    // The handler reports each order it invoiced, so that main can wait for them.
    let (done, mut invoiced) = mpsc::unbounded_channel::<i64>();
    let node = Node::sqlite(&file)
        .handler(move |job: SendInvoice, ctx: Context| {
            let done = done.clone();
            async move {
                // A real handler sends the mail here, with ctx.job_id as its idempotency key.
                println!(
                    "invoicing order {} (job {}, attempt {})",
                    job.order_id, ctx.job_id, ctx.attempt
                );
                done.send(job.order_id).map_err(JobError::permanent)?;
                Ok(())
            }
        })
        .start()
        .await?;

    // The application's own tables, in the same file, on its own pool.
    let pool =
        SqlitePool::connect_with(node.sqlite_connect_options().expect("an SQLite node")).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total_cents INTEGER NOT NULL)",
    )
    .execute(&pool)
    .await?;

    // 0. The kind's own check refuses bad arguments, naming the field; nothing is stored.
    let refused = node
        .enqueue(SendInvoice { order_id: 0 })
        .await
        .expect_err("order 0 is refused");
    assert_eq!(refused.field(), Some("payload"), "{refused}");

    // 1. On its own, with an idempotency key: enqueueing it again creates nothing.
    let first = node
        .enqueue_with(
            SendInvoice { order_id: 1 },
            EnqueueOptions {
                idempotency_key: Some("invoice-1".into()),
                ..Default::default()
            },
        )
        .await?;
    let again = node
        .enqueue_with(
            SendInvoice { order_id: 1 },
            EnqueueOptions {
                idempotency_key: Some("invoice-1".into()),
                ..Default::default()
            },
        )
        .await?;
    assert!(first.created && !again.created && again.job.id == first.job.id);
    // Enqueued without a policy, it retries by its kind's default.
    assert_eq!(
        node.kairos().kinds().retry_of(&first.job),
        RetryPolicy::http_call()
    );

    // 2. With the order, in one transaction that commits: the job exists with the order.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query("INSERT INTO orders (id, total_cents) VALUES (2, 4200)")
        .execute(&mut *tx)
        .await?;
    let committed = node
        .enqueue_tx(&mut tx, SendInvoice { order_id: 2 })
        .await?;
    tx.commit().await?;
    node.wake();

    // 3. In a transaction that rolls back: neither the order nor its job ever existed.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query("INSERT INTO orders (id, total_cents) VALUES (3, 990)")
        .execute(&mut *tx)
        .await?;
    let rolled_back = node
        .enqueue_tx(&mut tx, SendInvoice { order_id: 3 })
        .await?;
    tx.rollback().await?;

    // Wait for the two jobs that exist (bounded), then check what is stored.
    let mut orders = Vec::new();
    for _ in 0..2 {
        let id = tokio::time::timeout(Duration::from_secs(60), invoiced.recv())
            .await?
            .ok_or("the handler stopped")?;
        orders.push(id);
    }
    orders.sort();
    assert_eq!(orders, [1, 2], "the jobs that ran");
    assert!(
        node.job(&rolled_back.job.id).await?.is_none(),
        "the rolled-back job exists"
    );
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&pool)
        .await?;
    assert_eq!(stored, 1, "orders stored");
    // The handler returned before the engine committed its outcome: wait for the commit.
    let state = node
        .wait_finished(&committed.job.id, Duration::from_secs(30))
        .await?
        .state;

    pool.close().await;
    node.shutdown().await;
    println!(
        "embed_sqlite: ok: order 0 refused ({refused}); jobs ran for orders {orders:?}; the committed job is {state}; the rolled-back job does not exist"
    );
    Ok(())
}
