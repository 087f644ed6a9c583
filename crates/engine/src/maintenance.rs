//! Maintenance mode: the engine stops claiming (executor and scheduler) and the API
//! answers `/v1/*` with 503, while inbound webhooks, `/unsubscribe` and `/healthz` keep
//! working and inbound events are stored.
//!
//! It is on when forced by configuration (`KAIROS_MAINTENANCE=1`) or when the `maintenance`
//! setting is stored in the database (`kairos maintenance on`), so every node sharing the
//! database — and a server running while the CLI switches it — follows. Each node keeps the
//! stored value in an atomic flag that [`Maintenance::watch`] (a [`Service`]) refreshes every
//! poll interval
//! and [`Kairos::maintenance_set`](crate::Kairos::maintenance_set) updates at once; the hot
//! paths (a claim, an API request) read only the flag.

use crate::service::{Runner, Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_store::{SETTING_MAINTENANCE, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The maintenance flag of one node. Cheap to clone; clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Maintenance {
    forced: bool,
    stored: Arc<AtomicBool>,
}

impl Maintenance {
    /// A flag, on for good if `forced` (the `KAIROS_MAINTENANCE` setting).
    pub fn new(forced: bool) -> Self {
        Maintenance {
            forced,
            stored: Arc::default(),
        }
    }

    /// Whether the node is in maintenance mode now.
    pub fn is_on(&self) -> bool {
        self.forced || self.stored.load(Ordering::Relaxed)
    }

    /// Whether configuration forces it on (then `kairos maintenance off` cannot end it).
    pub fn forced(&self) -> bool {
        self.forced
    }

    /// Whether the database says it is on (as last read or set by this node).
    pub fn stored(&self) -> bool {
        self.stored.load(Ordering::Relaxed)
    }

    /// Record the stored value (after writing or reading it).
    pub fn set_stored(&self, on: bool) {
        let was = self.stored.swap(on, Ordering::Relaxed);
        if was != on {
            tracing::warn!(maintenance = on, "maintenance mode changed");
        }
    }

    /// Read the stored setting into the flag; the new value of [`is_on`](Self::is_on).
    pub async fn refresh(&self, store: &dyn Store) -> Result<bool, kairos_store::Error> {
        let on = store
            .setting_get(SETTING_MAINTENANCE)
            .await?
            .is_some_and(|s| s.value == "on");
        self.set_stored(on);
        Ok(self.is_on())
    }

    /// Refresh every `every` until `cancel`, on the node's `clock`. A failed read keeps the
    /// last value (a database hiccup neither starts nor ends maintenance); the [`Runner`] logs
    /// it and backs off.
    pub async fn watch(
        self,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        every: Duration,
        cancel: CancellationToken,
    ) {
        let watch = Watch {
            flag: self,
            store,
            cfg: WatchConfig {
                every: every.max(Duration::from_millis(10)),
            },
        };
        Runner::new(clock).run(&watch, cancel).await
    }
}

/// Settings of [`Watch`].
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// How often the stored setting is read. Default 1 s.
    pub every: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            every: Duration::from_secs(1),
        }
    }
}

impl ServiceConfig for WatchConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        if self.every.is_zero() {
            return Err(kairos_core::Error::invalid(
                "maintenance.every",
                "must be more than 0",
            ));
        }
        Ok(())
    }
}

/// The service that keeps a node's [`Maintenance`] flag in step with the database.
struct Watch {
    flag: Maintenance,
    store: Arc<dyn Store>,
    cfg: WatchConfig,
}

#[async_trait]
impl Service for Watch {
    type Report = bool;
    type Config = WatchConfig;
    fn name(&self) -> &'static str {
        "maintenance"
    }
    fn config(&self) -> &WatchConfig {
        &self.cfg
    }
    fn interval(&self) -> Duration {
        self.cfg.every
    }
    async fn run_once(&self, _now: DateTime<Utc>) -> Result<bool, kairos_store::Error> {
        self.flag.refresh(self.store.as_ref()).await
    }
}
