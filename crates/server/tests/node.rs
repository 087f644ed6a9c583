//! The node builder on a real SQLite file: one builder gives the commands their facade and
//! `serve` its whole node; the secret key is checked against the database by both.

use kairos_app::config::Config;
use kairos_app::node::{Db, NodeBuilder, NodeError};
use kairos_core::JobState;
use tokio_util::sync::CancellationToken;

fn config(dir: &std::path::Path) -> Config {
    kairos_testkit::init_crypto();
    Config {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        node_id: Some("node-a".into()),
        poll_interval_ms: 10,
        allow_private_targets: true,
        ..Config::default()
    }
}

#[tokio::test]
async fn one_builder_for_the_commands_and_for_a_started_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path());

    // A command: the facade over the database, nothing started.
    let (db, kairos) = NodeBuilder::new(cfg.clone())
        .open_kairos()
        .await
        .expect("open");
    assert!(matches!(db, Db::Sqlite(_)));
    let req: kairos_engine::ops::NewJob = serde_json::from_value(serde_json::json!({
        "kind": "webhook",
        "webhook": {"url": "http://127.0.0.1:9/hook", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
        "run_at": "2100-01-01T00:00:00Z",
    }))
    .expect("job body");
    let (job, _) = kairos.job_enqueue(req).await.expect("enqueue");
    db.close().await;

    // The node: built with the same settings, its node id on the engine; its services run
    // once started and stop on cancel.
    let node = NodeBuilder::new(cfg.clone()).build().await.expect("build");
    assert!(
        node.engine().leader().is_leader(),
        "SQLite: the one node leads"
    );
    let stored = node.kairos().store().job_get(&job.id).await.unwrap();
    assert_eq!(stored.map(|j| j.state), Some(JobState::Available));
    let cancel = CancellationToken::new();
    let running = node.start(&cancel);
    cancel.cancel();
    running.join().await;
    node.close().await;

    // Another secret key for the same database is refused, naming the setting.
    let other = Config {
        secret_key: Some(kairos_app::config::SecretKey::generate().to_base64()),
        ..cfg
    };
    match NodeBuilder::new(other).build().await {
        Err(NodeError::Usage { field, .. }) => assert_eq!(field, "secret_key"),
        other => panic!("expected a secret_key error, got {:?}", other.map(|_| ())),
    }
}
