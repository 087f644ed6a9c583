//! The capturing webhook sink.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The largest request body recorded (larger bodies are recorded as empty).
const MAX_BODY: usize = 16 << 20;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// The HTTP method (`POST`).
    pub method: String,
    /// The request path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Headers by lowercased name; repeated headers are joined with `", "`.
    pub headers: HashMap<String, String>,
    /// The raw body.
    pub body: Vec<u8>,
    /// When the request arrived (its body read, before any scripted delay).
    pub at: Instant,
}

impl Received {
    /// A header's value by name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status (an invalid one is answered as 500).
    pub status: u16,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// The response body.
    pub body: String,
    /// How long to wait before answering (to provoke client timeouts).
    pub delay: Duration,
}

impl Default for Reply {
    /// `200` with `{"ok":true}`.
    fn default() -> Self {
        Reply::status(200).with_body(r#"{"ok":true}"#)
    }
}

impl Reply {
    /// A reply with `status`, no headers, an empty body, no delay.
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: String::new(),
            delay: Duration::ZERO,
        }
    }
    /// The default `200 {"ok":true}`.
    pub fn ok() -> Self {
        Reply::default()
    }
    /// Add a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
    /// Set the body.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }
    /// Wait this long before answering.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    plan: VecDeque<Reply>,
    default: Reply,
}

struct Shared {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock must not hide the data from others.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A capturing webhook sink: an HTTP server on `127.0.0.1:<random port>` that records every
/// request (any method, any path) and answers from a plan of [`Reply`]s, consumed in order,
/// then the default reply (`200 {"ok":true}` unless changed). The server stops when the
/// receiver is dropped.
pub struct TestReceiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for TestReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestReceiver")
            .field("addr", &self.addr)
            .field("count", &self.count())
            .finish()
    }
}

impl TestReceiver {
    /// Start a receiver on `127.0.0.1:0`. Panics if no port can be bound (a test set-up error).
    pub async fn start() -> Self {
        Self::try_start()
            .await
            .expect("TestReceiver: bind 127.0.0.1:0")
    }

    /// Start a receiver on `127.0.0.1:0`, returning bind errors.
    pub async fn try_start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            notify: Notify::new(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(TestReceiver { addr, shared, task })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port><path>`; `path` should start with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    /// The most recent request.
    pub fn last(&self) -> Option<Received> {
        self.shared.lock().received.last().cloned()
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        self.shared.lock().received.len()
    }

    /// How many times each `webhook-id` was seen (a value above 1 is a duplicate delivery).
    pub fn ids_seen(&self) -> HashMap<String, usize> {
        let mut seen = HashMap::new();
        for r in &self.shared.lock().received {
            if let Some(id) = r.header("webhook-id") {
                *seen.entry(id.to_string()).or_insert(0) += 1;
            }
        }
        seen
    }

    /// Wait until at least `n` requests have arrived, or `timeout` passes. Returns whether
    /// `n` were reached. Wakes on each arrival (no polling).
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.notify.notified();
            tokio::pin!(notified);
            // Register before checking, so an arrival between the check and the wait is seen.
            notified.as_mut().enable();
            if self.count() >= n {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.count() >= n;
            }
        }
    }

    /// Answer the next requests with `replies`, in order (appended to any still pending).
    pub fn respond_with(&self, replies: Vec<Reply>) {
        self.shared.lock().plan.extend(replies);
    }

    /// The reply used once the plan is exhausted.
    pub fn set_default(&self, reply: Reply) {
        self.shared.lock().default = reply;
    }

    /// Forget recorded requests and pending replies (the default reply stays).
    pub fn reset(&self) {
        let mut inner = self.shared.lock();
        inner.received.clear();
        inner.plan.clear();
    }
}

impl Drop for TestReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    let mut headers: HashMap<String, String> = HashMap::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let received = Received {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers,
        body,
        at: Instant::now(),
    };
    let reply = {
        let mut inner = shared.lock();
        inner.received.push(received);
        match inner.plan.pop_front() {
            Some(r) => r,
            None => inner.default.clone(),
        }
    };
    shared.notify.notify_waiters();
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = Response::new(Body::from(reply.body));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in reply.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(n, v);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A minimal HTTP/1.1 client so the testkit's own tests need no HTTP client crate.
    async fn post(addr: SocketAddr, path: &str, id: &str, body: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\nWebhook-Id: {id}\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn records_requests_and_follows_the_plan() {
        let rx = TestReceiver::start().await;
        rx.respond_with(vec![
            Reply::status(503)
                .with_header("Retry-After", "7")
                .with_body("busy"),
        ]);
        let first = post(rx.addr(), "/a?x=1", "msg_1", "one").await;
        assert!(first.starts_with("HTTP/1.1 503"), "{first}");
        assert!(
            first.to_ascii_lowercase().contains("retry-after: 7"),
            "{first}"
        );
        let second = post(rx.addr(), "/b", "msg_1", "two").await;
        assert!(second.starts_with("HTTP/1.1 200") && second.ends_with(r#"{"ok":true}"#));
        rx.set_default(Reply::status(204));
        let third = post(rx.addr(), "/c", "msg_2", "").await;
        assert!(third.starts_with("HTTP/1.1 204"), "{third}");

        let got = rx.received();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].path, "/a");
        assert_eq!(got[0].query.as_deref(), Some("x=1"));
        assert_eq!(got[0].method, "POST");
        assert_eq!(got[0].body, b"one");
        assert_eq!(
            got[0].headers.get("webhook-id").map(String::as_str),
            Some("msg_1")
        );
        assert_eq!(got[1].header("Webhook-ID"), Some("msg_1"));
        assert!(got[0].at <= got[1].at);
        assert_eq!(
            rx.ids_seen(),
            HashMap::from([("msg_1".into(), 2), ("msg_2".into(), 1)])
        );
        assert_eq!(rx.url("/x"), format!("http://{}/x", rx.addr()));
    }

    #[tokio::test]
    async fn wait_for_wakes_on_arrival_and_times_out() {
        let rx = TestReceiver::start().await;
        assert!(!rx.wait_for(1, Duration::from_millis(50)).await);
        let addr = rx.addr();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            post(addr, "/", "a", "").await;
            post(addr, "/", "b", "").await;
        });
        let started = Instant::now();
        assert!(rx.wait_for(2, Duration::from_secs(10)).await);
        assert!(started.elapsed() < Duration::from_secs(5));
        sender.await.unwrap();
        assert!(rx.wait_for(0, Duration::ZERO).await);
        rx.reset();
        assert_eq!(rx.count(), 0);
    }

    #[tokio::test]
    async fn delayed_reply_is_recorded_before_the_delay() {
        let rx = TestReceiver::start().await;
        rx.respond_with(vec![Reply::ok().with_delay(Duration::from_secs(30))]);
        let addr = rx.addr();
        let slow = tokio::spawn(async move { post(addr, "/slow", "s", "").await });
        assert!(rx.wait_for(1, Duration::from_secs(5)).await);
        slow.abort();
    }
}
