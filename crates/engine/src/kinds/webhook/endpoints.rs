//! Endpoint reads shared by concurrent deliveries (single flight).
//!
//! A claim hands hundreds of jobs to the handlers at once, and a fan-out sends most of them to
//! the same endpoint: each delivery read the same endpoint row from the store at the same
//! moment, and on SQLite those reads cost about as much as the HTTP requests themselves
//! (`docs/benchmarks.md`). Here a delivery that needs an endpoint whose read is already in
//! flight waits for that read instead of starting its own.
//!
//! Nothing is cached: once a read has finished, the next delivery reads again. A delivery
//! therefore sees the endpoint as the store held it no earlier than the start of a read that
//! was under way when the delivery asked — a disable, a rotation or a new URL applies to every
//! delivery that asks after its commit, except those that join a read started just before it
//! (a primary-key read: well under a millisecond, a few under load). With one read per
//! delivery the same change missed deliveries that had read just before the commit; the
//! window is that of one read either way.

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kairos_store::{Endpoint, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A read's result; the error as its message (the caller reports it as a transient failure).
pub(crate) type Read = Result<Option<Endpoint>, String>;

type Flight = Shared<BoxFuture<'static, Read>>;

/// Endpoints read from one store, with the reads in flight by endpoint id. Cheap to clone
/// (shared).
#[derive(Clone)]
pub(crate) struct EndpointReads {
    store: Arc<dyn Store>,
    flights: Arc<Mutex<HashMap<String, Flight>>>,
    /// Reads started (for tests).
    #[cfg(test)]
    started: Arc<std::sync::atomic::AtomicUsize>,
}

impl EndpointReads {
    /// Reads of endpoints in `store`.
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        EndpointReads {
            store,
            flights: Arc::default(),
            #[cfg(test)]
            started: Arc::default(),
        }
    }

    /// The store the endpoints are read from (for the delivery's other writes).
    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Endpoint `id`: joins the read of `id` in flight, or starts one.
    pub(crate) async fn get(&self, id: &str) -> Read {
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            match flights.get(id) {
                // A read under way is joined; a finished one (its waiters not yet woken to
                // retire it) is not: its answer may predate this delivery by more than a read.
                Some(f) if f.peek().is_none() => f.clone(),
                _ => {
                    #[cfg(test)]
                    self.started
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let (store, key) = (self.store.clone(), id.to_string());
                    let f =
                        async move { store.endpoint_get(&key).await.map_err(|e| e.to_string()) }
                            .boxed()
                            .shared();
                    flights.insert(id.to_string(), f.clone());
                    f
                }
            }
        };
        // Whoever finishes first retires the flight: later deliveries read anew. (If every
        // waiter is cancelled first, the flight stays until the next delivery to this endpoint
        // polls it to its end and retires it.)
        let _retire = Retire {
            flights: &self.flights,
            id,
            flight: &flight,
        };
        flight.clone().await
    }

    /// Reads in flight now (for tests).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.flights.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Removes its flight from the map when dropped, if the flight has finished and is still the
/// one registered for its id.
struct Retire<'a> {
    flights: &'a Mutex<HashMap<String, Flight>>,
    id: &'a str,
    flight: &'a Flight,
}

impl Drop for Retire<'_> {
    fn drop(&mut self) {
        if self.flight.peek().is_none() {
            return;
        }
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        if flights.get(self.id).is_some_and(|f| f.ptr_eq(self.flight)) {
            flights.remove(self.id);
        }
    }
}

#[cfg(test)]
#[path = "endpoints_tests.rs"]
mod tests;
