//! The API token: given in the configuration, or generated once into the data directory
//! (mode 0600) and reused on later starts.

use super::{Config, ConfigError, TOKEN_FILE};
use base64::Engine as _;
use std::io::Write;
use std::path::Path;

/// Where the API token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `api_token` / `KAIROS_API_TOKEN`.
    Config,
    /// Read from `<data_dir>/api-token`.
    File,
    /// Generated now and saved to `<data_dir>/api-token`: tell the operator where (never the
    /// token itself).
    Generated,
    /// The cluster's token, stored in the database (PostgreSQL) by the first node, saved now
    /// to this node's `<data_dir>/api-token`.
    Cluster,
}

/// The fewest characters an API token may have: it is the admin password too, and login
/// attempts are only slowed down, so it must not be guessable.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Refuse a token shorter than [`MIN_TOKEN_CHARS`]; `source` names where it was set.
pub(crate) fn check_length(token: &str, source: &str) -> Result<(), ConfigError> {
    let n = token.chars().count();
    if n < MIN_TOKEN_CHARS {
        return Err(ConfigError::new(
            "api_token",
            format!(
                "{source} is {n} characters long; it must be at least {MIN_TOKEN_CHARS} \
                 (unset it to use a generated token, or make one with `openssl rand -base64 32`)"
            ),
        ));
    }
    Ok(())
}

/// A new token: `kairos_` + 32 random bytes in base64url (50 characters).
pub fn generate_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!(
        "kairos_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Write `token` to `path` (mode 0600), replacing what it held, creating the data dir.
pub fn save_token(cfg: &Config, token: &str) -> Result<(), ConfigError> {
    let path = cfg.data_dir.join(TOKEN_FILE);
    let io_err = |what: &str, p: &Path, e: std::io::Error| {
        ConfigError::new("api_token", format!("{what} {}: {e}", p.display()))
    };
    super::create_private_dir(&cfg.data_dir)
        .map_err(|e| io_err("could not create the data directory", &cfg.data_dir, e))?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(&path)
        .map_err(|e| io_err("could not create", &path, e))?;
    f.write_all(format!("{token}\n").as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("could not write", &path, e))
}

/// The token saved in `<data_dir>/api-token`, if there is one (without creating anything).
pub fn saved_token(cfg: &Config) -> Result<Option<String>, ConfigError> {
    let path = cfg.data_dir.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => {
            check_length(s.trim(), &path.display().to_string())?;
            Ok(Some(s.trim().to_string()))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::new(
            "api_token",
            format!("could not read {}: {e}", path.display()),
        )),
    }
}

/// The API token: the configured one, else the one saved in `<data_dir>/api-token`, else a new
/// one saved there (mode 0600). Creates the data dir if needed.
pub fn api_token(cfg: &Config) -> Result<(String, TokenSource), ConfigError> {
    if let Some(t) = &cfg.api_token {
        return Ok((t.trim().to_string(), TokenSource::Config));
    }
    let path = cfg.data_dir.join(TOKEN_FILE);
    let io_err = |what: &str, p: &Path, e: std::io::Error| {
        ConfigError::new("api_token", format!("{what} {}: {e}", p.display()))
    };
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => {
            check_length(s.trim(), &path.display().to_string())?;
            return Ok((s.trim().to_string(), TokenSource::File));
        }
        Ok(_) => {
            return Err(ConfigError::new(
                "api_token",
                format!(
                    "{} is empty; delete it to generate a new token",
                    path.display()
                ),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("could not read", &path, e)),
    }
    super::create_private_dir(&cfg.data_dir)
        .map_err(|e| io_err("could not create the data directory", &cfg.data_dir, e))?;
    let token = generate_token();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(&path)
        .map_err(|e| io_err("could not create", &path, e))?;
    f.write_all(format!("{token}\n").as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("could not write", &path, e))?;
    Ok((token, TokenSource::Generated))
}
