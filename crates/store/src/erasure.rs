//! Erasure of a person (`DELETE /v1/recipients/{id}`): what the store removes, and the keyed
//! hash that keeps an erased address's suppression without keeping the address.
//!
//! kairos keeps one secret key (`kairos_keys`, name [`ERASURE_KEY`]), created on first use.
//! An erased address's suppression is stored as HMAC-SHA256 of the normalized address under
//! that key ([`address_hash`]): the address cannot be read back from it, but the same address
//! given again (a new recipient, `DELETE /v1/suppressions/{address}`) hashes to the same value
//! and is found.

use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::sync::OnceLock;

/// The name of the erasure key in `kairos_keys`.
pub const ERASURE_KEY: &str = "erasure";

/// The prefix of an erased suppression's stored `address`: the stored value is
/// `hmac-sha256:<hex>`, never an address (an address has no `:` before its `@`).
pub const ERASED_PREFIX: &str = "hmac-sha256:";

/// The text that replaces an erased address in stored texts (events, attempt logs).
pub const REDACTED: &str = "[erased]";

/// The keyed hash of an address: HMAC-SHA256 over the normalized address, lowercase hex.
pub fn address_hash(key: &[u8], address: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(crate::normalize_address(address).as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `text` with every occurrence of `address` (ASCII case-insensitive) replaced by
/// [`REDACTED`]; `None` if it does not occur.
pub fn redact_address(text: &str, address: &str) -> Option<String> {
    let needle = crate::normalize_address(address);
    if needle.is_empty() {
        return None;
    }
    let (hay, pat) = (text.as_bytes(), needle.as_bytes());
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last, mut found) = (0, 0, false);
    while i + pat.len() <= hay.len() {
        if hay[i..i + pat.len()].eq_ignore_ascii_case(pat) && text.is_char_boundary(i) {
            out.push_str(&text[last..i]);
            out.push_str(REDACTED);
            i += pat.len();
            last = i;
            found = true;
        } else {
            i += 1;
        }
    }
    if !found {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// A store's cache of the erasure key once it exists (it never changes). Its `Debug` does not
/// show the key.
#[derive(Default)]
pub struct KeyCache(OnceLock<Vec<u8>>);

impl KeyCache {
    /// The cached key.
    pub fn get(&self) -> Option<&[u8]> {
        self.0.get().map(Vec::as_slice)
    }
    /// Remember the key (the first value wins).
    pub fn set(&self, key: Vec<u8>) -> &[u8] {
        self.0.get_or_init(|| key)
    }
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "KeyCache(<key>)"
        } else {
            "KeyCache(empty)"
        })
    }
}

/// `recipient_erase`: remove a recipient and every trace of their address, in one
/// transaction.
#[derive(Clone)]
pub struct RecipientErase {
    /// The recipient.
    pub id: String,
    /// A fresh random key, stored as the erasure key if none exists yet (first use).
    pub new_key: Vec<u8>,
    /// Now.
    pub now: DateTime<Utc>,
}

impl std::fmt::Debug for RecipientErase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecipientErase")
            .field("id", &self.id)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// What `recipient_erase` did.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RecipientErased {
    /// The erased address (normalized), for the caller to remove from what the store does not
    /// hold (outbox files). Never log it.
    pub address: String,
    /// Subscriptions deleted.
    pub subscriptions: u64,
    /// Suppression entries now stored as the keyed hash.
    pub suppressions_hashed: u64,
    /// Inbound events whose stored payload had the address replaced.
    pub events_redacted: u64,
    /// Stored job texts (last error, attempt errors and responses) that had the address
    /// replaced.
    pub texts_redacted: u64,
}

impl std::fmt::Debug for RecipientErased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecipientErased")
            .field("subscriptions", &self.subscriptions)
            .field("suppressions_hashed", &self.suppressions_hashed)
            .field("events_redacted", &self.events_redacted)
            .field("texts_redacted", &self.texts_redacted)
            .finish_non_exhaustive()
    }
}

/// `subscription_delete`: delete the subscription of (recipient, topic).
#[derive(Debug, Clone)]
pub struct SubscriptionDelete {
    /// The recipient.
    pub recipient_id: String,
    /// The topic.
    pub topic: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_hash_is_keyed_and_normalizes_the_address() {
        let a = address_hash(b"k1", " Alice@Example.com ");
        assert_eq!(a, address_hash(b"k1", "alice@example.com"));
        assert_ne!(a, address_hash(b"k2", "alice@example.com"));
        assert_eq!(a.len(), 64);
        assert!(!a.contains('@'));
    }

    #[test]
    fn redact_replaces_every_occurrence_ignoring_ascii_case() {
        assert_eq!(
            redact_address(
                r#"{"to":["Alice@Example.com"],"x":"alice@example.com!"}"#,
                "alice@example.com"
            )
            .as_deref(),
            Some(r#"{"to":["[erased]"],"x":"[erased]!"}"#)
        );
        assert_eq!(redact_address("nothing here", "alice@example.com"), None);
        assert_eq!(
            redact_address("ünï alice@x.io", "ALICE@x.io").as_deref(),
            Some("ünï [erased]")
        );
    }
}
