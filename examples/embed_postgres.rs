//! Embedding kairos on PostgreSQL: typed jobs, run in-process, enqueued on their own and
//! inside the application's transactions (one committed, one rolled back).
//!
//! `DATABASE_URL=postgres://user@host/db EMBED_SCHEMA=kairos_example cargo run --example
//! embed_postgres` (defaults: `postgres://root@127.0.0.1:5432/test`, schema
//! `kairos_example`). Prints one final line, `embed_postgres: ok: …`, and exits 0 when every
//! check held.

use kairos_embed::sqlx::{self, PgPool};
use kairos_embed::{Context, EnqueueOptions, JobArgs, JobError, Node, NodeBuilderExt};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::mpsc;

/// The job: mail the invoice of an order. Ids only; the handler reads the rest.
#[derive(Debug, Serialize, Deserialize)]
struct SendInvoice {
    order_id: i64,
}

impl JobArgs for SendInvoice {
    const KIND: &'static str = "send_invoice";
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into());
    let schema = std::env::var("EMBED_SCHEMA").unwrap_or_else(|_| "kairos_example".into());

    let (done, mut invoiced) = mpsc::unbounded_channel::<i64>();
    let node = Node::postgres(&url)
        .schema(&schema)
        .handler(move |job: SendInvoice, ctx: Context| {
            let done = done.clone();
            async move {
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

    // The application's own pool and table. Its search_path is its own: kairos's statements
    // name the node's schema. (The table is kept beside kairos's so that one DROP SCHEMA
    // removes the example; it could be anywhere in the database.)
    let pool = PgPool::connect(&url).await?;
    let orders_table = format!("\"{schema}\".example_orders");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE IF NOT EXISTS {orders_table} (id bigint PRIMARY KEY, total_cents bigint NOT NULL)"
    )))
    .execute(&pool)
    .await?;
    // A run id keeps the orders and keys of this run apart from an earlier run's.
    let run = std::process::id() as i64 * 10;

    // 1. On its own, with an idempotency key: enqueueing it again creates nothing.
    let opts = || EnqueueOptions {
        idempotency_key: Some(format!("invoice-{}", run + 1)),
        ..Default::default()
    };
    let first = node
        .enqueue_with(SendInvoice { order_id: run + 1 }, opts())
        .await?;
    let again = node
        .enqueue_with(SendInvoice { order_id: run + 1 }, opts())
        .await?;
    assert!(first.created && !again.created && again.job.id == first.job.id);

    // 2. With the order, in one transaction that commits; the commit wakes the nodes.
    let mut tx = pool.begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders_table} (id, total_cents) VALUES ($1, 4200)"
    )))
    .bind(run + 2)
    .execute(&mut *tx)
    .await?;
    let committed = node
        .enqueue_tx(&mut tx, SendInvoice { order_id: run + 2 })
        .await?;
    tx.commit().await?;

    // 3. In a transaction that rolls back: neither the order nor its job ever existed.
    let mut tx = pool.begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders_table} (id, total_cents) VALUES ($1, 990)"
    )))
    .bind(run + 3)
    .execute(&mut *tx)
    .await?;
    let rolled_back = node
        .enqueue_tx(&mut tx, SendInvoice { order_id: run + 3 })
        .await?;
    tx.rollback().await?;

    let mut orders = Vec::new();
    for _ in 0..2 {
        let id = tokio::time::timeout(Duration::from_secs(60), invoiced.recv())
            .await?
            .ok_or("the handler stopped")?;
        orders.push(id - run);
    }
    orders.sort();
    assert_eq!(
        orders,
        [1, 2],
        "the jobs that ran (order numbers of this run)"
    );
    assert!(
        node.job(&rolled_back.job.id).await?.is_none(),
        "the rolled-back job exists"
    );
    let stored: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {orders_table} WHERE id > $1 AND id <= $1 + 3"
    )))
    .bind(run)
    .fetch_one(&pool)
    .await?;
    assert_eq!(stored, 1, "orders stored by this run");
    // The handler returned before the engine committed its outcome: wait for the commit.
    let state = node
        .wait_finished(&committed.job.id, Duration::from_secs(30))
        .await?
        .state;

    pool.close().await;
    node.shutdown().await;
    println!(
        "embed_postgres: ok: jobs ran for orders {orders:?} in schema {schema}; the committed job is {state}; the rolled-back job does not exist"
    );
    Ok(())
}
