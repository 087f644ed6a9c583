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
//! - [`config`]: layered configuration (defaults, TOML file, `KAIROS_*`, flags) and the API
//!   token.
//! - [`openapi`]: the OpenAPI document, generated from the code with utoipa.
#![deny(missing_docs)]

pub mod auth;
pub mod config;
pub mod openapi;
pub mod problem;
pub mod routes;
pub mod views;

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
}

impl AppState {
    /// State over `kairos`, guarded by `token`.
    pub fn new(kairos: Kairos, token: ApiToken) -> Self {
        AppState {
            kairos,
            token: Arc::new(token),
        }
    }
}

/// The application: `/healthz`, `/readyz` without a token; `/v1/…` with one.
pub fn app(state: AppState) -> Router {
    let v1 = Router::new()
        .nest("/schedules", routes::schedules::router())
        .nest("/jobs", routes::jobs::router())
        .nest("/dlq", routes::dlq::router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    Router::new()
        .merge(routes::health::router())
        .nest("/v1", v1)
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
        .with_state(state)
}
