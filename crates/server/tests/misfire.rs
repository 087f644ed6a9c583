//! Late firings run (issue 30), through a real node on each database: a one-shot reminder
//! due while the only node is stopped for three minutes is delivered within seconds of the
//! restart. The node's clock is a manual one, so the three minutes take no time; the node
//! itself (scheduler, executor, webhook sender) runs for real against a test receiver.

use chrono::{DateTime, Duration, Utc};
use kairos_app::config::Config;
use kairos_app::node::NodeBuilder;
use kairos_core::clock::ManualClock;
use kairos_store::ScheduleState;
use kairos_testkit::TestReceiver;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// Start a node on `cfg` with `clock`, run `f` on its facade, stop it.
async fn with_node<F, Fut, T>(cfg: &Config, clock: &Arc<ManualClock>, f: F) -> T
where
    F: FnOnce(kairos_engine::Kairos) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let node = NodeBuilder::new(cfg.clone())
        .with_clock(clock.clone())
        .build()
        .await
        .expect("build the node");
    let cancel = CancellationToken::new();
    let running = node.start(&cancel);
    let out = f(node.kairos().clone()).await;
    cancel.cancel();
    running.join().await;
    node.close().await;
    out
}

/// S0-1: the scenario on one database. The node creates a one-shot `at` schedule due in a
/// minute and stops; three minutes after its time (three minutes later than the 60 s
/// threshold) a node starts again and delivers it, once.
async fn one_shot_due_while_the_node_was_stopped_is_delivered_after_restart(cfg: Config) {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-12-05T09:00:00Z");
    let clock = Arc::new(ManualClock::new(t0));
    let at = t0 + Duration::minutes(1);
    let body = serde_json::json!({
        "name": "reminder",
        "at": at.to_rfc3339(),
        "kind": "webhook",
        "webhook": {"url": rx.url("/reminder"), "secret": SECRET},
        "payload": {"remind": "dentist"},
    });
    let id = with_node(&cfg, &clock, |k| async move {
        let req = serde_json::from_value(body).expect("schedule body");
        k.schedule_create(req).await.expect("create").id
    })
    .await;
    // The only node is stopped from before the firing until three minutes after it.
    clock.set(at + Duration::minutes(3));
    let (delivered, schedule) = with_node(&cfg, &clock, |k| {
        let id = id.clone();
        let rx = &rx;
        async move {
            let delivered = rx.wait_for(1, std::time::Duration::from_secs(10)).await;
            (delivered, k.schedule_get(&id).await.expect("schedule"))
        }
    })
    .await;
    assert!(
        delivered,
        "the missed one-shot was not delivered after the restart"
    );
    assert_eq!(rx.count(), 1);
    let got: serde_json::Value = serde_json::from_str(&rx.received()[0].body_text()).unwrap();
    assert_eq!(got["data"]["remind"], "dentist", "{got}");
    assert_eq!(
        got["fire_at"], "2026-12-05T09:01:00.000Z",
        "the nominal time, late"
    );
    assert_eq!(schedule.state, ScheduleState::Finished);
}

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
async fn one_shot_missed_while_the_only_node_was_stopped_is_delivered_on_restart_sqlite_s0_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    one_shot_due_while_the_node_was_stopped_is_delivered_after_restart(config(dir.path())).await;
}

#[tokio::test]
async fn one_shot_missed_while_the_only_node_was_stopped_is_delivered_on_restart_postgres_s0_1() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_misfire", "The PostgreSQL misfire test").await
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        database_url: Some(guard.url.clone()),
        database_schema: guard.schema.clone(),
        secret_key: Some(kairos_app::config::SecretKey::generate().to_base64()),
        ..config(dir.path())
    };
    one_shot_due_while_the_node_was_stopped_is_delivered_after_restart(cfg).await;
}
