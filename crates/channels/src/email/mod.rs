//! The email channel: one message through one of three transports, chosen in
//! configuration (`KAIROS_EMAIL_TRANSPORT`):
//!
//! - [`file`]: writes RFC 5322 `.eml` files to a directory (the embedded default, `DATA_DIR/
//!   outbox`); the file is named after the job id, so a retry rewrites the same file.
//! - [`smtp`]: lettre's pooled async SMTP client; replies classify like HTTP: 4xx transient,
//!   5xx permanent, and 550 is a hard bounce the caller suppresses.
//! - [`resend`]: Resend's HTTP API with the job id as `Idempotency-Key`, paced
//!   by its `ratelimit-*` / `retry-after` headers; a 429 `rate_limit_exceeded` waits without
//!   spending an attempt, quota codes pause the transport and warn.
//!
//! Also here: [`template`] (minijinja, strict undefined) and [`unsubscribe`] (the HMAC token
//! of the one-click unsubscribe link).
//!
//! A send never panics and never returns a Rust error: every problem is an
//! [`Outcome::Failed`] with an [`ErrorClass`](kairos_core::ErrorClass). Messages name job ids,
//! never the recipient's address.

pub mod entitlement;
pub mod file;
pub mod resend;
pub mod smtp;
pub mod template;
pub mod unsubscribe;

use kairos_core::{Failure, Outcome};
use std::path::PathBuf;
use std::time::Duration;
use tracing::Instrument;

/// One mail to send.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailMessage {
    /// The job id: file name, `Idempotency-Key`, and the `X-Kairos-Job-Id` header.
    pub id: String,
    /// `From` (`Name <addr>` or `addr`).
    pub from: String,
    /// The recipient's address.
    pub to: String,
    /// Subject.
    pub subject: String,
    /// HTML body.
    pub html: Option<String>,
    /// Text body.
    pub text: Option<String>,
    /// Extra headers (`List-Unsubscribe`, …).
    pub headers: Vec<(String, String)>,
    /// Tags (`variant`, `topic`): Resend tags, `X-Kairos-Tags` elsewhere.
    pub tags: Vec<(String, String)>,
}

/// What a send produced.
#[derive(Debug, Clone, PartialEq)]
pub struct SendReport {
    /// The outcome to record.
    pub outcome: Outcome,
    /// The server refused the address for good (SMTP 550): suppress it.
    pub hard_bounce: bool,
}

impl SendReport {
    /// A plain outcome.
    pub fn of(outcome: Outcome) -> Self {
        SendReport {
            outcome,
            hard_bounce: false,
        }
    }
    /// A failure outcome.
    pub fn failed(f: Failure) -> Self {
        Self::of(Outcome::Failed(f))
    }
}

/// Which transport, and its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportConfig {
    /// `.eml` files in this directory.
    File {
        /// The outbox directory.
        dir: PathBuf,
    },
    /// SMTP at this URL (`smtp://host:port`, `smtp://host:port?tls=required`, `smtps://…`).
    Smtp {
        /// The URL.
        url: String,
        /// Timeout of one send.
        timeout: Duration,
    },
    /// Resend's HTTP API.
    Resend(resend::ResendConfig),
}

/// A built transport. Cheap to clone.
#[derive(Clone, Debug)]
pub enum EmailTransport {
    /// Files.
    File(file::FileTransport),
    /// SMTP.
    Smtp(smtp::SmtpSender),
    /// Resend.
    Resend(resend::ResendSender),
}

impl EmailTransport {
    /// Build the configured transport.
    pub fn new(cfg: TransportConfig) -> Result<Self, crate::Error> {
        Ok(match cfg {
            TransportConfig::File { dir } => EmailTransport::File(file::FileTransport::new(dir)),
            TransportConfig::Smtp { url, timeout } => {
                EmailTransport::Smtp(smtp::SmtpSender::new(&url, timeout)?)
            }
            TransportConfig::Resend(c) => EmailTransport::Resend(resend::ResendSender::new(c)?),
        })
    }

    /// The transport's name (`file`, `smtp`, `resend`).
    pub fn name(&self) -> &'static str {
        match self {
            EmailTransport::File(_) => "file",
            EmailTransport::Smtp(_) => "smtp",
            EmailTransport::Resend(_) => "resend",
        }
    }

    /// Send one message.
    /// With tracing on, an SMTP or Resend send is a client span (`smtp SEND`, `resend POST`)
    /// under the attempt's; writing to the outbox is not an outgoing call and has none.
    pub async fn send(&self, m: &EmailMessage) -> SendReport {
        let (span, report) = match self {
            EmailTransport::File(t) => return t.send(m).await,
            EmailTransport::Smtp(t) => {
                let span = crate::transport::call_span("smtp", "SEND");
                (span.clone(), t.send(m).instrument(span).await)
            }
            EmailTransport::Resend(t) => {
                let span = crate::transport::call_span("resend", "POST");
                (span.clone(), t.send(m).instrument(span).await)
            }
        };
        crate::transport::record_call(&span, &report.outcome);
        report
    }

    /// The longest one send may take (the handler's timeout adds reading the recipient).
    pub fn timeout(&self) -> Duration {
        match self {
            EmailTransport::File(_) => Duration::from_secs(10),
            EmailTransport::Smtp(t) => t.timeout(),
            EmailTransport::Resend(t) => t.timeout(),
        }
    }
}

/// The message as RFC 5322 bytes (file and SMTP transports). A header or address lettre
/// refuses is a permanent failure: retrying cannot fix it.
pub fn build_message(m: &EmailMessage) -> Result<lettre::Message, Failure> {
    use lettre::message::header::{ContentType, HeaderName, HeaderValue};
    use lettre::message::{Mailbox, MultiPart, SinglePart};
    let from: Mailbox = m
        .from
        .parse()
        .map_err(|e| Failure::permanent(format!("the From address is not valid: {e}")))?;
    // The error names no address: it could be the recipient's.
    let to: Mailbox =
        m.to.parse()
            .map_err(|_| Failure::permanent("the recipient's address is not a valid address"))?;
    // The Message-ID is derived from the job id, so every retry of one job carries the same
    // id: a receiver that deduplicates on it sees a resend after "delivered but not recorded"
    // as one message, like `webhook-id` for webhooks.
    let message_id = format!("<{}@{}>", m.id, from.email.domain());
    let mut b = lettre::Message::builder()
        .from(from)
        .to(to)
        .message_id(Some(message_id))
        .subject(m.subject.clone());
    let mut headers = m.headers.clone();
    headers.push(("X-Kairos-Job-Id".into(), m.id.clone()));
    if !m.tags.is_empty() {
        let tags: Vec<String> = m.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        headers.push(("X-Kairos-Tags".into(), tags.join(", ")));
    }
    for (name, value) in headers {
        let n = HeaderName::new_from_ascii(name.clone())
            .map_err(|_| Failure::permanent(format!("header name {name:?} is not valid")))?;
        b = b.raw_header(HeaderValue::new(n, value));
    }
    let built = match (&m.text, &m.html) {
        (Some(t), Some(h)) => b.multipart(MultiPart::alternative_plain_html(t.clone(), h.clone())),
        (None, Some(h)) => b.singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_HTML)
                .body(h.clone()),
        ),
        (Some(t), None) => b.singlepart(SinglePart::plain(t.clone())),
        (None, None) => b.singlepart(SinglePart::plain(String::new())),
    };
    built.map_err(|e| Failure::permanent(format!("the message cannot be built: {e}")))
}
