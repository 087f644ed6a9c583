//! `kairos token create|list|revoke`: scoped API tokens (see `kairos_server::scope`), on the
//! database directly. The token is printed once, at creation; the database keeps its hash.

use crate::common::*;
use kairos_app::config::generate_token;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::{Clock, SystemClock};
use kairos_server::scope::{Scope, token_hash};
use kairos_server::views::ts;
use kairos_store::{ApiTokenCreate, ApiTokenRecord, ApiTokenRevoke};

/// `kairos token …`.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCmd {
    /// Create a token and print it (once: only its hash is kept).
    Create {
        /// A unique name (`ci`, `grafana`).
        #[arg(long)]
        name: String,
        /// `read` (GET only), `write` (all but the operator's actions) or `admin`.
        #[arg(long, value_parser = ["read", "write", "admin"])]
        scope: String,
    },
    /// List tokens: name, scope, created, last used, revoked (never the token).
    List,
    /// Revoke a token by name or id: it opens nothing from now on, on every node.
    Revoke {
        /// Its name or id (`tok_…`).
        name: String,
    },
}

/// A token as listed (`--json`).
#[derive(Debug, serde::Serialize)]
struct TokenView {
    id: String,
    name: String,
    scope: String,
    created_at: String,
    last_used_at: Option<String>,
    revoked_at: Option<String>,
}

impl From<&ApiTokenRecord> for TokenView {
    fn from(t: &ApiTokenRecord) -> Self {
        TokenView {
            id: t.id.clone(),
            name: t.name.clone(),
            scope: t.scope.clone(),
            created_at: ts(t.created_at),
            last_used_at: t.last_used_at.map(ts),
            revoked_at: t.revoked_at.map(ts),
        }
    }
}

fn store_err(what: &str) -> impl Fn(kairos_store::Error) -> CliError + '_ {
    move |e| {
        if e.kind() == kairos_store::ErrorKind::Conflict {
            CliError::usage("name", "a token with this name exists (revoked ones too)")
        } else {
            CliError::runtime(what, &e)
        }
    }
}

/// Run a `token` command.
pub async fn run(global: &GlobalArgs, cmd: TokenCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    if matches!(cmd, TokenCmd::List) {
        require_database(&cfg)?;
    }
    let db = open_store(&cfg).await?;
    let store = db.store();
    let now = SystemClock.now();
    let result = match cmd {
        TokenCmd::Create { name, scope } => {
            let scope = Scope::parse(&scope)
                .ok_or_else(|| CliError::usage("scope", "must be read, write or admin"))?;
            let name = name.trim().to_string();
            if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
                return Err(CliError::usage("name", "1 to 64 printable characters"));
            }
            let token = generate_token();
            let record = ApiTokenRecord {
                id: new_id(IdPrefix::Token, now),
                name,
                scope: scope.as_str().to_string(),
                token_hash: token_hash(&token),
                created_at: now,
                last_used_at: None,
                revoked_at: None,
            };
            store
                .api_token_create(ApiTokenCreate {
                    token: record.clone(),
                })
                .await
                .map_err(store_err("storing the token"))?;
            if global.json {
                let mut v = serde_json::to_value(TokenView::from(&record))
                    .map_err(|e| CliError::runtime("could not write JSON", &e))?;
                v["token"] = token.into();
                print_json(&v)
            } else {
                eprintln!(
                    "created token {} ({}, scope {}); it is shown once, keep it now:",
                    record.name, record.id, record.scope
                );
                println!("{token}");
                Ok(())
            }
        }
        TokenCmd::List => {
            let list = store
                .api_token_list()
                .await
                .map_err(store_err("listing tokens"))?;
            let views: Vec<TokenView> = list.iter().map(TokenView::from).collect();
            if global.json {
                print_json(&serde_json::json!({ "data": views }))
            } else {
                let rows: Vec<Vec<String>> = views
                    .iter()
                    .map(|v| {
                        vec![
                            v.id.clone(),
                            v.name.clone(),
                            v.scope.clone(),
                            v.created_at.clone(),
                            cell(&v.last_used_at),
                            cell(&v.revoked_at),
                        ]
                    })
                    .collect();
                print_table(
                    &["ID", "NAME", "SCOPE", "CREATED", "LAST USED", "REVOKED"],
                    &rows,
                );
                Ok(())
            }
        }
        TokenCmd::Revoke { name } => {
            let revoked = store
                .api_token_revoke(ApiTokenRevoke {
                    id_or_name: name.clone(),
                    now,
                })
                .await
                .map_err(store_err("revoking the token"))?;
            if !revoked {
                Err(CliError::usage(
                    "name",
                    format!("no token {name:?} that is not revoked already"),
                ))
            } else if global.json {
                print_json(&serde_json::json!({ "revoked": name }))
            } else {
                println!("revoked {name}");
                Ok(())
            }
        }
    };
    db.close().await;
    result
}
