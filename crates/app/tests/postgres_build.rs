//! A node built on PostgreSQL opens its engine's hot-path connections when it is built, not
//! under its first jobs (`NodeBuilder::build`, `PostgresStore::warm_hot_path`). Skipped
//! loudly without a server unless `KAIROS_TEST_POSTGRES=required`.

use kairos_app::node::{Db, NodeBuilder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_node_opens_its_claim_and_completion_connections_when_built() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_build", "the node's hot-path connections").await
    else {
        return;
    };
    let node = NodeBuilder::postgres(guard.url.clone())
        .schema(guard.schema.clone())
        .build()
        .await
        .expect("build");
    let Db::Postgres(store, _) = node.db() else {
        panic!("a PostgreSQL node");
    };
    // Nothing started, no job enqueued: the connections are open already.
    assert_eq!(store.claim_pool().size(), 2, "both claimers' connections");
    assert_eq!(
        store.hot_pool().size(),
        2,
        "both completion writers' connections"
    );
    node.close().await;
}
