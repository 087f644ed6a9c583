//! `kairos key`: the secret key stored secrets are kept under (`KAIROS_SECRET_KEY`), and the
//! check at start that this node holds the same key as the database was first used with.

use crate::common::{CliError, CliResult, Db};
use kairos_core::Clock;
use kairos_server::config::{
    Config, SECRET_KEY_CHECK_SETTING, SECRET_KEY_FILE, SecretKey, SecretKeySource, secret_key,
};
use kairos_store::SettingPut;
use subtle::ConstantTimeEq;

/// `kairos key …`.
#[derive(Debug, clap::Subcommand)]
pub enum KeyCmd {
    /// Print a new random secret key (32 bytes, base64) for `KAIROS_SECRET_KEY`.
    Generate,
}

/// Run a `kairos key` command.
pub fn run(c: KeyCmd) -> CliResult {
    match c {
        KeyCmd::Generate => {
            println!("{}", SecretKey::generate().to_base64());
            Ok(())
        }
    }
}

/// The node's secret key, checked against the database: the configured key, or on SQLite the
/// one in `<data_dir>/secret-key` (generated on first start). The first node to start stores
/// the key's check value; a node whose key gives another value (or, on PostgreSQL, a node
/// given no key) refuses to start with an error naming `KAIROS_SECRET_KEY`.
pub async fn checked_secret_key(cfg: &Config, db: &Db, clock: &dyn Clock) -> CliResult<SecretKey> {
    let (key, source) = secret_key(cfg, matches!(db, Db::Sqlite(_)))?;
    if source == SecretKeySource::Generated {
        tracing::info!(
            path = %cfg.data_dir.join(SECRET_KEY_FILE).display(),
            "generated a secret key (mode 0600); back it up: stored secrets cannot be read without it"
        );
    }
    let store = db.store();
    let mine = key.check_value();
    let read = |e: kairos_store::Error| CliError::runtime("reading the secret key check", &e);
    let stored = match store
        .setting_get(SECRET_KEY_CHECK_SETTING)
        .await
        .map_err(read)?
    {
        Some(s) => s.value,
        None => {
            store
                .setting_put(SettingPut {
                    name: SECRET_KEY_CHECK_SETTING.into(),
                    value: Some(mine.clone()),
                    now: clock.now(),
                })
                .await
                .map_err(|e| CliError::runtime("storing the secret key check", &e))?;
            // Read back: of two first nodes started at once, the last write wins and the
            // other one sees a value that is not its own.
            store
                .setting_get(SECRET_KEY_CHECK_SETTING)
                .await
                .map_err(read)?
                .map(|s| s.value)
                .unwrap_or_default()
        }
    };
    if !bool::from(stored.as_bytes().ct_eq(mine.as_bytes())) {
        let given = match source {
            SecretKeySource::Config => "KAIROS_SECRET_KEY".to_string(),
            _ => format!(
                "{} (KAIROS_SECRET_KEY is not set)",
                cfg.data_dir.join(SECRET_KEY_FILE).display()
            ),
        };
        return Err(CliError::usage(
            "secret_key",
            format!(
                "the key from {given} is not the key this database was first used with \
                 (its check value differs); give every node the same KAIROS_SECRET_KEY"
            ),
        ));
    }
    Ok(key)
}
