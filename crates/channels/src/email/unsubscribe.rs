//! The one-click unsubscribe token (RFC 8058): an HMAC-SHA256 over (recipient, topic)
//! with a key id, so the secret can be rotated (old keys keep verifying) and a token names
//! the key it was made with. The `/unsubscribe` endpoint (the inbound issue) verifies it.
//!
//! Format: `v1.<kid>.<b64url(recipient)>.<b64url(topic)>.<b64url(mac)>`, where `kid` is the
//! first 8 hex digits of SHA-256 of the secret and the MAC covers
//! `v1\n<kid>\n<recipient>\n<topic>`. URL-safe without escaping.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// One unsubscribe signing key.
#[derive(Clone)]
pub struct UnsubscribeKey {
    kid: String,
    secret: Vec<u8>,
}

impl std::fmt::Debug for UnsubscribeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnsubscribeKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// Why a token did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Not of the `v1.…` form.
    Malformed,
    /// Made with a key we do not have.
    UnknownKey,
    /// The MAC does not match.
    BadSignature,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenError::Malformed => "the unsubscribe token is malformed",
            TokenError::UnknownKey => "the unsubscribe token was made with an unknown key",
            TokenError::BadSignature => "the unsubscribe token's signature does not match",
        })
    }
}

impl std::error::Error for TokenError {}

impl UnsubscribeKey {
    /// A key from the secret (`KAIROS_UNSUBSCRIBE_SECRET`). `None` if it is empty.
    pub fn new(secret: &str) -> Option<Self> {
        let secret = secret.trim();
        if secret.is_empty() {
            return None;
        }
        let digest = Sha256::digest(secret.as_bytes());
        let kid: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        Some(UnsubscribeKey {
            kid,
            secret: secret.as_bytes().to_vec(),
        })
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    fn mac(&self, recipient: &str, topic: &str) -> HmacSha256 {
        // Any key length is valid for HMAC.
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        m.update(format!("v1\n{}\n{recipient}\n{topic}", self.kid).as_bytes());
        m
    }

    /// The token for (recipient, topic).
    pub fn token(&self, recipient: &str, topic: &str) -> String {
        let mac = self.mac(recipient, topic).finalize().into_bytes();
        format!(
            "v1.{}.{}.{}.{}",
            self.kid,
            B64.encode(recipient),
            B64.encode(topic),
            B64.encode(mac)
        )
    }
}

/// Verify `token` against `keys` (the current key first, then old ones); the (recipient,
/// topic) it names. The comparison is constant-time. A token naming a recipient or topic
/// with a newline is malformed (it would be ambiguous).
pub fn verify(keys: &[UnsubscribeKey], token: &str) -> Result<(String, String), TokenError> {
    let parts: Vec<&str> = token.trim().split('.').collect();
    let [v, kid, r, t, mac] = parts.as_slice() else {
        return Err(TokenError::Malformed);
    };
    if *v != "v1" {
        return Err(TokenError::Malformed);
    }
    let dec = |s: &str| {
        B64.decode(s)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or(TokenError::Malformed)
    };
    let (recipient, topic) = (dec(r)?, dec(t)?);
    // The MAC covers `recipient \n topic`: with a newline inside either, another split of the
    // same text names another pair under the same MAC. Recipient ids and topic names never
    // hold one (the API refuses control characters), so such a token is not ours.
    if recipient.contains('\n') || topic.contains('\n') {
        return Err(TokenError::Malformed);
    }
    let mac = B64.decode(mac).map_err(|_| TokenError::Malformed)?;
    let key = keys
        .iter()
        .find(|k| k.kid == *kid)
        .ok_or(TokenError::UnknownKey)?;
    key.mac(&recipient, &topic)
        .verify_slice(&mac)
        .map_err(|_| TokenError::BadSignature)?;
    Ok((recipient, topic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_roundtrips_and_tampering_is_refused() {
        let k = UnsubscribeKey::new("s3cret").unwrap();
        let t = k.token("usr_1", "weekly");
        assert!(t.starts_with(&format!("v1.{}.", k.kid())));
        assert_eq!(
            verify(std::slice::from_ref(&k), &t).unwrap(),
            ("usr_1".into(), "weekly".into())
        );
        // Another recipient with the same MAC.
        let forged = t.replacen(&B64.encode("usr_1"), &B64.encode("usr_2"), 1);
        assert_eq!(
            verify(std::slice::from_ref(&k), &forged),
            Err(TokenError::BadSignature)
        );
        let other = UnsubscribeKey::new("other").unwrap();
        assert_eq!(
            verify(std::slice::from_ref(&other), &t),
            Err(TokenError::UnknownKey)
        );
        // Rotation: the old key still verifies when listed.
        assert!(verify(&[other, k], &t).is_ok());
        assert_eq!(verify(&[], "nope"), Err(TokenError::Malformed));
        assert!(UnsubscribeKey::new("  ").is_none());
    }
}
