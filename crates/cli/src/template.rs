//! Email set-up from the configuration (`KAIROS_EMAIL_*`) and `kairos template preview`:
//! render a topic's mail for one recipient exactly as the `email` handler would, without
//! sending it.

use crate::common::*;
use kairos_channels::email::template;

/// `kairos template …`.
#[derive(Debug, clap::Subcommand)]
pub enum TemplateCmd {
    /// Render a topic's mail for a recipient (subject, text, HTML), without sending it.
    Preview {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// The recipient id (default: the sample context used when topics are saved).
        #[arg(long)]
        recipient: Option<String>,
        /// The variant to render (default: the topic's own templates).
        #[arg(long)]
        variant: Option<String>,
        /// The period key (default `2026-W01`).
        #[arg(long, default_value = "2026-W01")]
        period: String,
        /// The target.
        #[arg(long)]
        target: Option<String>,
    },
}

/// Run a template command.
pub async fn run(global: &GlobalArgs, cmd: TemplateCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let k = open_kairos(&cfg).await?;
    let TemplateCmd::Preview {
        topic,
        recipient,
        variant,
        period,
        target,
    } = cmd;
    let t = k
        .topic_get(&topic)
        .await
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    let v = match &variant {
        Some(name) => Some(t.variants.iter().find(|v| &v.name == name).ok_or_else(|| {
            CliError::usage(
                "variant",
                format!("topic {topic:?} has no variant {name:?}"),
            )
        })?),
        None => None,
    };
    // A recipient's real data renders where the node renders it: in a template worker under
    // its limits (unless KAIROS_TEMPLATE_WORKERS=0), so a template that explodes on that data
    // is reported, not run in this process. The sample passed the same check at save time.
    let ctx = match &recipient {
        None => None,
        Some(id) => {
            let r = k
                .recipient_get(id)
                .await
                .map_err(|e| CliError::Runtime(e.to_string()))?;
            Some(serde_json::json!({
                "recipient": {"id": r.id, "email": r.email, "timezone": r.timezone,
                              "locale": r.locale, "attributes": r.attributes},
                "target": target,
                "period": {"key": period, "fire_at": null},
                "topic": topic,
                "variant": variant,
                "payload": {"topic": topic, "recipient_id": r.id, "target": target},
                "unsubscribe_url": format!("{}/unsubscribe?token=preview",
                    cfg.public_url.clone().unwrap_or_else(|| format!("http://{}", cfg.listen))),
            }))
        }
    };
    let subject = v.and_then(|v| v.subject.as_deref()).unwrap_or(&t.subject);
    let html = v.and_then(|v| v.html.as_deref()).or(t.html.as_deref());
    let text = v.and_then(|v| v.text.as_deref()).or(t.text.as_deref());
    let mut parts = vec![("subject".to_string(), subject.to_string())];
    parts.extend(text.map(|t| ("text".to_string(), t.to_string())));
    parts.extend(html.map(|h| ("html".to_string(), h.to_string())));
    let rendered = match ctx {
        Some(ctx) => template_renderer(&cfg)?
            .render(parts.clone(), ctx)
            .await
            .map_err(|e| match e {
                template::RenderError::Template(e) => CliError::usage(e.field, e.reason),
                e => CliError::Runtime(e.to_string()),
            })?,
        None => {
            let ctx = template::sample_context();
            parts
                .iter()
                .map(|(f, s)| template::render(f, s, &ctx))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::usage(e.field.clone(), e.reason))?
        }
    };
    if global.json {
        let mut out =
            serde_json::json!({ "topic": topic, "variant": variant, "recipient": recipient });
        for ((field, _), text) in parts.iter().zip(&rendered) {
            out[field.as_str()] = serde_json::Value::String(text.clone());
        }
        return print_json(&out);
    }
    for ((field, _), out) in parts.iter().zip(rendered) {
        match field.as_str() {
            "subject" => println!("Subject: {out}"),
            other => println!("\n--- {other} ---\n{out}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kairos_app::config::Config;
    use kairos_app::node::email_setup;
    use kairos_channels::email::EmailMessage;
    use kairos_core::{ErrorClass, Outcome};
    use std::time::Duration;

    /// `KAIROS_EMAIL_TIMEOUT_SECS` reaches the SMTP transport: a server that accepts the
    /// connection and never greets is given up on after 1 s as a transient failure (the old
    /// fixed 30 s would outlast the test's 8 s bound).
    #[tokio::test]
    async fn email_timeout_setting_bounds_an_smtp_send() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accept and hold connections without a word.
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            for _ in 0..8 {
                match listener.accept().await {
                    Ok((sock, _)) => held.push(sock),
                    Err(_) => break,
                }
            }
        });
        let cfg = Config {
            email_transport: "smtp".into(),
            smtp_url: Some(format!("smtp://{addr}")),
            email_timeout_secs: 1,
            ..Config::default()
        };
        cfg.validate_email().unwrap();
        let (transport, _) = email_setup(&cfg).unwrap();
        let msg = EmailMessage {
            id: "job_timeout".into(),
            from: "kairos@example.com".into(),
            to: "someone@example.com".into(),
            subject: "hello".into(),
            html: None,
            text: Some("hi".into()),
            headers: vec![],
            tags: vec![],
        };
        let sent = tokio::time::timeout(Duration::from_secs(8), transport.send(&msg))
            .await
            .expect("the send gave up within the configured timeout");
        match sent.outcome {
            Outcome::Failed(f) => assert_eq!(f.class, ErrorClass::Transient, "{f:?}"),
            other => panic!("a silent server cannot accept mail: {other:?}"),
        }
        silent.abort();
    }

    #[test]
    fn email_timeout_out_of_range_is_refused_naming_the_setting() {
        let cfg = Config {
            email_timeout_secs: 0,
            ..Config::default()
        };
        let e = cfg.validate_email().unwrap_err();
        assert!(e.to_string().contains("email_timeout_secs"), "{e}");
    }
}
