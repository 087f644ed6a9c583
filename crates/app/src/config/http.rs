//! The HTTP server's limits, as settings (`KAIROS_HTTP_…`); the server enforces them.

use std::time::Duration;

/// The HTTP server's limits (`kairos-server`'s `http` module explains each); [`Default`] is what `kairos serve` uses unless
/// configured (`KAIROS_HTTP_…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Longest wait for a whole request head (default 10 s).
    pub header_timeout: Duration,
    /// Longest wait for a whole request body after its head (default 15 s).
    pub body_timeout: Duration,
    /// Longest time for a whole request, handler included (default 30 s).
    pub request_timeout: Duration,
    /// Most connections open at once (default 1024).
    pub max_connections: usize,
    /// Most connections open at once from one source address (IPv6: one /64); `None`: a
    /// quarter of [`HttpLimits::max_connections`] (at least 1).
    pub max_connections_per_source: Option<usize>,
    /// Longest a connection is kept open (default 60 s): then it is closed after its
    /// current request.
    pub max_connection_age: Duration,
    /// Most requests in progress at once (default 512).
    pub max_requests: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(15),
            request_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_connections_per_source: None,
            max_connection_age: Duration::from_secs(60),
            max_requests: 512,
        }
    }
}

impl HttpLimits {
    /// The connections one source may hold: [`HttpLimits::max_connections_per_source`], or a
    /// quarter of the total; at least 1 and at most the total.
    pub fn per_source(&self) -> usize {
        let total = self.max_connections.max(1);
        self.max_connections_per_source
            .unwrap_or(total / 4)
            .clamp(1, total)
    }
}
