//! # kairos-channels
//!
//! The channels through which kairos jobs reach the outside world. Each channel turns one job
//! into one [`Outcome`](kairos_core::Outcome): a send never panics and never returns a Rust
//! error; every problem becomes an `Outcome::Failed` with an
//! [`ErrorClass`](kairos_core::ErrorClass) that the retry policy understands.
//!
//! - [`signing`]: Standard Webhooks signatures (`webhook-signature: v1,<base64>`), `whsec_`
//!   secrets, verification with a timestamp tolerance and key rotation.
//! - [`ssrf`]: refusing private, loopback and link-local targets, before sending and again at
//!   connection time (DNS rebinding).
//! - [`webhook`]: the webhook sender — signed POSTs, classified responses, `Retry-After`.
//! - [`transport`]: what every outgoing call shares — the client, the classification of
//!   errors and statuses, response excerpts, `Retry-After`.
//! - [`http`]: the `http` job channel — a URL called with a method, headers, a body, a bearer
//!   token or a signature; non-2xx is a failure, hard timeouts.
//! - [`digest`]: the digest channel — feeds (RSS/Atom, feed-rs), de-duplication, and the
//!   extractive, Gemini and OpenAI summarizers.
//! - [`email`]: the email channel — file, SMTP (lettre) and Resend transports, templates
//!   (minijinja, strict), the unsubscribe token.
//! - [`error`]: the error returned when a channel cannot be built from its configuration.
#![deny(missing_docs)]

pub mod digest;
pub mod email;
pub mod error;
pub mod http;
pub mod signing;
pub mod ssrf;
pub mod transport;
pub mod webhook;

pub use error::{Error, ErrorKind};
pub use http::{HttpCall, HttpCallAuth, HttpCallConfig, HttpCaller};
pub use signing::{VerifyError, WebhookSecret, sign, sign_all, verify};
pub use ssrf::{PublicOnlyResolver, TargetError, check_target, is_private_address};
pub use webhook::{WebhookConfig, WebhookSender, parse_retry_after};
