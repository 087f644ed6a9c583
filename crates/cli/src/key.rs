//! `kairos key`: the secret key stored secrets are kept under (`KAIROS_SECRET_KEY`), and the
//! check at start that this node holds the same key as the database was first used with.

use crate::common::{CliError, CliResult, Db, GlobalArgs, open_store};
use kairos_app::config::{Config, SECRET_KEY_CHECK_SETTING, SECRET_KEY_FILE, SecretKey};
use kairos_core::{Clock, SystemClock};
use kairos_store::SettingPut;

/// `kairos key …`.
#[derive(Debug, clap::Subcommand)]
pub enum KeyCmd {
    /// Print a new random secret key (32 bytes, base64) for `KAIROS_SECRET_KEY`.
    Generate,
    /// Replace the secret key: checks the current key (`KAIROS_SECRET_KEY`, or on SQLite
    /// `<data_dir>/secret-key`) against the database, then stores the new key's check value
    /// and, when the current key came from `secret-key`, writes the new key there. Stop every
    /// node first.
    Rotate(RotateArgs),
}

/// `kairos key rotate`.
#[derive(Debug, clap::Args)]
pub struct RotateArgs {
    /// The new key (from `kairos key generate`); read from the environment only, so it does
    /// not show in the process list.
    #[arg(
        long = "new-key-env",
        hide = true,
        env = "KAIROS_NEW_SECRET_KEY",
        hide_env_values = true
    )]
    new_key: Option<String>,
}

/// Run a `kairos key` command.
pub async fn run(global: &GlobalArgs, c: KeyCmd) -> CliResult {
    match c {
        KeyCmd::Generate => {
            let key = SecretKey::generate().to_base64();
            if global.json {
                return crate::common::print_json(&serde_json::json!({ "key": key }));
            }
            println!("{key}");
            Ok(())
        }
        KeyCmd::Rotate(a) => rotate(global, a).await,
    }
}

/// `kairos key rotate`: see [`KeyCmd::Rotate`].
async fn rotate(global: &GlobalArgs, a: RotateArgs) -> CliResult {
    let cfg = global.load_config(None)?;
    let new = a.new_key.ok_or_else(|| {
        CliError::usage(
            "KAIROS_NEW_SECRET_KEY",
            "is not set: put the new key there (`kairos key generate` prints one)",
        )
    })?;
    let new = SecretKey::parse(&new, "KAIROS_NEW_SECRET_KEY")?;
    let db = open_store(&cfg).await?;
    let clock = SystemClock;
    let old = checked_secret_key(&cfg, &db, &clock).await;
    let result = async {
        let old = old?;
        if old == new {
            return Err(CliError::usage(
                "KAIROS_NEW_SECRET_KEY",
                "is the current key; `kairos key generate` prints a new one",
            ));
        }
        let setting = SettingPut {
            name: SECRET_KEY_CHECK_SETTING.into(),
            value: Some(new.check_value()),
            now: clock.now(),
        };
        let sealer = kairos_store::sealing::Sealer::new(new.bytes());
        let resealed = match &db {
            Db::Sqlite(s) => kairos_store::sql::secrets::reseal(s, &sealer, setting).await,
            Db::Postgres(s, _) => kairos_store::sql::secrets::reseal(s, &sealer, setting).await,
        }
        .map_err(|e| CliError::runtime("re-sealing stored secrets under the new key", &e))?;
        let key_file = if cfg.secret_key.is_none() && matches!(db, Db::Sqlite(_)) {
            let path = cfg.data_dir.join(SECRET_KEY_FILE);
            replace_key_file(&path, &new).map_err(|e| {
                CliError::runtime(&format!("could not write {}", path.display()), &e)
            })?;
            Some(path)
        } else {
            None
        };
        if global.json {
            return crate::common::print_json(&serde_json::json!({
                "resealed": resealed,
                "key_file": key_file.as_ref().map(|p| p.display().to_string()),
            }));
        }
        println!("re-sealed {resealed} endpoints and http targets under the new key");
        match key_file {
            Some(path) => println!("secret key rotated; the new key is in {}", path.display()),
            None => println!(
                "secret key rotated; start every node with the new KAIROS_SECRET_KEY \
                 (the old one is refused from now on)"
            ),
        }
        Ok(())
    }
    .await;
    db.close().await;
    result
}

/// Write `key` to `path` (mode 0600) through a temporary file renamed over it.
fn replace_key_file(path: &std::path::Path, key: &SecretKey) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp)?;
    f.write_all(format!("{}\n", key.to_base64()).as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The node's secret key, checked against the database (see
/// [`kairos_app::node::checked_secret_key`]).
async fn checked_secret_key(cfg: &Config, db: &Db, clock: &dyn Clock) -> CliResult<SecretKey> {
    Ok(kairos_app::node::checked_secret_key(cfg, db, clock).await?)
}
