//! The server's test harness: the real app over a real SQLite file in a temp dir, served on
//! 127.0.0.1:0, with the real engine (its executor driven by `run_once` on a manual clock) and
//! the built-in handlers allowed to reach 127.0.0.1.
#![allow(dead_code)] // each test binary uses a different part of this module

use chrono::{DateTime, Utc};
use kairos_core::{Clock, ManualClock};
use kairos_engine::handlers::default_registry;
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::http::HttpLimits;
use kairos_server::{ApiToken, AppState, app};
use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use kairos_testkit::init_crypto;
use std::sync::Arc;
use tempfile::TempDir;

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
        let clock = Arc::new(ManualClock::new(t0));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let webhook = kairos_channels::WebhookConfig {
            allow_private_targets: true,
            ..Default::default()
        };
        let registry =
            default_registry(store.clone(), dyn_clock.clone(), webhook).expect("registry");
        let kinds = registry.kinds();
        let engine = Engine::new(
            EngineConfig::default().with_node("server-test"),
            store.clone(),
            dyn_clock.clone(),
            registry,
        )
        .expect("engine");
        let kairos =
            Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds).allow_private_targets(true);
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
