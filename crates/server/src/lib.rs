//! # kairos-server
//!
//! The HTTP API of kairos: one axum application, [`app`], over the operations facade
//! [`Kairos`](kairos_engine::Kairos), so the API enforces exactly the rules the CLI does.
//!
//! - [`routes`]: one module per resource (`health`, `schedules`, `jobs`, `dlq`), each with
//!   `router()`.
//! - [`auth`]: bearer tokens on every `/v1/…` route, compared in constant time.
//! - [`problem`]: every error is `application/problem+json` naming the field and the reason;
//!   the [`ApiJson`](problem::ApiJson) and [`ApiQuery`](problem::ApiQuery) extractors keep
//!   axum's plain-text rejections from reaching users.
//! - [`views`]: the JSON shapes (no view ever carries a webhook secret).
//! - [`openapi`]: the OpenAPI document, generated from the code with utoipa.
//! - [`AppState::for_node`]: the API over a node built by `kairos_app::node::NodeBuilder`
//!   (settings, the database, the engine and its kinds live in `kairos-app`).
//! - [`otel`]: tracing over OpenTelemetry (`KAIROS_OTLP_ENDPOINT`), spans posted over OTLP/HTTP.
#![deny(missing_docs)]

pub mod access;
pub mod admin;
pub mod auth;
pub mod headers;
pub mod http;
pub mod job_counts;
pub mod maintenance;
pub mod openapi;
pub mod otel;
pub mod pages;
pub mod problem;
pub mod routes;
pub mod scope;
pub mod views;

// Settings, the node builder and the monitor's settings live in `kairos-app`.
use kairos_app::{config, monitoring, node};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use kairos_engine::Kairos;
use std::sync::Arc;

pub use auth::ApiToken;

/// Largest accepted request body (1 MiB).
pub const BODY_LIMIT: usize = 1 << 20;

/// What every handler shares. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The operations facade.
    pub kairos: Kairos,
    /// The API token `/v1/…` requires.
    pub token: Arc<ApiToken>,
    /// The SLO monitor's settings (`GET /v1/slo` evaluates with them).
    pub monitor: Arc<kairos_engine::monitor::MonitorConfig>,
    /// The secrets of `/hooks/*` and `/unsubscribe`.
    pub inbound: Arc<routes::hooks::InboundConfig>,
    /// Whether the admin session cookie is `Secure` (`KAIROS_PUBLIC_URL` is https).
    pub secure_cookies: bool,
    /// Wrong bearer tokens per source address (the `/v1` backoff).
    pub bearer_limiter: Arc<admin::login_limit::LoginLimiter>,
    /// The database gauges of `/metrics`, read once for scrapes that overlap.
    pub gauges: Arc<routes::metrics::GaugeFlight>,
    /// Jobs per state and kind, shared by `/metrics` and the admin's overview.
    pub job_counts: Arc<job_counts::JobCounts>,
}

impl AppState {
    /// State over `kairos`, guarded by `token`.
    pub fn new(kairos: Kairos, token: ApiToken) -> Self {
        AppState {
            kairos,
            token: Arc::new(token),
            monitor: Arc::default(),
            inbound: Arc::default(),
            secure_cookies: false,
            bearer_limiter: Arc::new(admin::login_limit::LoginLimiter::bearer()),
            gauges: Arc::default(),
            job_counts: Arc::default(),
        }
    }

    /// The API's state over `node`, guarded by `token`: the node's facade, the monitor's
    /// settings, the inbound secrets and the cookie policy from its configuration.
    pub fn for_node(
        node: &kairos_app::node::Node,
        token: ApiToken,
    ) -> Result<Self, kairos_app::node::NodeError> {
        let cfg = node.config();
        let inbound = routes::hooks::InboundConfig::from_config(cfg)?;
        Ok(AppState::new(node.kairos().clone(), token)
            .with_monitor(monitoring::monitor_config(cfg)?)
            .with_inbound(inbound)
            .with_secure_cookies(cfg.public_url_is_https()))
    }

    /// Mark the admin session cookie `Secure` (set it when the public URL is https).
    pub fn with_secure_cookies(mut self, secure: bool) -> Self {
        self.secure_cookies = secure;
        self
    }

    /// Verify inbound webhooks and unsubscribe tokens with `cfg`'s secrets.
    pub fn with_inbound(mut self, cfg: routes::hooks::InboundConfig) -> Self {
        self.inbound = Arc::new(cfg);
        self
    }

    /// Evaluate SLOs with `cfg` instead of the defaults.
    pub fn with_monitor(mut self, cfg: kairos_engine::monitor::MonitorConfig) -> Self {
        self.monitor = Arc::new(cfg);
        self
    }
}

/// The application: `/healthz`, `/readyz`, `/metrics` without a token; `/v1/…` with one.
pub fn app(state: AppState) -> Router {
    // Before any request: the engine's counters reach `/metrics` from the start.
    let _ = monitoring::metrics_recorder();
    let v1 = Router::new()
        .nest("/schedules", routes::schedules::router())
        .nest("/jobs", routes::jobs::router())
        .nest("/dlq", routes::dlq::router())
        .nest("/artifacts", routes::artifacts::router())
        .nest("/slo", routes::slo::router())
        .nest("/recipients", routes::recipients::router())
        .nest("/topics", routes::topics::router())
        .nest("/subscriptions", routes::subscriptions::router())
        .nest("/occurrences", routes::occurrences::router())
        .nest("/deliveries", routes::deliveries::router())
        .nest("/suppressions", routes::suppressions::router())
        .nest("/endpoints", routes::endpoints::router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        // Outermost: in maintenance mode every /v1 request is 503.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            maintenance::guard,
        ));
    Router::new()
        .merge(routes::health::router())
        .merge(routes::metrics::router())
        .merge(
            routes::unsubscribe::router()
                .layer(axum::middleware::map_response(headers::security_headers)),
        )
        .nest("/hooks", routes::hooks::router())
        .nest("/v1", v1)
        .nest("/admin", admin::router(&state))
        .fallback(|| async { problem::Problem::no_route() })
        .method_not_allowed_fallback(|| async {
            problem::Problem::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                "this route does not accept that method",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        // Outside the body limit and every route: their plain-text errors become problems.
        .layer(axum::middleware::from_fn(problem::plain_errors_as_problems))
        // Outermost: every request is logged once, with the status the client got.
        .layer(axum::middleware::from_fn(access::log))
        .with_state(state)
}
