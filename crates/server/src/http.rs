//! The HTTP server: axum's router on hyper's HTTP/1.1 connections, with the limits a public
//! endpoint needs (`/hooks/*` and `/unsubscribe` take requests from anyone):
//!
//! - **header timeout** ([`HttpLimits::header_timeout`]): a connection must send a whole
//!   request head within it, counted from when the server starts waiting for one, so a client
//!   that sends its headers a byte a second, or an idle keep-alive connection, is closed;
//! - **body timeout** ([`HttpLimits::body_timeout`]): the whole body must arrive within it,
//!   counted from the end of the head (not per chunk: a body sent a byte a second never
//!   stops a per-chunk timer); the answer is 408 and the connection is closed;
//! - **request timeout** ([`HttpLimits::request_timeout`]): the whole request, handler
//!   included, within it, else 408;
//! - **connections** ([`HttpLimits::max_connections`]): at most this many open at once; past
//!   it the server stops accepting (the kernel queues the rest) until one closes, and the
//!   slot a connection frees goes to the next client waiting in that queue;
//! - **connections per source** ([`HttpLimits::max_connections_per_source`], default a quarter
//!   of the total): a connection from an address that already holds this many is answered
//!   503 with `Retry-After: 1` and closed at once, so one address cannot take every slot
//!   (IPv6 addresses count per /64, as the login backoff does);
//! - **connection age** ([`HttpLimits::max_connection_age`]): a connection open this long is
//!   closed after its current request (a client that keeps one busy with a request every few
//!   seconds, which no timeout catches, gives its slot back; a normal client reconnects);
//! - **requests** ([`HttpLimits::max_requests`]): at most this many in progress at once; past
//!   it a request is answered 503 with `Retry-After: 1` at once.
//!
//! Every request also carries its peer address ([`axum::extract::ConnectInfo`]), which the
//! admin login backoff counts by.

use crate::problem::Problem;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

pub use kairos_app::config::HttpLimits;

/// The key a source address counts under: IPv4 (also when IPv4-mapped) as is, IPv6 by its
/// /64 (one host usually owns the whole prefix). Shared by the connection cap and the
/// login and bearer-token backoff.
pub fn source_key(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let mut seg = v6.segments();
            seg[4..].fill(0);
            IpAddr::V6(seg.into())
        }
        v4 => v4,
    }
}

/// Open connections per source key.
type Sources = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// One open connection counted against its source; gives the count back when dropped.
struct SourceSlot {
    sources: Sources,
    key: IpAddr,
}

impl SourceSlot {
    /// Count a connection from `key`, unless it already holds `cap`.
    fn take(sources: &Sources, key: IpAddr, cap: usize) -> Option<SourceSlot> {
        let mut map = sources.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(key).or_insert(0);
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(SourceSlot {
            sources: sources.clone(),
            key,
        })
    }
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut map = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// What a connection past its source's cap is sent before it is closed.
const SOURCE_FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: 47\r\n\r\ntoo many connections from your address; retry\r\n";

#[derive(Debug)]
struct Guard {
    limits: HttpLimits,
    requests: Arc<Semaphore>,
}

/// Serve `app` on `listener` with `limits` until `shutdown` completes; then stop accepting,
/// let open requests finish, close idle connections, and return once every connection is
/// closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max_conns = limits.max_connections.clamp(1, u32::MAX as usize);
    let guard = Arc::new(Guard {
        limits,
        requests: Arc::new(Semaphore::new(
            limits.max_requests.clamp(1, Semaphore::MAX_PERMITS),
        )),
    });
    let app = app.layer(axum::middleware::from_fn_with_state(guard, limit));
    let conns = Arc::new(Semaphore::new(max_conns));
    let per_source = limits.per_source();
    let sources: Sources = Arc::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = conns.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, keep serving.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Some(slot) = SourceSlot::take(&sources, source_key(peer.ip()), per_source) else {
            // Best effort, without waiting: a full send buffer just drops the answer.
            let _ = stream.try_write(SOURCE_FULL);
            tracing::debug!(%peer, "connection refused: too many from this source");
            drop(permit);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(peer));
                    app.clone().oneshot(req.map(Body::new))
                },
            );
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), svc));
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "connection closed with an error");
                    }
                }
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
                _ = tokio::time::sleep(limits.max_connection_age) => {
                    // Old enough: finish the request in progress (bounded by the request
                    // timeout), then close.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection gives its permit back when it closes.
    let _ = conns.acquire_many(max_conns as u32).await;
    Ok(())
}

/// A 408 problem that also closes the connection.
fn timed_out(detail: &str) -> Response {
    let mut res = Problem::new(
        StatusCode::REQUEST_TIMEOUT,
        "request-timeout",
        "Request timeout",
        detail,
    )
    .into_response();
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// The per-request limits: the request cap, the body deadline, the request deadline.
async fn limit(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let Ok(_permit) = guard.requests.clone().try_acquire_owned() else {
        let mut res = Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "Server busy",
            "too many requests are in progress; retry in a moment",
        )
        .into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return res;
    };
    let expired = Arc::new(AtomicBool::new(false));
    let req = req.map(|body| {
        Body::new(DeadlineBody {
            inner: body,
            deadline: Box::pin(tokio::time::sleep(guard.limits.body_timeout)),
            expired: expired.clone(),
        })
    });
    match tokio::time::timeout(guard.limits.request_timeout, next.run(req)).await {
        Ok(_) if expired.load(Ordering::Acquire) => {
            timed_out("the request body did not arrive in time")
        }
        Ok(res) => res,
        Err(_) => timed_out("the request took too long"),
    }
}

/// A request body that fails once its deadline passes, however it trickles in.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
}

/// The body deadline passed.
#[derive(Debug)]
struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimeout {}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(Box::new(BodyTimeout))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
