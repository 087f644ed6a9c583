//! # kairos-testkit
//!
//! Helpers shared by kairos test suites.
//!
//! - [`TestReceiver`]: a capturing webhook sink — a real HTTP server on `127.0.0.1:0` that
//!   records every request and answers from a scriptable plan of [`Reply`]s. Because it is
//!   plain HTTP it works equally for code under test in the same process or in a spawned
//!   server binary.
//! - [`verify_standard_webhook`]: an independent implementation of the Standard Webhooks
//!   signature check, written directly with `hmac`/`sha2`/`base64`, so that tests check the
//!   code under test against something other than itself.
//! - [`init_crypto`]: installs the rustls `ring` provider once.
//! - [`webdriver::Browser`]: headless chromium under chromedriver, driven by `fantoccini`, for
//!   the admin UI's browser test.
//! - [`smtp::SmtpSink`]: a real SMTP server (Python's aiosmtpd) saving what it receives.
//! - [`refused_url`]: a URL on which nothing listens (connection refused).
//! - [`pg`]: the PostgreSQL test server, loud skips, and a fresh schema per test.
#![deny(missing_docs)]

pub mod pg;
mod receiver;
pub mod smtp;
pub mod webdriver;
mod webhook;

pub use receiver::{Received, Reply, TestReceiver};
pub use webhook::verify_standard_webhook;

/// Install the rustls `ring` crypto provider for the process, once. reqwest is built without a
/// provider, and building a client panics until one is installed.
pub fn init_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A `http://127.0.0.1:<port><path>` URL on which nothing listens: a port is bound, then the
/// listener dropped, so connecting is refused (unless another process grabs the port meanwhile,
/// which is unlikely within a test).
pub async fn refused_url(path: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    drop(listener);
    format!("http://{addr}{path}")
}
