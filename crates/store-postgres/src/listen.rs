//! Wake-ups across nodes: `LISTEN kairos_jobs`.
//!
//! Inserting jobs notifies the `kairos_jobs` channel with the schema as payload (see
//! `INSERT_MANY`). [`listen_wakeups`] holds a dedicated connection listening on that channel
//! and notifies the engine's wake-up [`Notify`] for each notification of our schema, so a job
//! enqueued on one node starts on any other at once instead of at its next poll. Polling stays
//! the fallback: a notification lost while the connection was down is covered by a wake-up
//! after each reconnect and by the engine's poll interval.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The channel job inserts notify.
pub const JOBS_CHANNEL: &str = "kairos_jobs";

/// The first wait before reconnecting after the connection failed; doubled up to
/// [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between reconnects.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Listen on [`JOBS_CHANNEL`] on a dedicated connection to `url` until `cancel`, and call
/// `wake.notify_one()` for every notification whose payload is `schema` (other schemas of the
/// same database are other deployments). When the connection is lost it reconnects with
/// exponential backoff (250 ms up to 10 s), and wakes once after reconnecting since a
/// notification may have been missed meanwhile. Errors are logged, never returned.
pub async fn listen_wakeups(
    url: String,
    schema: String,
    wake: Arc<Notify>,
    cancel: CancellationToken,
) {
    let mut backoff = MIN_BACKOFF;
    let mut reconnecting = false;
    loop {
        let connected = tokio::select! {
            _ = cancel.cancelled() => return,
            r = connect(&url) => r,
        };
        match connected {
            Ok(mut listener) => {
                tracing::debug!(channel = JOBS_CHANNEL, "listening for job notifications");
                if reconnecting {
                    tracing::info!("job notifications: reconnected");
                    wake.notify_one();
                }
                backoff = MIN_BACKOFF;
                loop {
                    let got = tokio::select! {
                        _ = cancel.cancelled() => return,
                        r = listener.try_recv() => r,
                    };
                    match got {
                        Ok(Some(n)) => {
                            if n.payload() == schema {
                                wake.notify_one();
                            }
                        }
                        // The connection was lost and re-established by the listener
                        // (it re-issues LISTEN): something may have been missed.
                        Ok(None) => wake.notify_one(),
                        Err(e) => {
                            tracing::warn!(error = %e, "job notifications: connection failed; polling until it is back");
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "job notifications: cannot listen; polling until it works");
            }
        }
        reconnecting = true;
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn connect(url: &str) -> Result<sqlx::postgres::PgListener, sqlx::Error> {
    let mut l = sqlx::postgres::PgListener::connect(url).await?;
    l.listen(JOBS_CHANNEL).await?;
    Ok(l)
}
