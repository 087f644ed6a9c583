//! Scoped API tokens (`kairos token create --name ci --scope read|write|admin`): besides the
//! node's own token (the bootstrap token, scope `admin`), `/v1` accepts tokens stored hashed
//! in the database, each with a scope:
//!
//! - `read`: `GET` and `HEAD`;
//! - `write`: every request but the operator's own ones below;
//! - `admin`: everything, including what changes who gets mail or where it goes: suppressions
//!   (add, remove), erasing a recipient (`DELETE /v1/recipients/{id}`), enabling an endpoint
//!   and rotating its secret.
//!
//! A request beyond a token's scope is a 403 naming the scope it needs; a revoked token is a
//! 401 like an unknown one. A token's last use is recorded at most once a minute.

use sha2::{Digest, Sha256};

/// What a token may do; ordered, each scope allowing what the lower ones do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Reading.
    Read,
    /// Reading and changing work (schedules, jobs, recipients, topics …).
    Write,
    /// Everything.
    Admin,
}

impl Scope {
    /// The scopes by name, as `kairos token create --scope` takes them.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// The scope named `s`.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s.trim())
    }

    /// The scope a `/v1` request needs; `path` with or without the `/v1` prefix.
    pub fn needed(method: &axum::http::Method, path: &str) -> Scope {
        use axum::http::Method;
        if [Method::GET, Method::HEAD, Method::OPTIONS].contains(method) {
            return Scope::Read;
        }
        let path = path.strip_prefix("/v1").unwrap_or(path);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["suppressions", ..] => Scope::Admin,
            ["recipients", _] if *method == Method::DELETE => Scope::Admin,
            ["endpoints", _, "enable" | "rotate"] => Scope::Admin,
            _ => Scope::Write,
        }
    }
}

/// What the store keeps of a token: its hex SHA-256 (the token is 32 random bytes, so a fast
/// hash is enough; a copy of the database opens nothing).
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn reads_need_read_operator_actions_need_admin_the_rest_write() {
        assert_eq!(Scope::needed(&Method::GET, "/v1/suppressions"), Scope::Read);
        assert_eq!(Scope::needed(&Method::POST, "/v1/schedules"), Scope::Write);
        assert_eq!(Scope::needed(&Method::POST, "/v1/jobs/batch"), Scope::Write);
        assert_eq!(Scope::needed(&Method::DELETE, "/jobs/job_1"), Scope::Write);
        assert_eq!(
            Scope::needed(&Method::PUT, "/v1/recipients/r1"),
            Scope::Write
        );
        assert_eq!(
            Scope::needed(&Method::DELETE, "/v1/recipients/r1"),
            Scope::Admin
        );
        assert_eq!(
            Scope::needed(&Method::POST, "/v1/suppressions"),
            Scope::Admin
        );
        assert_eq!(
            Scope::needed(&Method::DELETE, "/suppressions/a@b"),
            Scope::Admin
        );
        assert_eq!(
            Scope::needed(&Method::POST, "/v1/endpoints/ep_1/rotate"),
            Scope::Admin
        );
        assert_eq!(
            Scope::needed(&Method::POST, "/v1/endpoints/ep_1/enable"),
            Scope::Admin
        );
        assert!(Scope::Read < Scope::Write && Scope::Write < Scope::Admin);
        assert_eq!(Scope::parse("write"), Some(Scope::Write));
        assert_eq!(Scope::parse("root"), None);
        assert_eq!(token_hash("t").len(), 64);
    }
}
