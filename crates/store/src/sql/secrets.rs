//! The sealing passes both stores run (the start-up pass that seals plaintext secrets, and key
//! rotation): their statements and what each row becomes, so that a store only reads the rows
//! and binds the results.

use super::RowRead;
use crate::Result;
use crate::sealing::{self, ENDPOINT_SECRET_AAD, Sealer};
use serde_json::Value;

/// Endpoints whose secret is still plaintext (no lookup hash), a batch of `$1`.
pub const ENDPOINTS_UNSEALED: &str =
    "SELECT id, url, secret FROM endpoints WHERE secret_hash IS NULL LIMIT $1";
/// Seal one endpoint still unsealed: id `$1`, secret `$2`, lookup hash `$3`.
pub const ENDPOINT_SEAL: &str = "UPDATE endpoints SET secret = $2, secret_hash = $3
     WHERE id = $1 AND secret_hash IS NULL";
/// Every endpoint, for re-sealing under a new key.
pub const ENDPOINTS_ALL_SECRETS: &str = "SELECT id, url, secret FROM endpoints";
/// Re-seal one endpoint: id `$1`, secret `$2`, lookup hash `$3`.
pub const ENDPOINT_RESEAL: &str =
    "UPDATE endpoints SET secret = $2, secret_hash = $3 WHERE id = $1";
/// Every http target, for re-sealing under a new key.
pub const HTTP_TARGETS_ALL_SECRETS: &str = "SELECT id, headers, secret FROM http_targets";
/// Seal one http target: id `$1`, headers `$2`, secret `$3`, fingerprint `$4`.
pub const HTTP_TARGET_SEAL: &str =
    "UPDATE http_targets SET headers = $2, secret = $3, fingerprint = $4 WHERE id = $1";
/// Store a setting: name `$1`, value `$2`, at `$3`.
pub const SETTING_UPSERT: &str = "INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at";

/// An endpoint row (`id, url, secret`) sealed under `seal`, its stored secret opened with
/// `open` (a plaintext one is taken as it is).
pub struct EndpointSealed {
    /// The endpoint's id.
    pub id: String,
    /// The sealed secret to store.
    pub secret: String,
    /// The secret's lookup hash to store.
    pub secret_hash: String,
}

impl EndpointSealed {
    /// Read an endpoint row and seal it.
    pub fn from_row(row: &impl RowRead, open: Option<&Sealer>, seal: &Sealer) -> Result<Self> {
        let (id, url) = (row.text("id")?, row.text("url")?);
        let plain = sealing::endpoint_secret_from_store(open, row.text("secret")?)?;
        Ok(EndpointSealed {
            id,
            secret: seal.seal(&plain, ENDPOINT_SECRET_AAD),
            secret_hash: seal.lookup_hash(&[&url, &plain]),
        })
    }
}

/// An http target row (`id, headers, secret`) with its headers and secret sealed under
/// `seal`, the stored ones opened with `open`.
pub struct HttpTargetSealed {
    /// The target's id.
    pub id: String,
    /// The headers to store (a JSON string holding the sealed object).
    pub headers: Value,
    /// The secret to store.
    pub secret: Option<String>,
}

impl HttpTargetSealed {
    /// Read an http target row and seal it.
    pub fn from_row(row: &impl RowRead, open: Option<&Sealer>, seal: &Sealer) -> Result<Self> {
        let headers = sealing::http_headers_from_store(open, row.json("headers")?)?;
        let secret = sealing::http_secret_from_store(open, row.opt_text("secret")?)?;
        Ok(HttpTargetSealed {
            id: row.text("id")?,
            headers: sealing::http_headers_to_store(Some(seal), &headers),
            secret: sealing::http_secret_to_store(Some(seal), secret.as_deref()),
        })
    }
}

/// The fingerprint an http target keeps when its plaintext is sealed: a keyed one already
/// stays, a plain one is replaced by its keyed hash.
pub fn http_fingerprint_sealed(sealer: &Sealer, stored: String) -> String {
    if stored.starts_with("hmac:") {
        stored
    } else {
        sealing::http_fingerprint_to_store(Some(sealer), &stored)
    }
}
