//! Tracing over OpenTelemetry: with `KAIROS_OTLP_ENDPOINT` set, the spans kairos makes (an
//! API request, a schedule firing, a job attempt, an outgoing webhook or `http` call) are
//! batched and posted to `<endpoint>/v1/traces` as OTLP/HTTP protobuf.
//!
//! Every such span has the target [`TRACE_TARGET`]. The OpenTelemetry layer
//! ([`Tracing::layer`]) sees only that target, and the log output must not see it at all
//! ([`Tracing::hide_from_logs`]): with tracing off no subscriber is interested in those spans,
//! so creating one costs a cached "disabled" check and nothing else.
//!
//! The collector's URL is the operator's, so it is trusted: the exporter's client is a plain
//! one (no SSRF guard, no proxy), TLS by rustls with the process's ring provider. Span
//! attributes hold ids, kinds, channel names, status codes, outcomes and attempt numbers only:
//! never payloads, URLs, addresses or tokens.
//!
//! The standard `OTEL_*` variables apply: `OTEL_SERVICE_NAME` (default `kairos`),
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_SCHEDULE_DELAY` and the other batch settings,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, and `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! (the full URL spans are posted to, instead of `<KAIROS_OTLP_ENDPOINT>/v1/traces`; tracing
//! is still switched on by `KAIROS_OTLP_ENDPOINT`) and `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` /
//! `OTEL_EXPORTER_OTLP_TIMEOUT` (ms; default 10 s).

use crate::config::Config;
use crate::node::NodeError;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracerProvider};
use std::time::Duration;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The target of every span kairos exports (and of nothing else).
pub const TRACE_TARGET: &str = kairos_engine::telemetry::spans::TRACE_TARGET;

/// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "kairos";

/// How long one export may take (the OTLP default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the environment variable `name` is set to something other than blanks.
fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// The export timeout: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT`
/// (milliseconds, as the specification has it), else [`EXPORT_TIMEOUT`]. A value that is not
/// a number of milliseconds is ignored, as the SDK ignores it.
fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|n| std::env::var(n).ok()?.trim().parse::<u64>().ok())
    .map(Duration::from_millis)
    .unwrap_or(EXPORT_TIMEOUT)
}

/// Tracing switched on: the tracer provider, which owns the batch processor and the exporter.
#[derive(Debug)]
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Tracing {
    /// Tracing as configured: `None` when `KAIROS_OTLP_ENDPOINT` is unset. Installs the
    /// provider as OpenTelemetry's global one (the engine's firing spans are made through it).
    /// Must be called within the Tokio runtime, which carries the exports.
    pub fn from_config(cfg: &Config) -> Result<Option<Tracing>, NodeError> {
        let Some(url) = cfg.otlp_traces_url()? else {
            return Ok(None);
        };
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| NodeError::runtime("tracing needs the Tokio runtime", &e))?;
        // reqwest is built without a TLS provider of its own: building a client without the
        // process-wide one panics. Installing fails harmlessly when it is already there.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // The standard variables win over what kairos would set: the signal's own endpoint
        // (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as given) over `KAIROS_OTLP_ENDPOINT`,
        // and the export timeout (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `…_OTLP_TIMEOUT`, in
        // ms) over the 10 s default. The exporter reads them itself when the code sets none.
        let traces_endpoint = env_set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let timeout = export_timeout();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .build()
            .map_err(|e| NodeError::runtime("building the OTLP exporter's HTTP client", &e))?;
        let mut builder = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(timeout);
        if !traces_endpoint {
            builder = builder.with_endpoint(url);
        }
        let exporter = builder
            .with_http_client(OnRuntime { client, runtime })
            .build()
            .map_err(|e| {
                NodeError::runtime("building the OTLP exporter (KAIROS_OTLP_ENDPOINT)", &e)
            })?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .with_id_generator(FiringIds::default())
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        Ok(Some(Tracing { provider }))
    }

    /// The layer that turns kairos's spans ([`TRACE_TARGET`]) into OpenTelemetry spans; it
    /// sees nothing else, so no log event becomes a span event.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("kairos"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(TRACE_TARGET, LevelFilter::TRACE))
    }

    /// Keep kairos's spans out of a log filter (whatever `RUST_LOG` says), so that the log
    /// lines do not change with tracing and, with tracing off, the spans are never built.
    pub fn hide_from_logs(filter: tracing_subscriber::EnvFilter) -> tracing_subscriber::EnvFilter {
        match format!("{TRACE_TARGET}=off").parse() {
            Ok(d) => filter.add_directive(d),
            Err(_) => filter,
        }
    }

    /// Export what is still queued and stop the exporter. Called once the node has stopped,
    /// so the last attempts' spans are not lost.
    pub async fn shutdown(self) {
        let provider = self.provider;
        // The provider's shutdown blocks until its batch thread has exported, and that export
        // runs on this runtime: block a thread of the blocking pool, not a worker.
        match tokio::task::spawn_blocking(move || provider.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "flushing the last spans failed"),
            Err(e) => tracing::warn!(error = %e, "flushing the last spans failed"),
        }
    }
}

/// Random ids, except for the span the engine is starting as a schedule firing: that one takes
/// the ids derived from its schedule and firing time, which the attempts of the firing's jobs
/// link to (see [`kairos_engine::telemetry::spans`]).
#[derive(Debug, Default)]
struct FiringIds(RandomIdGenerator);

impl IdGenerator for FiringIds {
    fn new_trace_id(&self) -> TraceId {
        match kairos_engine::telemetry::spans::pinned_ids() {
            Some((trace, _)) => trace,
            None => self.0.new_trace_id(),
        }
    }

    fn new_span_id(&self) -> SpanId {
        match kairos_engine::telemetry::spans::pinned_ids() {
            Some((_, span)) => span,
            None => self.0.new_span_id(),
        }
    }
}

/// The resource: from `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`, with the service
/// named `kairos` when they do not name it (instead of the SDK's `unknown_service:…`).
fn resource() -> Resource {
    let from_env = Resource::builder().build();
    let named = from_env
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|v| !v.as_str().starts_with("unknown_service"));
    if named {
        from_env
    } else {
        Resource::builder()
            .with_service_name(DEFAULT_SERVICE_NAME)
            .build()
    }
}

/// The exporter's HTTP client: reqwest, each request run on the Tokio runtime. The SDK's batch
/// processor exports from its own thread with a plain executor, where reqwest (which needs a
/// Tokio reactor) would fail.
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await
            .map_err(|e| Box::new(e) as HttpError)?
    }
}
