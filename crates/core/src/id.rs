//! Prefixed, time-ordered ids, as Stripe and Svix show them: a pasted id says what it is.
//!
//! The body is a UUIDv7 (time-ordered, so new rows cluster at the end of the index) in
//! lowercase hex without dashes. The timestamp part comes from the injected clock.

use chrono::{DateTime, Utc};
use uuid::{Timestamp, Uuid};

/// What an id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdPrefix {
    /// A job: `job_…`.
    Job,
    /// A schedule: `sch_…`.
    Schedule,
    /// A webhook endpoint: `ep_…`.
    Endpoint,
    /// An attempt: `att_…`.
    Attempt,
    /// A lease token: `lease_…`.
    Lease,
    /// A worker node: `node_…`.
    Node,
    /// An HTTP call target (`http` jobs): `ht_…`.
    HttpTarget,
    /// A scoped API token: `tok_…`.
    Token,
}

impl IdPrefix {
    /// The prefix text including the underscore.
    pub fn as_str(self) -> &'static str {
        match self {
            IdPrefix::Job => "job_",
            IdPrefix::Schedule => "sch_",
            IdPrefix::Endpoint => "ep_",
            IdPrefix::Attempt => "att_",
            IdPrefix::Lease => "lease_",
            IdPrefix::Node => "node_",
            IdPrefix::HttpTarget => "ht_",
            IdPrefix::Token => "tok_",
        }
    }
}

/// A new id with `prefix`, time-ordered by `now`.
pub fn new_id(prefix: IdPrefix, now: DateTime<Utc>) -> String {
    let secs = now.timestamp().max(0) as u64;
    let nanos = now.timestamp_subsec_nanos();
    let ts = Timestamp::from_unix(uuid::NoContext, secs, nanos);
    let id = Uuid::new_v7(ts);
    format!("{}{}", prefix.as_str(), id.simple())
}

/// Whether `id` is a well-formed id of kind `prefix` (used to reject pasted garbage early).
pub fn is_valid(prefix: IdPrefix, id: &str) -> bool {
    id.strip_prefix(prefix.as_str())
        .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_unique_and_time_ordered() {
        let t0 = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let t1 = t0 + chrono::Duration::milliseconds(1);
        let a = new_id(IdPrefix::Job, t0);
        let b = new_id(IdPrefix::Job, t0);
        let c = new_id(IdPrefix::Job, t1);
        assert!(a.starts_with("job_"));
        assert_ne!(a, b);
        assert!(c > a && c > b);
        assert!(is_valid(IdPrefix::Job, &a));
        assert!(!is_valid(IdPrefix::Schedule, &a));
        assert!(!is_valid(IdPrefix::Job, "job_xyz"));
    }
}
