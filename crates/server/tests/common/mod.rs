//! The server's test harness: the real app over a real SQLite file in a temp dir, served on
//! 127.0.0.1:0, with the real engine (its executor driven by `run_once` on a manual clock) and
//! the built-in handlers allowed to reach 127.0.0.1.
#![allow(dead_code)] // each test binary uses a different part of this module

use chrono::{DateTime, Utc};
use kairos_core::{Clock, ManualClock};
use kairos_engine::KindSettings;
use kairos_engine::handlers::builtin;
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::http::HttpLimits;
use kairos_server::{ApiToken, AppState, app};
use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use kairos_testkit::init_crypto;
use std::sync::Arc;
use tempfile::TempDir;

pub mod admin_ui;
pub mod pg;
pub mod unreadable;

/// A running app and the parts tests reach into.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client that ignores proxies and never follows redirects.
    pub http: reqwest::Client,
    /// The clock everything reads.
    pub clock: Arc<ManualClock>,
    /// The engine (not running: tests call its services' `run_once`).
    pub engine: Engine,
    /// The operations facade the app serves.
    pub kairos: Kairos,
    /// The store.
    pub store: Arc<dyn Store>,
    dir: TempDir,
    /// Keeps a PostgreSQL test schema until the app is dropped.
    _guard: Option<Box<dyn std::any::Any + Send>>,
    /// The PostgreSQL schema, when the app runs on PostgreSQL (else SQLite at
    /// `<dir>/kairos.db`).
    pub pg_schema: Option<String>,
}

impl TestApp {
    /// The app at `t0` guarded by `token`.
    pub async fn start(t0: DateTime<Utc>, token: &str) -> TestApp {
        Self::start_with(t0, token, |s| s).await
    }

    /// [`TestApp::start`], with a last say over the app's state (monitor settings, …).
    pub async fn start_with(
        t0: DateTime<Utc>,
        token: &str,
        state: impl FnOnce(AppState) -> AppState,
    ) -> TestApp {
        Self::start_full(t0, token, state, HttpLimits::default()).await
    }

    /// [`TestApp::start`] with the HTTP server's `limits` (timeouts, caps).
    pub async fn start_with_limits(t0: DateTime<Utc>, token: &str, limits: HttpLimits) -> TestApp {
        Self::start_full(t0, token, |s| s, limits).await
    }

    async fn start_full(
        t0: DateTime<Utc>,
        token: &str,
        state: impl FnOnce(AppState) -> AppState,
        limits: HttpLimits,
    ) -> TestApp {
        init_crypto();
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("kairos.db"))
                .await
                .expect("open store"),
        );
        Self::start_on_full(t0, token, store, dir, None, false, state, limits).await
    }

    /// The app with the `email` kind on the `file` transport (`<dir>/outbox`), on SQLite or
    /// (`postgres`) PostgreSQL; `None` when PostgreSQL is not reachable and not required.
    pub async fn start_with_email(
        t0: DateTime<Utc>,
        token: &str,
        postgres: bool,
    ) -> Option<TestApp> {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut schema = None;
        let (store, guard): (Arc<dyn Store>, Option<Box<dyn std::any::Any + Send>>) = if postgres {
            let (store, guard) = pg::open().await?;
            schema = Some(guard.schema.clone());
            (Arc::new(store), Some(Box::new(guard)))
        } else {
            let store = SqliteStore::open(&dir.path().join("kairos.db"))
                .await
                .expect("open store");
            (Arc::new(store), None)
        };
        let mut app = Self::start_on(t0, token, store, dir, guard, true, |s| s).await;
        app.pg_schema = schema;
        Some(app)
    }

    /// The app on PostgreSQL (a fresh schema, dropped when the app is dropped); `None` when
    /// the server is not reachable and not required (the test is skipped, loudly).
    pub async fn start_postgres(t0: DateTime<Utc>, token: &str) -> Option<TestApp> {
        let (store, guard) = pg::open().await?;
        let dir = tempfile::tempdir().expect("tempdir");
        Some(
            Self::start_on(
                t0,
                token,
                Arc::new(store),
                dir,
                Some(Box::new(guard)),
                false,
                |s| s,
            )
            .await,
        )
    }

    /// The app on `store`, with `dir` as its data directory; with `email`, the `email` kind
    /// writes `.eml` files to `<dir>/outbox` (which erasure scrubs).
    pub async fn start_on(
        t0: DateTime<Utc>,
        token: &str,
        store: Arc<dyn Store>,
        dir: TempDir,
        guard: Option<Box<dyn std::any::Any + Send>>,
        email: bool,
        state: impl FnOnce(AppState) -> AppState,
    ) -> TestApp {
        Self::start_on_full(
            t0,
            token,
            store,
            dir,
            guard,
            email,
            state,
            HttpLimits::default(),
        )
        .await
    }

    /// [`TestApp::start_on`] with the HTTP server's `limits`.
    #[allow(clippy::too_many_arguments)]
    async fn start_on_full(
        t0: DateTime<Utc>,
        token: &str,
        store: Arc<dyn Store>,
        dir: TempDir,
        guard: Option<Box<dyn std::any::Any + Send>>,
        email: bool,
        state: impl FnOnce(AppState) -> AppState,
        limits: HttpLimits,
    ) -> TestApp {
        init_crypto();
        let clock = Arc::new(ManualClock::new(t0));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let webhook = kairos_channels::WebhookConfig {
            allow_private_targets: true,
            ..Default::default()
        };
        let mut settings = KindSettings::new(store.clone(), dyn_clock.clone(), webhook);
        let outbox = dir.path().join("outbox");
        if email {
            let transport = kairos_channels::email::EmailTransport::new(
                kairos_channels::email::TransportConfig::File {
                    dir: outbox.clone(),
                },
            )
            .expect("transport");
            // Audience webhooks and entitlement URLs on 127.0.0.1, as for the webhook kind.
            let config = kairos_engine::handlers::email::EmailConfig {
                allow_private_targets: true,
                ..Default::default()
            };
            settings.email = Some((transport, config));
        }
        let registry = builtin(settings).expect("built-in kinds");
        let kinds = std::sync::Arc::new(registry.clone());
        let engine = Engine::new(
            EngineConfig::default().with_node("server-test"),
            store.clone(),
            dyn_clock.clone(),
            kinds.clone(),
        )
        .expect("engine");
        let kairos = Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds)
            .allow_private_targets(true)
            .with_outbox(outbox);
        let router = app(state(AppState::new(kairos.clone(), ApiToken::new(token))));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ =
                kairos_server::http::serve(listener, router, limits, std::future::pending()).await;
        });
        TestApp {
            base: format!("http://{addr}"),
            http: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            clock,
            engine,
            kairos,
            store,
            dir,
            _guard: guard,
            pg_schema: None,
        }
    }

    /// Run the due jobs once at the clock's now.
    pub async fn run_jobs(&self) {
        self.engine
            .executor()
            .run_once(self.clock.now())
            .await
            .expect("executor run");
    }

    /// `POST {path}` with a JSON body under `token`: the status and the JSON answer (an answer
    /// that is not JSON fails the test, showing it).
    pub async fn post_json(
        &self,
        token: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        let text = r.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
        )
    }

    /// The data directory.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// An `application/x-www-form-urlencoded` body of `pairs`.
pub fn form_body(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}
