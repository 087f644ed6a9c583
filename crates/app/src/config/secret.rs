//! The secret key (`KAIROS_SECRET_KEY`): 32 random bytes in base64 that kairos keeps stored
//! secrets under. Given in the configuration, or on SQLite generated once into
//! `<data_dir>/secret-key` (mode 0600) like `api-token`. On PostgreSQL every node must be
//! given the same key: the database holds a check value (an HMAC of a fixed text under the
//! key) that the first node writes and every later node compares with its own.

use super::{Config, ConfigError};
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::io::Write;
use std::path::Path;

/// The file a generated secret key is kept in, inside the data directory.
pub const SECRET_KEY_FILE: &str = "secret-key";

/// The setting (in the database) that holds the key check value.
pub const SECRET_KEY_CHECK_SETTING: &str = "secret_key_check";

/// The text whose HMAC under the key is the check value.
const CHECK_TEXT: &[u8] = b"kairos secret key check v1";

/// The key's length in bytes.
pub const SECRET_KEY_BYTES: usize = 32;

/// The secret key. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey([u8; SECRET_KEY_BYTES]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(<secret>)")
    }
}

impl SecretKey {
    /// The key's bytes.
    pub fn bytes(&self) -> &[u8; SECRET_KEY_BYTES] {
        &self.0
    }

    /// Parse base64 (standard or URL-safe, padded or not) of exactly 32 bytes; `source` names
    /// where it was set.
    pub fn parse(s: &str, source: &str) -> Result<SecretKey, ConfigError> {
        use base64::engine::general_purpose::{
            STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
        };
        let s = s.trim();
        let bytes = [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
            .iter()
            .find_map(|e| e.decode(s).ok())
            .ok_or_else(|| {
                ConfigError::new(
                    "secret_key",
                    format!("{source} is not base64; `kairos key generate` prints a valid key"),
                )
            })?;
        let key: [u8; SECRET_KEY_BYTES] = bytes.as_slice().try_into().map_err(|_| {
            ConfigError::new(
                "secret_key",
                format!(
                    "{source} decodes to {} bytes; it must be {SECRET_KEY_BYTES} \
                     (`kairos key generate` prints a valid key)",
                    bytes.len()
                ),
            )
        })?;
        Ok(SecretKey(key))
    }

    /// The key in standard base64 (how `kairos key generate` prints it).
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    /// A new random key.
    pub fn generate() -> SecretKey {
        SecretKey(rand::random())
    }

    /// The check value stored in the database: HMAC-SHA256 of a fixed text under the key,
    /// lowercase hex. It shows whether two nodes hold the same key, not the key.
    pub fn check_value(&self) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(CHECK_TEXT);
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Where the secret key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKeySource {
    /// `secret_key` / `KAIROS_SECRET_KEY`.
    Config,
    /// Read from `<data_dir>/secret-key`.
    File,
    /// Generated now and saved to `<data_dir>/secret-key`.
    Generated,
}

/// The secret key: the configured one; else, when `may_generate` (SQLite: one node owns the
/// data directory), the one saved in `<data_dir>/secret-key`, or a new one saved there (mode
/// 0600). Without `may_generate` (PostgreSQL) a missing setting is an error naming
/// `KAIROS_SECRET_KEY`.
pub fn secret_key(
    cfg: &Config,
    may_generate: bool,
) -> Result<(SecretKey, SecretKeySource), ConfigError> {
    if let Some(k) = &cfg.secret_key {
        return Ok((
            SecretKey::parse(k, "KAIROS_SECRET_KEY")?,
            SecretKeySource::Config,
        ));
    }
    if !may_generate {
        return Err(ConfigError::new(
            "secret_key",
            "KAIROS_SECRET_KEY is not set: on PostgreSQL every node must be given the same \
             secret key (`kairos key generate` prints one)",
        ));
    }
    let path = cfg.data_dir.join(SECRET_KEY_FILE);
    let io_err = |what: &str, p: &Path, e: std::io::Error| {
        ConfigError::new("secret_key", format!("{what} {}: {e}", p.display()))
    };
    match std::fs::read_to_string(&path) {
        Ok(s) => {
            return Ok((
                SecretKey::parse(&s, &path.display().to_string())?,
                SecretKeySource::File,
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("could not read", &path, e)),
    }
    super::create_private_dir(&cfg.data_dir)
        .map_err(|e| io_err("could not create the data directory", &cfg.data_dir, e))?;
    let key = SecretKey::generate();
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
    f.write_all(format!("{}\n", key.to_base64()).as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("could not write", &path, e))?;
    Ok((key, SecretKeySource::Generated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_takes_32_bytes_of_base64_in_either_alphabet_and_refuses_others() {
        let k = SecretKey::generate();
        assert_eq!(SecretKey::parse(&k.to_base64(), "x").unwrap(), k);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(k.bytes());
        assert_eq!(SecretKey::parse(&url, "x").unwrap(), k);
        let short = SecretKey::parse("c2hvcnQ=", "KAIROS_SECRET_KEY").unwrap_err();
        assert_eq!(short.field, "secret_key");
        assert!(
            short
                .reason
                .contains("KAIROS_SECRET_KEY decodes to 5 bytes"),
            "{short}"
        );
        let bad = SecretKey::parse("not base64!", "KAIROS_SECRET_KEY").unwrap_err();
        assert!(bad.reason.contains("not base64"), "{bad}");
        assert!(!format!("{k:?}").contains(&k.to_base64()));
    }

    #[test]
    fn check_value_differs_between_keys_and_does_not_contain_the_key() {
        let (a, b) = (SecretKey::generate(), SecretKey::generate());
        assert_eq!(a.check_value(), a.check_value());
        assert_ne!(a.check_value(), b.check_value());
        assert_eq!(a.check_value().len(), 64);
    }
}
