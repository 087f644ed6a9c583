//! `kairos recipient …` and `kairos subscription …`: the audience of topic mails,
//! on the database directly, with the API's validation (the same facade).

use crate::common::*;
use kairos_engine::ops::{MAX_BULK, NewRecipient, NewSubscription};
use std::io::BufRead;

/// `kairos recipient …`.
#[derive(Debug, clap::Subcommand)]
pub enum RecipientCmd {
    /// Create or replace a recipient.
    Put {
        /// The recipient's id.
        id: String,
        /// Email address.
        #[arg(long)]
        email: String,
        /// IANA time zone (default UTC).
        #[arg(long)]
        timezone: Option<String>,
        /// Attributes for templates, a JSON object.
        #[arg(long)]
        attributes: Option<String>,
        /// Create or set it disabled (not mailed).
        #[arg(long)]
        disabled: bool,
    },
    /// Import recipients from a JSON-lines file (`-` for stdin): one
    /// `{"id", "email", "timezone", "attributes"}` per line, upserted 10,000 per transaction.
    Import {
        /// The file.
        file: String,
    },
    /// Erase a recipient: delete them, their attributes and subscriptions, cancel their
    /// pending jobs (reason `erased`), and remove their address from stored inbound events,
    /// job logs and outbox files; a suppression of the address stays as a keyed hash
    /// (docs/privacy.md).
    Delete {
        /// The recipient's id.
        id: String,
    },
    /// List recipients by id.
    List {
        /// Only ids after this one.
        #[arg(long)]
        after: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
}

/// `kairos subscription …`.
#[derive(Debug, clap::Subcommand)]
pub enum SubscriptionCmd {
    /// Create or replace the subscription of a recipient to a topic.
    Put {
        /// The recipient.
        recipient: String,
        /// The topic.
        topic: String,
        /// What the mail is about; repeat for several targets (one mail per target and
        /// period, at most 100).
        #[arg(long)]
        target: Vec<String>,
        /// Keep it but do not deliver (an unsubscribe).
        #[arg(long)]
        disabled: bool,
    },
}

fn ops_err(e: kairos_engine::OpsError) -> CliError {
    CliError::Runtime(e.to_string())
}

/// Run a recipient command.
pub async fn run_recipient(global: &GlobalArgs, cmd: RecipientCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let k = open_kairos_read(&cfg, matches!(cmd, RecipientCmd::List { .. })).await?;
    match cmd {
        RecipientCmd::Put {
            id,
            email,
            timezone,
            attributes,
            disabled,
        } => {
            let r = NewRecipient {
                id: None,
                email,
                webhook: None,
                timezone,
                locale: None,
                attributes: attributes
                    .as_deref()
                    .map(|a| {
                        serde_json::from_str(a).map_err(|e| {
                            CliError::usage("attributes", format!("not valid JSON: {e}"))
                        })
                    })
                    .transpose()?,
                state: disabled.then(|| "disabled".to_string()),
            };
            let r = k.recipient_put(&id, r).await.map_err(ops_err)?;
            print_fields(&[("id", r.id), ("state", r.state.as_str().into())]);
            Ok(())
        }
        RecipientCmd::Import { file } => {
            let reader: Box<dyn BufRead> = if file == "-" {
                Box::new(std::io::BufReader::new(std::io::stdin()))
            } else {
                let f = std::fs::File::open(&file)
                    .map_err(|e| CliError::usage("file", format!("{file}: {e}")))?;
                Box::new(std::io::BufReader::new(f))
            };
            let (mut batch, mut total) = (Vec::new(), 0u64);
            for (n, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| CliError::runtime("reading the file", &e))?;
                if line.trim().is_empty() {
                    continue;
                }
                let r: NewRecipient = serde_json::from_str(&line)
                    .map_err(|e| CliError::usage("file", format!("line {}: {e}", n + 1)))?;
                batch.push(r);
                if batch.len() == MAX_BULK {
                    total += k
                        .recipient_put_many(std::mem::take(&mut batch))
                        .await
                        .map_err(ops_err)?;
                }
            }
            if !batch.is_empty() {
                total += k.recipient_put_many(batch).await.map_err(ops_err)?;
            }
            println!("upserted: {total}");
            Ok(())
        }
        RecipientCmd::Delete { id } => {
            let e = k.recipient_erase(&id).await.map_err(ops_err)?;
            if global.json {
                return print_json(&e);
            }
            print_fields(&[
                ("erased", id),
                ("jobs_cancelled", e.jobs_cancelled.to_string()),
                ("subscriptions_deleted", e.subscriptions_deleted.to_string()),
                ("suppressions_hashed", e.suppressions_hashed.to_string()),
                ("events_redacted", e.events_redacted.to_string()),
                ("texts_redacted", e.texts_redacted.to_string()),
                ("outbox_files_deleted", e.outbox_files_deleted.to_string()),
            ]);
            Ok(())
        }
        RecipientCmd::List { after, limit } => {
            let rs = k
                .recipient_list(after, Some(limit))
                .await
                .map_err(ops_err)?;
            let rows: Vec<Vec<String>> = rs
                .iter()
                .map(|r| {
                    vec![
                        r.id.clone(),
                        r.timezone.clone(),
                        r.state.as_str().to_string(),
                    ]
                })
                .collect();
            // Addresses are not printed in listings: `kairos recipient list` output ends up
            // in terminals and logs.
            print_table(&["ID", "TIMEZONE", "STATE"], &rows);
            Ok(())
        }
    }
}

/// Run a subscription command.
pub async fn run_subscription(global: &GlobalArgs, cmd: SubscriptionCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let k = open_kairos(&cfg).await?;
    let SubscriptionCmd::Put {
        recipient,
        topic,
        target,
        disabled,
    } = cmd;
    let s = k
        .subscription_put(
            &recipient,
            &topic,
            NewSubscription {
                channels: None,
                // One target keeps the single-target form (and its error names `target`).
                target: (target.len() == 1).then(|| target[0].clone()),
                targets: (target.len() > 1).then_some(target),
                enabled: Some(!disabled),
            },
        )
        .await
        .map_err(ops_err)?;
    print_fields(&[
        ("recipient", s.recipient_id),
        ("topic", s.topic),
        ("targets", s.targets.join(", ")),
        ("enabled", s.enabled.to_string()),
    ]);
    Ok(())
}
