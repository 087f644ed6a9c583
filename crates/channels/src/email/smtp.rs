//! The `smtp` transport: lettre's pooled async client (`smtp://` plain or with
//! `?tls=required` for STARTTLS, `smtps://` for TLS). Replies classify like HTTP statuses:
//! 4xx transient, 5xx permanent; 550 (mailbox unavailable) is a hard bounce that the caller
//! turns into a suppression.

use super::{EmailMessage, SendReport, build_message};
use kairos_core::{ErrorClass, Failure, Outcome};
use lettre::transport::smtp::PoolConfig;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Connections to the SMTP server at most, and so sends at once (40: one local aiosmtpd answers
/// about 20 mails/s per connection). The executor may run hundreds
/// of email jobs at once; without this bound they all open connections or queue inside the
/// pool under the send timeout, a slow server times them out, and a timeout after the message
/// was handed over is a resend. Sends beyond it wait here, before their timeout starts.
pub const SMTP_CONNECTIONS: u32 = 40;

/// Sends through an SMTP server.
#[derive(Clone)]
pub struct SmtpSender {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    timeout: Duration,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for SmtpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry credentials: not shown.
        f.debug_struct("SmtpSender")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl SmtpSender {
    /// A sender for `url` (`KAIROS_SMTP_URL`).
    pub fn new(url: &str, timeout: Duration) -> Result<Self, crate::Error> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| {
                crate::Error::from(kairos_core::Error::invalid(
                    "smtp_url",
                    format!("not a usable SMTP URL: {e}"),
                ))
            })?
            .timeout(Some(timeout))
            .pool_config(PoolConfig::new().max_size(SMTP_CONNECTIONS))
            .build();
        Ok(SmtpSender {
            transport,
            timeout,
            permits: Arc::new(Semaphore::new(SMTP_CONNECTIONS as usize)),
        })
    }

    /// Timeout of one send.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Send one message.
    pub async fn send(&self, m: &EmailMessage) -> SendReport {
        let msg = match build_message(m) {
            Ok(msg) => msg,
            Err(f) => return SendReport::failed(f),
        };
        // The semaphore is never closed, so acquiring cannot fail; if it ever did, sending
        // without a permit is still correct, only less polite to the server.
        let _permit = self.permits.acquire().await.ok();
        // lettre's timeout bounds each network operation it starts, but not every wait (a
        // server that accepts the connection and never greets holds it for ever): the whole
        // send is bounded too.
        let sent = match tokio::time::timeout(self.timeout, self.transport.send(msg)).await {
            Ok(sent) => sent,
            Err(_) => {
                return SendReport::failed(Failure::transient(format!(
                    "SMTP send timed out after {}",
                    kairos_core::retry::format_duration(self.timeout)
                )));
            }
        };
        match sent {
            Ok(resp) => SendReport::of(Outcome::Delivered {
                provider_id: resp.message().next().map(|l| l.chars().take(200).collect()),
                status_code: resp.code().to_string().parse().ok(),
                response: None,
            }),
            Err(e) => classify(&e),
        }
    }
}

/// Classify an SMTP error: a reply code decides (4xx transient, 5xx permanent, 550 hard
/// bounce); no reply (connection, TLS, timeout) is transient.
pub fn classify(e: &lettre::transport::smtp::Error) -> SendReport {
    let code: Option<u16> = e.status().and_then(|c| c.to_string().parse().ok());
    let class = match code {
        Some(400..=499) => ErrorClass::Transient,
        Some(500..=599) => ErrorClass::Permanent,
        _ if e.is_permanent() => ErrorClass::Permanent,
        _ => ErrorClass::Transient,
    };
    // lettre's message quotes the server's reply, which may echo the address: keep only the
    // code and the class.
    let what = match code {
        Some(c) => format!("SMTP {c}"),
        None if e.is_timeout() => "SMTP timeout".into(),
        None => "SMTP connection failed".into(),
    };
    let mut f = Failure::new(class, what);
    f.status_code = code;
    SendReport {
        outcome: Outcome::Failed(f),
        hard_bounce: code == Some(550),
    }
}
