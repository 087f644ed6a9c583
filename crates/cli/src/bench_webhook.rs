//! `kairos bench --webhook`: the jobs are real `webhook` jobs, sent by the real webhook handler
//! (endpoint read from the store, Standard Webhooks signing, the SSRF-guarded HTTP client)
//! through the normal executor, to a receiver in the same process on 127.0.0.1 that checks
//! every signature with [`kairos_channels::signing::verify`].
//!
//! Private targets are allowed only on the sender built here, whose one endpoint is the
//! bench's own receiver; the server's setting (`KAIROS_ALLOW_PRIVATE_TARGETS`) is not read.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use kairos_channels::signing::{WebhookSecret, verify};
use kairos_channels::{WebhookConfig, WebhookSender};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, Failure};
use kairos_engine::Handler;
use kairos_engine::kinds::webhook::handler::WebhookHandler;
use kairos_store::EndpointUpsert;
use kairos_store::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// How far a signature's timestamp may be from the receiver's clock.
const TOLERANCE_SECS: i64 = 300;

/// What the receiver counted.
#[derive(Default)]
pub struct Counts {
    /// Requests whose signature verified.
    pub verified: AtomicU64,
    /// Requests refused: missing headers or a signature that did not verify.
    pub rejected: AtomicU64,
}

struct Receiver {
    secret: WebhookSecret,
    clock: Arc<dyn Clock>,
    counts: Arc<Counts>,
}

/// The bench's endpoint, its receiver and the handler that sends to it.
pub struct Hook {
    /// The endpoint's id (set on every job).
    pub endpoint_id: String,
    /// The real webhook handler, allowed to reach the receiver on 127.0.0.1.
    pub handler: Arc<dyn Handler>,
    /// The receiver's counts.
    pub counts: Arc<Counts>,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<()>,
}

impl Hook {
    /// Start the receiver on 127.0.0.1 (port chosen by the system), store its endpoint with a
    /// fresh secret, and build the handler.
    pub async fn start(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Hook, Box<dyn std::error::Error>> {
        let mut random = [0u8; 32];
        random[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        random[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        let secret = WebhookSecret::generate(random);
        let (addr, counts, stop, server) = serve_receiver(secret.clone(), clock.clone()).await?;
        let now = clock.now();
        let ep = store
            .endpoint_upsert(EndpointUpsert {
                id: new_id(IdPrefix::Endpoint, now),
                url: format!("http://{addr}/hook"),
                secret: secret.expose_whsec(),
                now,
            })
            .await?;
        let sender = WebhookSender::new(WebhookConfig {
            allow_private_targets: true,
            ..WebhookConfig::default()
        })?;
        let handler: Arc<dyn Handler> = Arc::new(WebhookHandler::new(store, clock, sender));
        Ok(Hook {
            endpoint_id: ep.id,
            handler,
            counts,
            stop,
            server,
        })
    }

    /// Stop the receiver.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.server.await;
    }
}

/// Start the receiver for `secret` on 127.0.0.1 (port chosen by the system).
async fn serve_receiver(
    secret: WebhookSecret,
    clock: Arc<dyn Clock>,
) -> std::io::Result<(
    std::net::SocketAddr,
    Arc<Counts>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
)> {
    let counts = Arc::new(Counts::default());
    let state = Arc::new(Receiver {
        secret,
        clock,
        counts: counts.clone(),
    });
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let server = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let serve = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await });
            if let Err(e) = serve.await {
                eprintln!("warning: the bench receiver stopped: {e}");
            }
        })
    };
    Ok((addr, counts, stop, server))
}

/// Check one delivery's signature: 204 if it verifies, 400 otherwise.
async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ok = match (
        header("webhook-id"),
        header("webhook-timestamp").and_then(|t| t.parse::<i64>().ok()),
        header("webhook-signature"),
    ) {
        (Some(id), Some(ts), Some(sig)) => verify(
            std::slice::from_ref(&r.secret),
            id,
            ts,
            &body,
            sig,
            r.clock.now().timestamp(),
            TOLERANCE_SECS,
        )
        .is_ok(),
        _ => false,
    };
    if ok {
        r.counts.verified.fetch_add(1, Ordering::Relaxed);
        StatusCode::NO_CONTENT
    } else {
        r.counts.rejected.fetch_add(1, Ordering::Relaxed);
        StatusCode::BAD_REQUEST
    }
}

/// A failed delivery's message, for the bench's error.
pub fn describe(f: &Failure) -> String {
    match f.status_code {
        Some(code) => format!("HTTP {code}: {}", f.message),
        None => f.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_channels::signing::sign;
    use kairos_core::SystemClock;

    /// The receiver counts a delivery only when its signature verifies with the endpoint's
    /// secret: a message signed with another key is refused and counted as rejected.
    #[tokio::test]
    async fn receiver_verifies_every_signature() {
        kairos_testkit::init_crypto();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let secret = WebhookSecret::generate([3; 32]);
        let (addr, counts, stop, server) =
            serve_receiver(secret.clone(), clock.clone()).await.unwrap();
        let client = reqwest::Client::new();
        let ts = clock.now().timestamp();
        let body = br#"{"id":"job_1"}"#;
        let post = |key: &WebhookSecret| {
            client
                .post(format!("http://{addr}/hook"))
                .header("webhook-id", "job_1")
                .header("webhook-timestamp", ts.to_string())
                .header("webhook-signature", sign(key, "job_1", ts, body))
                .body(body.to_vec())
                .send()
        };
        assert_eq!(post(&secret).await.unwrap().status().as_u16(), 204);
        let other = WebhookSecret::generate([4; 32]);
        assert_eq!(post(&other).await.unwrap().status().as_u16(), 400);
        let unsigned = client
            .post(format!("http://{addr}/hook"))
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(unsigned.status().as_u16(), 400);
        assert_eq!(counts.verified.load(Ordering::Relaxed), 1);
        assert_eq!(counts.rejected.load(Ordering::Relaxed), 2);
        stop.cancel();
        server.await.unwrap();
    }
}
