//! The executor's helpers beside its claim loop: the completer, which records outcomes in
//! batches, and the renewer, which keeps the leases of running jobs.

use super::Executor;
use super::attempt::to_chrono;
use kairos_store::{JobComplete, JobLeaseRenew, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;

/// Records completions in batches: whatever has arrived while the last batch was written,
/// and what arrives within `delay` of the first (up to `max`), goes into the next
/// transaction (group commit). Up to `parallel` batches are written at once, each on its own
/// connection: a batch's round trip is mostly waiting (for the network and the commit's
/// flush), and with one batch in flight a handful of fast handlers wait on it. The jobs'
/// permits are released once their batch is written (or given up on), and `freed` is told.
pub(super) async fn completer(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<(JobComplete, Vec<OwnedSemaphorePermit>)>,
    (max, delay, parallel): (usize, Duration, usize),
    running: Arc<Mutex<HashMap<String, String>>>,
    freed: Arc<Notify>,
) {
    let parallel = parallel.max(1);
    let mut writes = tokio::task::JoinSet::new();
    loop {
        if writes.len() >= parallel {
            // Every writer is busy: what arrives meanwhile joins the next batch.
            let _ = writes.join_next().await;
            continue;
        }
        let mut batch = Vec::with_capacity(max);
        let got = tokio::select! {
            n = rx.recv_many(&mut batch, max) => n,
            Some(_) = writes.join_next(), if !writes.is_empty() => continue,
        };
        if got == 0 {
            break;
        }
        if batch.len() < max && !delay.is_zero() {
            let until = tokio::time::Instant::now() + delay;
            while batch.len() < max {
                let left = max - batch.len();
                let more = rx.recv_many(&mut batch, left);
                match tokio::time::timeout_at(until, more).await {
                    Ok(n) if n > 0 => {}
                    _ => break,
                }
            }
        }
        writes.spawn(write(store.clone(), batch, running.clone(), freed.clone()));
    }
    while writes.join_next().await.is_some() {}
}

/// Write one batch of completions, retrying a failed write for a while; then forget the jobs'
/// leases and free their permits.
async fn write(
    store: Arc<dyn Store>,
    batch: Vec<(JobComplete, Vec<OwnedSemaphorePermit>)>,
    running: Arc<Mutex<HashMap<String, String>>>,
    freed: Arc<Notify>,
) {
    // The permits are held until the outcomes are written (dropped at the end).
    let (completions, permits): (Vec<JobComplete>, Vec<_>) = batch.into_iter().unzip();
    let mut tries = 0;
    loop {
        match store.job_complete_many(completions.clone()).await {
            Ok(r) => {
                if !r.stale.is_empty() {
                    tracing::warn!(
                        count = r.stale.len(),
                        "completions refused: another node holds these jobs now"
                    );
                }
                break;
            }
            Err(e) if tries < 20 => {
                tries += 1;
                tracing::error!(error = %e, tries, "recording outcomes failed; retrying");
                tokio::time::sleep(Duration::from_millis(100 * tries)).await;
            }
            Err(e) => {
                // Give up on this batch: the leases will expire and the jobs run again.
                tracing::error!(error = %e, count = completions.len(), "could not record outcomes; leases will return the jobs");
                break;
            }
        }
    }
    let mut r = running.lock().unwrap_or_else(|e| e.into_inner());
    for c in &completions {
        r.remove(&c.id);
    }
    drop(r);
    // Frees the permits.
    drop(permits);
    freed.notify_one();
}

/// Renews the leases of running jobs so that a long job is not taken over while it runs.
pub(super) async fn renewer(
    exec: Executor,
    running: Arc<Mutex<HashMap<String, String>>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(exec.cfg.renew_every) => {}
        }
        let jobs: Vec<(String, String)> = {
            let r = running.lock().unwrap_or_else(|e| e.into_inner());
            r.iter().map(|(a, b)| (a.clone(), b.clone())).collect()
        };
        if jobs.is_empty() {
            continue;
        }
        let lease_until = exec.clock.now() + to_chrono(exec.cfg.lease);
        if let Err(e) = exec
            .store
            .job_lease_renew(JobLeaseRenew { jobs, lease_until })
            .await
        {
            tracing::error!(error = %e, "renewing leases failed");
        }
    }
}
