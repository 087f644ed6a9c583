//! The access log: one line per request, target `kairos::access`, with the method, the
//! matched route pattern (`/v1/jobs/{id}`, never the path with its ids or the query, which may
//! hold data), the status and the latency. Headers are not logged, so neither is the token.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;

/// Log the request once it is answered.
pub async fn log(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "(no route)".to_string());
    let res = next.run(req).await;
    tracing::info!(
        target: "kairos::access",
        method = %method,
        route = %route,
        status = res.status().as_u16(),
        latency_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    res
}
