//! `kairos topic list|show`: the topics of audience mails (`GET /v1/topics`,
//! `GET /v1/topics/{name}`), on the database or through `--server`.

use crate::common::*;
use crate::remote::{Backend, seg};
use kairos_server::routes::topics::{TopicList, TopicView};

/// `kairos topic …`.
#[derive(Debug, clap::Subcommand)]
pub enum TopicCmd {
    /// List topics by name.
    List,
    /// Show a topic: its templates, variants and entitlement check.
    Show {
        /// The topic's name.
        name: String,
    },
}

/// Run a `topic` command (both only read).
pub async fn run(global: &GlobalArgs, cmd: TopicCmd) -> CliResult {
    let b = Backend::open(global, true).await?;
    match cmd {
        TopicCmd::List => {
            let list: TopicList = match &b {
                Backend::Local(k) => TopicList {
                    data: k.topic_list().await?.into_iter().map(Into::into).collect(),
                },
                Backend::Remote(r) => r.get("/v1/topics", &[]).await?,
            };
            if global.json {
                return print_json(&list);
            }
            let rows: Vec<Vec<String>> = list
                .data
                .iter()
                .map(|t| {
                    vec![
                        t.name.clone(),
                        t.subject.clone(),
                        t.variants.len().to_string(),
                        t.updated_at.clone(),
                    ]
                })
                .collect();
            print_table(&["NAME", "SUBJECT", "VARIANTS", "UPDATED"], &rows);
            Ok(())
        }
        TopicCmd::Show { name } => {
            let t: TopicView = match &b {
                Backend::Local(k) => k.topic_get(&name).await?.into(),
                Backend::Remote(r) => r.get(&format!("/v1/topics/{}", seg(&name)), &[]).await?,
            };
            if global.json {
                return print_json(&t);
            }
            let mut fields = vec![
                ("name", t.name.clone()),
                ("subject", t.subject.clone()),
                ("html", t.html.as_ref().map_or("-", |_| "yes").to_string()),
                ("text", t.text.as_ref().map_or("-", |_| "yes").to_string()),
                ("entitlement_url", cell(&t.entitlement_url)),
                ("created_at", t.created_at.clone()),
                ("updated_at", t.updated_at.clone()),
            ];
            for v in &t.variants {
                fields.push(("variant", format!("{} (weight {})", v.name, v.weight)));
            }
            print_fields(&fields);
            Ok(())
        }
    }
}
