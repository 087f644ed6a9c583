//! The cluster's identity: on PostgreSQL every node serves the API with one token, stored in
//! the database (sealed under the secret key) by the first node to start. Behind a load
//! balancer a request is then accepted by whichever node gets it, and an admin session (its
//! cookie is signed with a key derived from the token, its row is in the shared database) is
//! valid on every node.
//!
//! - The first node stores its token: `KAIROS_API_TOKEN`, else the one in its
//!   `<data_dir>/api-token`, else a new one. The insert keeps the first value, so two first
//!   nodes started at once agree on one.
//! - Every later node takes the stored token and writes it to its own `api-token`; a node
//!   given another `KAIROS_API_TOKEN` refuses to start and says why.
//!
//! On SQLite one node owns the database and its data directory: the token is the configured
//! one, or the one in (or generated into) `<data_dir>/api-token`, as before.

use super::{Db, NodeError};
use crate::config::{
    Config, TOKEN_FILE, TokenSource, api_token, generate_token, save_token, saved_token, secret_key,
};
use kairos_core::Clock;
use kairos_store::SettingPut;
use kairos_store::sealing::Sealer;
use subtle::ConstantTimeEq;

use kairos_store::sealing::API_TOKEN_AAD;
pub use kairos_store::sealing::API_TOKEN_SETTING;

/// The API token this node serves with, and where it came from (see the module docs). The
/// database must be open with the secret key checked ([`super::open_db`]).
pub async fn cluster_token(
    cfg: &Config,
    db: &Db,
    clock: &dyn Clock,
) -> Result<(String, TokenSource), NodeError> {
    if matches!(db, Db::Sqlite(_)) {
        return Ok(api_token(cfg)?);
    }
    let (key, _) = secret_key(cfg, false)?;
    let sealer = Sealer::new(key.bytes());
    let configured = cfg.api_token.as_deref().map(str::trim);
    let saved = saved_token(cfg)?;
    let store = db.store();
    let read = |e: kairos_store::Error| NodeError::runtime("reading the cluster's API token", &e);
    let mut generated = None;
    let stored = match store.setting_get(API_TOKEN_SETTING).await.map_err(read)? {
        Some(s) => s.value,
        None => {
            let mine = match (configured, &saved) {
                (Some(t), _) => t.to_string(),
                (None, Some(t)) => t.clone(),
                (None, None) => generated.insert(generate_token()).clone(),
            };
            store
                .setting_create(SettingPut {
                    name: API_TOKEN_SETTING.into(),
                    value: Some(sealer.seal(&mine, API_TOKEN_AAD)),
                    now: clock.now(),
                })
                .await
                .map_err(|e| NodeError::runtime("storing the cluster's API token", &e))?
                .map(|s| s.value)
                .unwrap_or_default()
        }
    };
    let cluster = sealer.open(&stored, API_TOKEN_AAD).map_err(|e| {
        NodeError::usage(
            "api_token",
            format!("the cluster's API token stored in the database does not open: {e}"),
        )
    })?;
    let same = |t: &str| bool::from(t.as_bytes().ct_eq(cluster.as_bytes()));
    if let Some(t) = configured {
        if !same(t) {
            return Err(NodeError::usage(
                "api_token",
                "KAIROS_API_TOKEN is not this cluster's API token: the database holds the \
                 token the first node started with, and every node must accept the same one. \
                 Give this node that token, or unset KAIROS_API_TOKEN to use it (it is then \
                 written to <data_dir>/api-token)",
            ));
        }
        return Ok((cluster, TokenSource::Config));
    }
    if saved.as_deref().is_some_and(same) {
        return Ok((cluster, TokenSource::File));
    }
    if saved.is_some() {
        tracing::warn!(
            path = %cfg.data_dir.join(TOKEN_FILE).display(),
            "the saved API token is not the cluster's: replaced it with the cluster's token"
        );
    }
    save_token(cfg, &cluster)?;
    let source = if generated.as_deref().is_some_and(same) {
        TokenSource::Generated
    } else {
        TokenSource::Cluster
    };
    Ok((cluster, source))
}
