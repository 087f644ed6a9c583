//! The access log: one line per request, target `kairos::access`, with the method, the
//! matched route pattern (`/v1/jobs/{id}`, never the path with its ids or the query, which may
//! hold data), the status and the latency. Headers are not logged, so neither is the token.
//!
//! With tracing on (`KAIROS_OTLP_ENDPOINT`), each request is also a server span with the
//! same method, route pattern and status (see [`crate::otel`]). A request that carries a
//! valid W3C `traceparent` (and `tracestate`) continues the caller's trace: its span is a
//! child of the caller's, so an application's trace shows the kairos call it made.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::time::Instant;
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Log the request once it is answered.
pub async fn log(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "(no route)".to_string());
    // Disabled (and its fields never formatted) unless tracing is on.
    let span = tracing::info_span!(
        target: "kairos::trace",
        "HTTP request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = Empty,
    );
    if !span.is_disabled() {
        let caller = TraceContextPropagator::new().extract(&HeaderExtractor(req.headers()));
        if caller.span().span_context().is_valid() {
            let _ = span.set_parent(caller);
        }
    }
    let res = next.run(req).instrument(span.clone()).await;
    let status = res.status().as_u16();
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "error");
    }
    tracing::info!(
        target: "kairos::access",
        method = %method,
        route = %route,
        status,
        latency_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    res
}
