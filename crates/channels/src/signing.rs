//! Standard Webhooks signatures (<https://www.standardwebhooks.com>).
//!
//! A message is signed by computing HMAC-SHA256 with the endpoint's secret over
//! `"{webhook-id}.{webhook-timestamp}.{body}"` and sending `v1,<base64 of the MAC>` in the
//! `webhook-signature` header. During key rotation the header carries several space-separated
//! signatures; a receiver accepts the message if any one of them verifies.
//!
//! Secrets are written `whsec_<base64>`; the decoded key is 24 to 64 bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::str::FromStr;

type HmacSha256 = Hmac<Sha256>;

/// The prefix of a Standard Webhooks secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// The shortest accepted key, in bytes.
pub const MIN_SECRET_BYTES: usize = 24;
/// The longest accepted key, in bytes.
pub const MAX_SECRET_BYTES: usize = 64;
/// The signature scheme version this module writes and reads.
const VERSION: &str = "v1";

/// A webhook signing key. Its `Debug` output never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    key: Vec<u8>,
}

impl WebhookSecret {
    /// Parse `whsec_<base64>` (standard alphabet, padded) whose key is 24 to 64 bytes.
    ///
    /// Errors name the field `secret`; they never contain the secret itself.
    pub fn parse(s: &str) -> Result<Self, kairos_core::Error> {
        let b64 = s.trim().strip_prefix(SECRET_PREFIX).ok_or_else(|| {
            kairos_core::Error::invalid("secret", format!("must start with `{SECRET_PREFIX}`"))
        })?;
        let key = STANDARD.decode(b64).map_err(|_| {
            kairos_core::Error::invalid(
                "secret",
                format!("the part after `{SECRET_PREFIX}` is not valid base64"),
            )
        })?;
        Self::from_bytes(&key)
    }

    /// A secret from raw key bytes (24 to 64 of them).
    pub fn from_bytes(key: &[u8]) -> Result<Self, kairos_core::Error> {
        if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&key.len()) {
            return Err(kairos_core::Error::invalid(
                "secret",
                format!(
                    "the key must be {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes, got {}",
                    key.len()
                ),
            ));
        }
        Ok(WebhookSecret { key: key.to_vec() })
    }

    /// A new secret from 32 random bytes supplied by the caller (from a CSPRNG).
    pub fn generate(random: [u8; 32]) -> Self {
        WebhookSecret {
            key: random.to_vec(),
        }
    }

    /// The secret in its `whsec_<base64>` form, to show to its owner once or to store.
    pub fn expose_whsec(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.key))
    }

    fn mac(&self, msg_id: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
        // HMAC accepts keys of any length; the length was checked on construction anyway.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(msg_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(whsec_<redacted>)")
    }
}

impl FromStr for WebhookSecret {
    type Err = kairos_core::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WebhookSecret::parse(s)
    }
}

/// The `webhook-signature` value for one message: `v1,<base64 HMAC-SHA256>` over
/// `"{msg_id}.{timestamp}.{body}"`.
pub fn sign(secret: &WebhookSecret, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = secret.mac(msg_id, timestamp, body).finalize().into_bytes();
    format!("{VERSION},{}", STANDARD.encode(tag))
}

/// The `webhook-signature` value signed by each of `secrets`, space-separated in their order
/// (`v1,<sig> v1,<sig>`): during a key rotation the new secret first, then the previous one,
/// so that a receiver holding either verifies the message.
pub fn sign_all(secrets: &[&WebhookSecret], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|s| sign(s, msg_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a signature was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The timestamp is older than the tolerance allows (a replay, or a very slow sender).
    TimestampTooOld,
    /// The timestamp is further in the future than the tolerance allows.
    TimestampTooNew,
    /// The header carries no `v1,` signature at all.
    NoSignature,
    /// No signature matches any of the secrets.
    Mismatch,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VerifyError::TimestampTooOld => "webhook timestamp is too old",
            VerifyError::TimestampTooNew => "webhook timestamp is too far in the future",
            VerifyError::NoSignature => "no v1 signature in the webhook-signature header",
            VerifyError::Mismatch => "no webhook signature matches",
        })
    }
}

impl std::error::Error for VerifyError {}

/// Check a received message against one or more secrets (several during key rotation).
///
/// `header_value` is the `webhook-signature` header: space-separated `v1,<base64>` entries,
/// of which any one valid entry for any one secret suffices. Entries of other versions and
/// malformed entries are ignored. The timestamp must be within `tolerance_secs` of `now_unix`
/// in either direction. Comparison is constant-time (`Mac::verify_slice`).
pub fn verify(
    secrets: &[WebhookSecret],
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
    header_value: &str,
    now_unix: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let tolerance = tolerance_secs.max(0);
    if now_unix.saturating_sub(timestamp) > tolerance {
        return Err(VerifyError::TimestampTooOld);
    }
    if timestamp.saturating_sub(now_unix) > tolerance {
        return Err(VerifyError::TimestampTooNew);
    }
    let candidates: Vec<Vec<u8>> = header_value
        .split_ascii_whitespace()
        .filter_map(|entry| entry.split_once(','))
        .filter(|(version, _)| *version == VERSION)
        .filter_map(|(_, sig)| STANDARD.decode(sig).ok())
        .collect();
    if candidates.is_empty() {
        return Err(VerifyError::NoSignature);
    }
    for secret in secrets {
        let mac = secret.mac(msg_id, timestamp, body);
        // `verify_slice` consumes the MAC; clone it per candidate.
        if candidates
            .iter()
            .any(|sig| mac.clone().verify_slice(sig).is_ok())
        {
            return Ok(());
        }
    }
    Err(VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The official vector from the Standard Webhooks specification.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret() -> WebhookSecret {
        WebhookSecret::parse(SECRET).unwrap()
    }

    fn other_secret() -> WebhookSecret {
        WebhookSecret::generate([7; 32])
    }

    #[test]
    fn signs_the_official_vector() {
        assert_eq!(sign(&secret(), ID, TS, BODY), EXPECTED);
    }

    #[test]
    fn verifies_the_official_vector() {
        assert_eq!(verify(&[secret()], ID, TS, BODY, EXPECTED, TS, 300), Ok(()));
    }

    #[test]
    fn wrong_secret_is_a_mismatch() {
        assert_eq!(
            verify(&[other_secret()], ID, TS, BODY, EXPECTED, TS, 300),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn sign_all_carries_one_signature_per_secret_in_order() {
        let (new, old) = (other_secret(), secret());
        let header = sign_all(&[&new, &old], ID, TS, BODY);
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], sign(&new, ID, TS, BODY));
        assert_eq!(parts[1], EXPECTED);
        // A receiver holding only one of the two secrets verifies it.
        assert_eq!(verify(&[old], ID, TS, BODY, &header, TS, 300), Ok(()));
        assert_eq!(verify(&[new], ID, TS, BODY, &header, TS, 300), Ok(()));
        assert_eq!(sign_all(&[&secret()], ID, TS, BODY), EXPECTED);
    }

    #[test]
    fn tampered_body_is_a_mismatch() {
        let tampered = br#"{"test": 2432232315}"#;
        assert_eq!(
            verify(&[secret()], ID, TS, tampered, EXPECTED, TS, 300),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn tampered_id_or_timestamp_is_a_mismatch() {
        assert_eq!(
            verify(&[secret()], "msg_other", TS, BODY, EXPECTED, TS, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(&[secret()], ID, TS + 1, BODY, EXPECTED, TS, 300),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn old_and_future_timestamps_are_rejected() {
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, EXPECTED, TS + 301, 300),
            Err(VerifyError::TimestampTooOld)
        );
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, EXPECTED, TS - 301, 300),
            Err(VerifyError::TimestampTooNew)
        );
        // At the edge of the tolerance it still passes.
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, EXPECTED, TS + 300, 300),
            Ok(())
        );
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, EXPECTED, TS - 300, 300),
            Ok(())
        );
        // Extreme values do not overflow.
        assert_eq!(
            verify(&[secret()], ID, i64::MIN, BODY, EXPECTED, i64::MAX, 300),
            Err(VerifyError::TimestampTooOld)
        );
    }

    #[test]
    fn several_signatures_one_valid_passes() {
        let bogus = sign(&other_secret(), ID, TS, BODY);
        let header = format!("v2,abc v1,notbase64!! {bogus} {EXPECTED}");
        assert_eq!(verify(&[secret()], ID, TS, BODY, &header, TS, 300), Ok(()));
        // And the other way round: one signature, several secrets (rotation on our side).
        assert_eq!(
            verify(&[other_secret(), secret()], ID, TS, BODY, EXPECTED, TS, 300),
            Ok(())
        );
    }

    #[test]
    fn header_without_v1_signature_is_rejected() {
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, "v1a,abc", TS, 300),
            Err(VerifyError::NoSignature)
        );
        assert_eq!(
            verify(&[secret()], ID, TS, BODY, "", TS, 300),
            Err(VerifyError::NoSignature)
        );
    }

    #[test]
    fn secret_parsing_checks_prefix_base64_and_length() {
        for bad in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",               // no prefix
            "whsec_not base64!",                              // not base64
            "whsec_c2hvcnQ=",                                 // 5 bytes
            &format!("whsec_{}", STANDARD.encode([1u8; 65])), // too long
        ] {
            let e = WebhookSecret::parse(bad).unwrap_err();
            assert_eq!(e.field(), "secret");
            assert!(!e.to_string().contains("MfKQ9r8G"), "{e}");
        }
        let s = WebhookSecret::generate([9; 32]);
        assert_eq!(WebhookSecret::parse(&s.expose_whsec()).unwrap(), s);
        assert_eq!(format!("{s:?}"), "WebhookSecret(whsec_<redacted>)");
    }
}
