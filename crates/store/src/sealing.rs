//! Sealing stored secrets under the secret key (`KAIROS_SECRET_KEY`): an AEAD for values
//! that must be read back (webhook secrets, http target headers and tokens), and a keyed hash
//! for values a row is looked up by (a webhook endpoint is unique on url + secret).
//!
//! Both keys are derived from the 32-byte secret key with HMAC-SHA256 under a fixed label, so
//! the encryption key and the lookup-hash key are independent and neither is the secret key.
//!
//! - [`Sealer::seal`]: ChaCha20-Poly1305 (`ring::aead`) with a fresh random 96-bit nonce per
//!   value, and `aad` (the column's name, say) bound to the ciphertext, so a sealed value
//!   copied into another column does not open. Stored as `kairos:v1:` + base64url(nonce ‖
//!   ciphertext ‖ tag).
//! - [`Sealer::lookup_hash`]: HMAC-SHA256 of the length-prefixed parts, lowercase hex: the
//!   same parts give the same hash, and it reveals nothing without the key.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use ring::aead::{self, Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::Sha256;

/// The prefix of every sealed value.
pub const SEALED_PREFIX: &str = "kairos:v1:";

const ENC_LABEL: &[u8] = b"kairos sealing key v1";
const HASH_LABEL: &[u8] = b"kairos lookup hash key v1";

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// Why a sealed value did not open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// It does not start with [`SEALED_PREFIX`] or is not valid base64 of a sealed value.
    Malformed,
    /// Authentication failed: another key, another `aad`, or a changed value.
    Rejected,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenError::Malformed => "not a sealed value",
            OpenError::Rejected => {
                "the sealed value does not open under this secret key (another KAIROS_SECRET_KEY, or a changed value)"
            }
        })
    }
}

impl std::error::Error for OpenError {}

/// Seals and opens values under keys derived from the secret key. Its `Debug` shows no key.
pub struct Sealer {
    enc: LessSafeKey,
    hash_key: [u8; 32],
    rng: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<keys>)")
    }
}

impl Sealer {
    /// The sealer of a 32-byte secret key.
    pub fn new(secret_key: &[u8; 32]) -> Sealer {
        let enc_key = hmac(secret_key, &[ENC_LABEL]);
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &enc_key)
            .unwrap_or_else(|_| unreachable!("a 32-byte key fits ChaCha20-Poly1305"));
        Sealer {
            enc: LessSafeKey::new(unbound),
            hash_key: hmac(secret_key, &[HASH_LABEL]),
            rng: SystemRandom::new(),
        }
    }

    /// Whether `s` is a sealed value (has [`SEALED_PREFIX`]); a value without it is plaintext
    /// stored before sealing existed.
    pub fn is_sealed(s: &str) -> bool {
        s.starts_with(SEALED_PREFIX)
    }

    /// Seal `plaintext`, binding `aad` (e.g. `"endpoints.secret"`).
    pub fn seal(&self, plaintext: &str, aad: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .unwrap_or_else(|_| panic!("the system random number generator failed"));
        let mut buf = plaintext.as_bytes().to_vec();
        self.enc
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad.as_bytes()),
                &mut buf,
            )
            .unwrap_or_else(|_| unreachable!("sealing fails only for inputs over 256 GiB"));
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        format!(
            "{SEALED_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
        )
    }

    /// Open a value sealed with the same key and `aad`.
    pub fn open(&self, sealed: &str, aad: &str) -> Result<String, OpenError> {
        let b64 = sealed
            .strip_prefix(SEALED_PREFIX)
            .ok_or(OpenError::Malformed)?;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|_| OpenError::Malformed)?;
        if raw.len() < NONCE_LEN + aead::CHACHA20_POLY1305.tag_len() {
            return Err(OpenError::Malformed);
        }
        let (nonce, rest) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Malformed)?;
        let mut buf = rest.to_vec();
        let plain = self
            .enc
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut buf)
            .map_err(|_| OpenError::Rejected)?;
        String::from_utf8(plain.to_vec()).map_err(|_| OpenError::Malformed)
    }

    /// The keyed hash a row is looked up by: HMAC-SHA256 (under the derived hash key) of each
    /// part prefixed by its length, so `("ab", "c")` and `("a", "bc")` differ; lowercase hex.
    pub fn lookup_hash(&self, parts: &[&str]) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.hash_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        for p in parts {
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p.as_bytes());
        }
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The associated data a webhook endpoint's secret is sealed with.
pub const ENDPOINT_SECRET_AAD: &str = "endpoints.secret";

/// What an endpoint upsert stores for `secret`: with a sealer, the sealed secret and the
/// lookup hash of (url, secret) the endpoint is found by; without one, the plaintext and no
/// hash (stores opened without a secret key: tests, tools).
pub fn endpoint_secret_to_store(
    sealer: Option<&Sealer>,
    url: &str,
    secret: &str,
) -> (String, Option<String>) {
    match sealer {
        Some(s) => (
            s.seal(secret, ENDPOINT_SECRET_AAD),
            Some(s.lookup_hash(&[url, secret])),
        ),
        None => (secret.to_string(), None),
    }
}

/// A stored endpoint secret as it must be stored from now on: a plaintext one (stored before
/// sealing, not yet converted) is sealed when there is a sealer; a sealed one is kept.
/// Rotation moves the current secret to `previous_secret` with this, so a row the sealing
/// pass has not reached yet does not keep its old secret in plaintext there.
pub fn endpoint_secret_resealed(sealer: Option<&Sealer>, stored: String) -> String {
    match sealer {
        Some(s) if !Sealer::is_sealed(&stored) => s.seal(&stored, ENDPOINT_SECRET_AAD),
        _ => stored,
    }
}

/// An endpoint's secret from its stored value: a sealed value is opened with the sealer; a
/// plaintext one (stored before sealing, not yet converted) is returned as it is.
pub fn endpoint_secret_from_store(
    sealer: Option<&Sealer>,
    stored: String,
) -> crate::Result<String> {
    open_stored(sealer, stored, ENDPOINT_SECRET_AAD)
}

/// A stored value opened: sealed values with the sealer (`aad` is also the column named in
/// errors), plaintext ones as they are.
fn open_stored(sealer: Option<&Sealer>, stored: String, aad: &str) -> crate::Result<String> {
    if !Sealer::is_sealed(&stored) {
        return Ok(stored);
    }
    let Some(s) = sealer else {
        return Err(crate::Error::new(
            crate::ErrorKind::Corrupt,
            format!(
                "{aad} is sealed, and this store was opened without the secret key (KAIROS_SECRET_KEY)"
            ),
        ));
    };
    s.open(&stored, aad)
        .map_err(|e| crate::Error::new(crate::ErrorKind::Corrupt, format!("{aad}: {e}")))
}

/// The setting that holds the cluster's API token (PostgreSQL: every node serves with it),
/// sealed with [`API_TOKEN_AAD`]; key rotation re-seals it.
pub const API_TOKEN_SETTING: &str = "api_token";
/// The associated data the cluster's API token is sealed with.
pub const API_TOKEN_AAD: &str = "settings.api_token";

/// The cluster's API token as stored in [`API_TOKEN_SETTING`], opened.
pub fn api_token_from_store(sealer: Option<&Sealer>, stored: String) -> crate::Result<String> {
    open_stored(sealer, stored, API_TOKEN_AAD)
}

/// The associated data a webhook endpoint's URL is sealed with.
pub const ENDPOINT_URL_AAD: &str = "endpoints.url";
/// The associated data an http target's URL is sealed with.
pub const HTTP_URL_AAD: &str = "http_targets.url";

/// What a row stores for `url`: with a sealer, sealed (under `aad`) when it carries a
/// credential — a user info or a query string ([`kairos_core::text::url_has_credentials`]) —
/// and as it is otherwise, so a plain URL stays readable in the database; without a sealer, as
/// it is. A sealed URL is found again by the keyed hash of the whole URL (endpoints: with the
/// secret, [`Sealer::lookup_hash`]; http targets: the keyed fingerprint).
pub fn url_to_store(sealer: Option<&Sealer>, url: &str, aad: &str) -> String {
    match sealer {
        Some(s) if kairos_core::text::url_has_credentials(url) && !Sealer::is_sealed(url) => {
            s.seal(url, aad)
        }
        _ => url.to_string(),
    }
}

/// A URL from its stored value: a sealed one opened, a plain one as it is.
pub fn url_from_store(sealer: Option<&Sealer>, stored: String, aad: &str) -> crate::Result<String> {
    open_stored(sealer, stored, aad)
}

/// The associated data an http target's headers are sealed with.
pub const HTTP_HEADERS_AAD: &str = "http_targets.headers";
/// The associated data an http target's secret (bearer token or signing secret) is sealed
/// with.
pub const HTTP_SECRET_AAD: &str = "http_targets.secret";

/// What an http target stores for its headers: with a sealer, a JSON string holding the
/// sealed JSON object; without one, the object.
pub fn http_headers_to_store(
    sealer: Option<&Sealer>,
    headers: &std::collections::BTreeMap<String, String>,
) -> serde_json::Value {
    let object = serde_json::to_value(headers).unwrap_or_else(|_| serde_json::json!({}));
    match sealer {
        Some(s) => serde_json::Value::String(s.seal(&object.to_string(), HTTP_HEADERS_AAD)),
        None => object,
    }
}

/// Whether stored http target headers are sealed (a JSON string, not an object).
pub fn http_headers_are_sealed(stored: &serde_json::Value) -> bool {
    stored.as_str().is_some_and(Sealer::is_sealed)
}

/// An http target's headers from their stored value (sealed or a plaintext object).
pub fn http_headers_from_store(
    sealer: Option<&Sealer>,
    stored: serde_json::Value,
) -> crate::Result<std::collections::BTreeMap<String, String>> {
    let object = match stored {
        serde_json::Value::String(s) => {
            let text = open_stored(sealer, s, HTTP_HEADERS_AAD)?;
            serde_json::from_str(&text).map_err(|e| {
                crate::Error::new(crate::ErrorKind::Corrupt, "http_targets.headers").with_source(e)
            })?
        }
        v => v,
    };
    serde_json::from_value(object).map_err(|e| {
        crate::Error::new(
            crate::ErrorKind::Corrupt,
            "stored http target headers cannot be read",
        )
        .with_source(e)
    })
}

/// What an http target stores as its fingerprint (the unique hash of its whole definition,
/// headers and secret included): with a sealer, `hmac:` + the keyed lookup hash of the
/// engine's fingerprint, so that it says nothing about the definition without the key.
pub fn http_fingerprint_to_store(sealer: Option<&Sealer>, fingerprint: &str) -> String {
    match sealer {
        Some(s) => format!(
            "hmac:{}",
            s.lookup_hash(&["http_targets.fingerprint", fingerprint])
        ),
        None => fingerprint.to_string(),
    }
}

/// What an http target stores for its secret: sealed with a sealer, else as it is.
pub fn http_secret_to_store(sealer: Option<&Sealer>, secret: Option<&str>) -> Option<String> {
    secret.map(|v| match sealer {
        Some(s) => s.seal(v, HTTP_SECRET_AAD),
        None => v.to_string(),
    })
}

/// An http target's secret from its stored value (sealed or plaintext).
pub fn http_secret_from_store(
    sealer: Option<&Sealer>,
    stored: Option<String>,
) -> crate::Result<Option<String>> {
    stored
        .map(|v| open_stored(sealer, v, HTTP_SECRET_AAD))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: [u8; 32] = [7; 32];
    const K2: [u8; 32] = [8; 32];

    #[test]
    fn seal_then_open_roundtrips_and_hides_the_plaintext() {
        let s = Sealer::new(&K1);
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let a = s.seal(secret, "endpoints.secret");
        let b = s.seal(secret, "endpoints.secret");
        assert!(Sealer::is_sealed(&a) && !Sealer::is_sealed(secret));
        assert_ne!(a, b, "a fresh nonce per value");
        assert!(!a.contains(secret) && !a.contains("MfKQ9r8GKYqrTwjUPD8"));
        assert_eq!(s.open(&a, "endpoints.secret").unwrap(), secret);
        assert_eq!(s.open(&b, "endpoints.secret").unwrap(), secret);
        assert_eq!(s.open(&s.seal("", "x"), "x").unwrap(), "");
    }

    #[test]
    fn open_rejects_another_key_another_aad_and_a_changed_value() {
        let (s1, s2) = (Sealer::new(&K1), Sealer::new(&K2));
        let v = s1.seal("Bearer abc", "http_targets.headers");
        assert_eq!(
            s2.open(&v, "http_targets.headers"),
            Err(OpenError::Rejected)
        );
        assert_eq!(s1.open(&v, "endpoints.secret"), Err(OpenError::Rejected));
        let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&v[SEALED_PREFIX.len()..])
            .unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        let changed = format!(
            "{SEALED_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
        );
        assert_eq!(
            s1.open(&changed, "http_targets.headers"),
            Err(OpenError::Rejected)
        );
        assert_eq!(s1.open("plain", "x"), Err(OpenError::Malformed));
        assert_eq!(s1.open("kairos:v1:AAAA", "x"), Err(OpenError::Malformed));
        assert!(
            s2.open(&v, "x")
                .unwrap_err()
                .to_string()
                .contains("KAIROS_SECRET_KEY")
        );
    }

    #[test]
    fn urls_with_credentials_are_sealed_and_plain_ones_kept() {
        let s = Sealer::new(&K1);
        let with = "https://u:pw@hooks.example/x?token=abc";
        let stored = url_to_store(Some(&s), with, ENDPOINT_URL_AAD);
        assert!(Sealer::is_sealed(&stored) && !stored.contains("abc") && !stored.contains("pw"));
        assert_eq!(
            url_from_store(Some(&s), stored.clone(), ENDPOINT_URL_AAD).unwrap(),
            with
        );
        assert!(url_from_store(Some(&s), stored, HTTP_URL_AAD).is_err());
        let plain = "https://hooks.example/x";
        assert_eq!(url_to_store(Some(&s), plain, ENDPOINT_URL_AAD), plain);
        assert_eq!(url_to_store(None, with, ENDPOINT_URL_AAD), with);
        assert_eq!(
            url_from_store(Some(&s), plain.to_string(), ENDPOINT_URL_AAD).unwrap(),
            plain
        );
    }

    #[test]
    fn lookup_hash_is_keyed_deterministic_and_unambiguous() {
        let (s1, s2) = (Sealer::new(&K1), Sealer::new(&K2));
        let h = s1.lookup_hash(&["https://example.com/hook", "whsec_x"]);
        assert_eq!(h, s1.lookup_hash(&["https://example.com/hook", "whsec_x"]));
        assert_eq!(h.len(), 64);
        assert_ne!(h, s2.lookup_hash(&["https://example.com/hook", "whsec_x"]));
        assert_ne!(s1.lookup_hash(&["ab", "c"]), s1.lookup_hash(&["a", "bc"]));
        assert!(!format!("{s1:?}").contains('7'));
    }
}
