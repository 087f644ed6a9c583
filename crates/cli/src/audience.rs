//! `kairos recipient …` and `kairos subscription …`: the audience of topic mails,
//! on the database directly, with the API's validation (the same facade).

use crate::common::*;
use crate::remote::{Backend, seg};
use kairos_engine::ops::{MAX_BULK, NewRecipient, NewSubscription};
use kairos_server::routes::recipients::{RecipientList, RecipientView};
use kairos_server::routes::subscriptions::{SubscriptionList, SubscriptionView};
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
    /// List subscriptions by (recipient, topic).
    List {
        /// Only this recipient.
        #[arg(long)]
        recipient: Option<String>,
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
        /// Only enabled subscriptions of active recipients.
        #[arg(long)]
        active: bool,
        /// Only recipients after this id (with --topic: the next page).
        #[arg(long)]
        after: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Show the subscription of a recipient to a topic.
    Show {
        /// The recipient.
        recipient: String,
        /// The topic.
        topic: String,
    },
    /// Delete the subscription of a recipient to a topic.
    Delete {
        /// The recipient.
        recipient: String,
        /// The topic.
        topic: String,
    },
}

fn ops_err(e: kairos_engine::OpsError) -> CliError {
    CliError::Runtime(e.to_string())
}

/// Run a recipient command.
pub async fn run_recipient(global: &GlobalArgs, cmd: RecipientCmd) -> CliResult {
    let b = Backend::open(global, matches!(cmd, RecipientCmd::List { .. })).await?;
    let json = global.json;
    match cmd {
        RecipientCmd::Put {
            id,
            email,
            timezone,
            attributes,
            disabled,
        } => {
            let attributes: Option<serde_json::Value> = attributes
                .as_deref()
                .map(|a| {
                    serde_json::from_str(a)
                        .map_err(|e| CliError::usage("attributes", format!("not valid JSON: {e}")))
                })
                .transpose()?;
            let state = disabled.then(|| "disabled".to_string());
            let v: RecipientView = match &b {
                Backend::Local(k) => {
                    let r = NewRecipient {
                        id: None,
                        email,
                        webhook: None,
                        timezone,
                        locale: None,
                        attributes,
                        state,
                    };
                    k.recipient_put(&id, r).await.map_err(ops_err)?.into()
                }
                Backend::Remote(r) => {
                    let mut body = serde_json::json!({
                        "email": email, "timezone": timezone, "attributes": attributes,
                        "state": state,
                    });
                    strip_nulls(&mut body);
                    r.put(&format!("/v1/recipients/{}", seg(&id)), &body)
                        .await?
                }
            };
            if json {
                return print_json(&v);
            }
            print_fields(&[("id", v.id), ("state", v.state)]);
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
                let line_err =
                    |e: serde_json::Error| CliError::usage("file", format!("line {}: {e}", n + 1));
                let v: serde_json::Value = serde_json::from_str(&line).map_err(line_err)?;
                if matches!(b, Backend::Local(_)) {
                    // The local facade reads its own type: refuse a bad line with its number.
                    serde_json::from_value::<NewRecipient>(v.clone()).map_err(line_err)?;
                }
                batch.push(v);
                if batch.len() == MAX_BULK {
                    total += import_batch(&b, std::mem::take(&mut batch)).await?;
                }
            }
            if !batch.is_empty() {
                total += import_batch(&b, batch).await?;
            }
            if json {
                return print_json(&serde_json::json!({ "upserted": total }));
            }
            println!("upserted: {total}");
            Ok(())
        }
        RecipientCmd::Delete { id } => {
            let r = match &b {
                Backend::Local(k) => k,
                Backend::Remote(r) => {
                    // The API answers 204 without the counts the local erasure prints.
                    r.delete(&format!("/v1/recipients/{}", seg(&id)), &[])
                        .await?;
                    if json {
                        return print_json(&serde_json::json!({ "erased": id }));
                    }
                    print_fields(&[("erased", id)]);
                    return Ok(());
                }
            };
            let e = r.recipient_erase(&id).await.map_err(ops_err)?;
            if json {
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
            let list: RecipientList = match &b {
                Backend::Local(k) => {
                    let rs = k
                        .recipient_list(after, Some(limit))
                        .await
                        .map_err(ops_err)?;
                    let next_after = (rs.len() as i64 == limit)
                        .then(|| rs.last().map(|r| r.id.clone()))
                        .flatten();
                    RecipientList {
                        data: rs.into_iter().map(Into::into).collect(),
                        next_after,
                    }
                }
                Backend::Remote(r) => {
                    r.get(
                        "/v1/recipients",
                        &[("after", after), ("limit", Some(limit.to_string()))],
                    )
                    .await?
                }
            };
            if json {
                return print_json(&list);
            }
            let rows: Vec<Vec<String>> = list
                .data
                .iter()
                .map(|r| vec![r.id.clone(), r.timezone.clone(), r.state.clone()])
                .collect();
            // Addresses are not printed in listings: `kairos recipient list` output ends up
            // in terminals and logs.
            print_table(&["ID", "TIMEZONE", "STATE"], &rows);
            Ok(())
        }
    }
}

/// Upsert one batch of recipients (each line's JSON, checked already).
async fn import_batch(b: &Backend, batch: Vec<serde_json::Value>) -> CliResult<u64> {
    match b {
        Backend::Local(k) => {
            let rs = batch
                .into_iter()
                .map(serde_json::from_value::<NewRecipient>)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::usage("file", e.to_string()))?;
            k.recipient_put_many(rs).await.map_err(ops_err)
        }
        Backend::Remote(r) => {
            let v: kairos_server::routes::recipients::BulkView = r
                .post(
                    "/v1/recipients/bulk",
                    Some(&serde_json::json!({ "recipients": batch })),
                )
                .await?;
            Ok(v.upserted)
        }
    }
}

fn print_subscription(v: &SubscriptionView, json: bool) -> CliResult {
    if let Some(w) = &v.warning {
        eprintln!("warning: {}", printable(w));
    }
    if json {
        return print_json(v);
    }
    print_fields(&[
        ("recipient", v.recipient_id.clone()),
        ("topic", v.topic.clone()),
        ("targets", v.targets.join(", ")),
        ("enabled", v.enabled.to_string()),
    ]);
    Ok(())
}

/// Run a subscription command.
pub async fn run_subscription(global: &GlobalArgs, cmd: SubscriptionCmd) -> CliResult {
    let read_only = matches!(
        cmd,
        SubscriptionCmd::List { .. } | SubscriptionCmd::Show { .. }
    );
    let b = Backend::open(global, read_only).await?;
    let json = global.json;
    let one = |recipient: &str, topic: &str| {
        format!("/v1/subscriptions/{}/{}", seg(recipient), seg(topic))
    };
    match cmd {
        SubscriptionCmd::Put {
            recipient,
            topic,
            target,
            disabled,
        } => {
            // One target keeps the single-target form (and its error names `target`).
            let single = (target.len() == 1).then(|| target[0].clone());
            let many = (target.len() > 1).then_some(target);
            let v: SubscriptionView = match &b {
                Backend::Local(k) => {
                    let new = NewSubscription {
                        channels: None,
                        target: single,
                        targets: many,
                        enabled: Some(!disabled),
                    };
                    let saved = k
                        .subscription_put(&recipient, &topic, new)
                        .await
                        .map_err(ops_err)?;
                    let mut v = SubscriptionView::from(saved);
                    v.warning = k.subscription_topic_warning(&topic).await?;
                    v
                }
                Backend::Remote(r) => {
                    let mut body = serde_json::json!({
                        "target": single, "targets": many, "enabled": !disabled,
                    });
                    strip_nulls(&mut body);
                    r.put(&one(&recipient, &topic), &body).await?
                }
            };
            print_subscription(&v, json)
        }
        SubscriptionCmd::Show { recipient, topic } => {
            let v: SubscriptionView = match &b {
                Backend::Local(k) => k
                    .subscription_get(&recipient, &topic)
                    .await
                    .map_err(ops_err)?
                    .into(),
                Backend::Remote(r) => r.get(&one(&recipient, &topic), &[]).await?,
            };
            print_subscription(&v, json)
        }
        SubscriptionCmd::Delete { recipient, topic } => {
            match &b {
                Backend::Local(k) => k
                    .subscription_delete(&recipient, &topic)
                    .await
                    .map_err(ops_err)?,
                Backend::Remote(r) => {
                    r.delete(&one(&recipient, &topic), &[]).await?;
                }
            }
            if json {
                return print_json(
                    &serde_json::json!({ "deleted": { "recipient_id": recipient, "topic": topic } }),
                );
            }
            println!("deleted the subscription of {recipient} to {topic}");
            Ok(())
        }
        SubscriptionCmd::List {
            recipient,
            topic,
            active,
            after,
            limit,
        } => {
            let list: SubscriptionList = match &b {
                Backend::Local(k) => {
                    let after = after.map(|r| (r, topic.clone().unwrap_or_default()));
                    let data = k
                        .subscription_list(kairos_store::SubscriptionList {
                            topic,
                            recipient_id: recipient,
                            active_only: active,
                            after,
                            limit: Some(limit),
                        })
                        .await
                        .map_err(ops_err)?;
                    SubscriptionList {
                        data: data.into_iter().map(Into::into).collect(),
                    }
                }
                Backend::Remote(r) => {
                    r.get(
                        "/v1/subscriptions",
                        &[
                            ("recipient_id", recipient),
                            ("topic", topic),
                            ("active", active.then(|| "true".to_string())),
                            ("after", after),
                            ("limit", Some(limit.to_string())),
                        ],
                    )
                    .await?
                }
            };
            if json {
                return print_json(&list);
            }
            let rows: Vec<Vec<String>> = list
                .data
                .iter()
                .map(|s| {
                    vec![
                        s.recipient_id.clone(),
                        s.topic.clone(),
                        s.targets.join(", "),
                        s.enabled.to_string(),
                        s.updated_at.clone(),
                    ]
                })
                .collect();
            print_table(
                &["RECIPIENT", "TOPIC", "TARGETS", "ENABLED", "UPDATED"],
                &rows,
            );
            Ok(())
        }
    }
}
