//! Concurrency keys: at most `max` jobs with one key run at once, across every node.
//!
//! A job's key is rendered from its request's template when the job is made (the payload,
//! and for audience jobs the recipient). A key that renders empty, over [`MAX_KEY_BYTES`] or
//! with control characters cannot be enforced, so that job fails permanently, saying why: it
//! is stored as a *failed* key ([`Concurrency::failed`]), which no valid key can equal (valid
//! keys have no control characters), and the executor fails it before it runs.
//!
//! The stores enforce the limit with a slot table: a claimed job with a key runs only when it
//! takes one of its key's `max` slots in the claim's transaction; the others go back to wait
//! without spending an attempt (`kairos_store::concurrency`).

use serde::{Deserialize, Serialize};

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The largest `max` a key may have (beyond it a limit means nothing: the node's own
/// concurrency is smaller).
pub const MAX_CONCURRENCY: u32 = 10_000;

/// What marks a stored key as failed: a control character, which a valid key cannot hold.
const FAILED: char = '\u{1}';

/// A job's concurrency limit: its rendered key and how many jobs of that key may run at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    /// The rendered key (or a failed key, see [`Concurrency::failed`]).
    pub key: String,
    /// At most this many jobs with the key run at once (1 ..= [`MAX_CONCURRENCY`]).
    pub max: u32,
}

impl Concurrency {
    /// A key that could not be made (`reason` says why): the job fails permanently.
    pub fn failed(reason: &str, max: u32) -> Concurrency {
        Concurrency {
            key: format!("{FAILED}{reason}"),
            max,
        }
    }

    /// A rendered key: kept when valid, otherwise a failed key saying why.
    pub fn rendered(key: String, max: u32) -> Concurrency {
        match key_problem(&key) {
            None => Concurrency { key, max },
            Some(why) => Concurrency::failed(&why, max),
        }
    }

    /// Why this job's key cannot be enforced, if it cannot (the job then fails permanently).
    pub fn problem(&self) -> Option<String> {
        match self.key.strip_prefix(FAILED) {
            Some(reason) => Some(reason.to_string()),
            None => key_problem(&self.key).or_else(|| {
                (!(1..=MAX_CONCURRENCY).contains(&self.max))
                    .then(|| format!("max {} is not between 1 and {MAX_CONCURRENCY}", self.max))
            }),
        }
    }

    /// Whether the stores should take a slot for it (a valid key).
    pub fn is_enforceable(&self) -> bool {
        self.problem().is_none()
    }
}

/// A concurrency limit as a request gives it (`"concurrency": {"key": "...", "max": N}`) and
/// a schedule stores it: `key` is a template over the job's `payload` (and, for audience
/// jobs, its `recipient`), rendered when each job is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ConcurrencyBody))]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySpec {
    /// The key: text with `{{ payload.… }}` / `{{ recipient.id }}` expressions; rendered, 1 to
    /// 128 bytes without control characters.
    pub key: String,
    /// At most this many jobs with one key run at once, across every node (1 to 10000).
    pub max: i64,
}

/// Why `key` is not a valid concurrency key, if it is not.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        Some("the concurrency key rendered empty".into())
    } else if key.len() > MAX_KEY_BYTES {
        Some(format!(
            "the concurrency key rendered to {} bytes (at most {MAX_KEY_BYTES})",
            key.len()
        ))
    } else if key.chars().any(char::is_control) {
        Some("the concurrency key has control characters".into())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_key_is_enforceable() {
        let c = Concurrency::rendered("account:42".into(), 2);
        assert_eq!(c.key, "account:42");
        assert_eq!(c.problem(), None);
        assert!(c.is_enforceable());
    }

    #[test]
    fn empty_long_and_control_keys_fail_saying_why() {
        for (key, why) in [
            ("", "empty"),
            (&"x".repeat(MAX_KEY_BYTES + 1)[..], "129 bytes"),
            ("a\nb", "control"),
        ] {
            let c = Concurrency::rendered(key.to_string(), 1);
            let p = c.problem().expect("a problem");
            assert!(p.contains(why), "{p}");
            assert!(!c.is_enforceable());
        }
        assert!(Concurrency::rendered("x".repeat(MAX_KEY_BYTES), 1).is_enforceable());
    }

    #[test]
    fn a_failed_key_keeps_its_reason_and_no_valid_key_equals_it() {
        let c = Concurrency::failed("undefined value payload.account_id", 1);
        assert_eq!(
            c.problem().as_deref(),
            Some("undefined value payload.account_id")
        );
        assert!(key_problem(&c.key).is_some());
    }

    #[test]
    fn a_max_out_of_range_is_a_problem() {
        assert!(Concurrency::rendered("k".into(), 0).problem().is_some());
        assert!(
            Concurrency::rendered("k".into(), MAX_CONCURRENCY + 1)
                .problem()
                .is_some()
        );
    }
}
