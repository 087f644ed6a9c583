//! Issue 12, finding 3: the engine with templates rendered through a worker pool
//! (`Renderer::Workers`), on a manual clock and a real SQLite store. The workers are `sh`
//! stand-ins so that each ending is exact: a worker that dies in a render fails the job
//! **permanent** (the template will not shrink), a worker that cannot start fails it
//! **transient** (not the template's fault) and refuses a topic save as unavailable, storing
//! nothing. The real worker is tested in crates/cli/tests/template_sandbox.rs.

mod common;

use common::{open_store, registry_with, t};
use kairos_channels::email::template::{Pool, PoolConfig, Renderer};
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, ErrorClass, JobState, ManualClock};
use kairos_engine::handlers::email::{EmailConfig, EmailHandler};
use kairos_engine::ops::{NewJob, NewRecipient, NewSubscription};
use kairos_engine::{Engine, EngineConfig, Handler, Kairos, OpsErrorKind};
use kairos_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Passes every check; in a render names `text` and aborts (as an allocation refused under
/// `RLIMIT_AS` does). The pool clears the environment: no PATH is needed.
const DIES_IN_RENDER: &str = r#"
while read -r line; do
  case "$line" in
    *'"op":"check"'*) echo '{"reply":"done","result":{"Ok":[]}}' ;;
    *) echo '{"reply":"start","field":"subject"}'; echo '{"reply":"start","field":"text"}'; kill -ABRT $$ ;;
  esac
done
"#;

fn pool(program: &str, args: &[&str]) -> Renderer {
    Renderer::Workers(Arc::new(Pool::new(PoolConfig {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        workers: 1,
        timeout: Duration::from_secs(30),
        memory_mb: 128,
    })))
}

struct World {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    clock: Arc<ManualClock>,
    engine: Engine,
    kairos: Kairos,
}

async fn world(renderer: Renderer) -> World {
    let (dir, store) = open_store().await;
    let clock = Arc::new(ManualClock::new(t("2026-11-29T00:00:00Z")));
    let transport = EmailTransport::new(TransportConfig::File {
        dir: dir.path().join("outbox"),
    })
    .unwrap();
    let cfg = EmailConfig {
        renderer: renderer.clone(),
        ..Default::default()
    };
    let email: Arc<dyn Handler> =
        Arc::new(EmailHandler::new(store.clone(), transport, cfg).unwrap());
    let registry = registry_with(&store, clock.clone(), &[("email", email)]);
    let kinds = std::sync::Arc::new(registry.clone());
    let engine = Engine::new(
        EngineConfig::default(),
        store.clone(),
        clock.clone(),
        kinds.clone(),
    )
    .unwrap();
    let kairos =
        Kairos::new(store.clone(), clock.clone(), engine.wake(), kinds).with_renderer(renderer);
    World {
        _dir: dir,
        store,
        clock,
        engine,
        kairos,
    }
}

impl World {
    /// A recipient subscribed to `weekly`, and one email job for them; the job's id.
    async fn one_mail(&self) -> String {
        self.kairos
            .recipient_put_many(vec![NewRecipient {
                id: Some("u1".into()),
                email: "u1@example.com".into(),
                webhook: None,
                timezone: None,
                locale: None,
                attributes: None,
                state: None,
            }])
            .await
            .unwrap();
        self.kairos
            .subscription_put(
                "u1",
                "weekly",
                NewSubscription {
                    channels: Some(vec!["email".into()]),
                    target: None,
                    targets: None,
                    enabled: Some(true),
                },
            )
            .await
            .unwrap();
        let (job, _) = self
            .kairos
            .job_enqueue(NewJob {
                kind: Some("email".into()),
                payload: Some(serde_json::json!({"topic": "weekly", "recipient_id": "u1"})),
                idempotency_key: Some("mail-1".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        job.id
    }

    async fn run(&self) {
        let now = self.clock.now();
        for _ in 0..10 {
            if self.engine.executor().run_once(now).await.unwrap().claimed == 0 {
                return;
            }
        }
        panic!("the executor did not drain in 10 runs");
    }

    async fn put_topic(&self) -> Result<(), kairos_engine::OpsError> {
        self.kairos
            .topic_put(
                "weekly",
                serde_json::from_value(serde_json::json!({"subject": "Hi", "text": "Hello"}))
                    .unwrap(),
            )
            .await
            .map(|_| ())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_worker_dying_in_a_send_render_fails_the_job_permanently_naming_the_field() {
    let w = world(pool("/bin/sh", &["-c", DIES_IN_RENDER])).await;
    w.put_topic().await.unwrap();
    let id = w.one_mail().await;
    w.run().await;
    let job = w.store.job_get(&id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead, "{job:?}");
    let error = job.last_error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("recipient u1: text: exceeded the memory limit of 128 MB"),
        "{error}"
    );
    let attempts = w.store.attempt_list(&id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].error_class, Some(ErrorClass::Permanent));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_worker_that_cannot_start_refuses_the_save_as_unavailable_and_retries_a_send() {
    let w = world(pool("/nonexistent/kairos", &[])).await;
    let e = w.put_topic().await.unwrap_err();
    assert!(matches!(e.kind(), OpsErrorKind::Unavailable), "{e:?}");
    assert!(w.store.topic_get("weekly").await.unwrap().is_none());

    // A topic stored while the workers worked (straight into the store); now they cannot
    // start.
    w.store
        .topic_put(kairos_store::TopicPut {
            name: "weekly".into(),
            subject: "Hi".into(),
            html: None,
            text: Some("Hello".into()),
            variants: vec![],
            entitlement_url: None,
            entitlement_timeout_ms: None,
            now: w.clock.now(),
        })
        .await
        .unwrap();
    let id = w.one_mail().await;
    w.run().await;
    let job = w.store.job_get(&id).await.unwrap().unwrap();
    assert_ne!(
        job.state,
        JobState::Dead,
        "not the template's fault: {job:?}"
    );
    let attempts = w.store.attempt_list(&id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].error_class, Some(ErrorClass::Transient));
    assert!(
        attempts[0]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("template worker unavailable"),
        "{attempts:?}"
    );
}
