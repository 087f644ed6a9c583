//! Admin sessions and CSRF protection, both stateless HMACs under a key derived from the API
//! token (so rotating the token logs every operator out).
//!
//! - The session cookie is `<expires unix seconds>.<hex HMAC("session", expires)>`, `HttpOnly`,
//!   `SameSite=Strict`, scoped to `/admin`.
//! - Every form carries `csrf` = hex HMAC("csrf", session cookie). A POST without the cookie's
//!   own CSRF value is refused: another site cannot read the cookie, so it cannot forge it.
//!
//! Time comes from the engine's clock, not the system clock, like everything else.

use crate::AppState;
use crate::admin::Admin;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Name of the session cookie.
pub const COOKIE: &str = "kairos_admin";
/// How long a login lasts.
pub const SESSION_SECS: i64 = 12 * 3600;

/// The key sessions and CSRF tokens are signed with.
#[derive(Clone)]
pub struct SessionKey([u8; 32]);

impl SessionKey {
    /// A key derived from `secret` (the API token).
    pub fn derive(secret: &[u8]) -> Self {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"kairos admin session v1")
            .expect("HMAC takes any key length");
        mac.update(secret);
        SessionKey(mac.finalize().into_bytes().into())
    }

    fn sign(&self, purpose: &str, value: &str) -> String {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(purpose.as_bytes());
        mac.update(b"\0");
        mac.update(value.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// A session cookie value valid until `expires` (unix seconds).
    pub fn session_value(&self, expires: i64) -> String {
        format!("{expires}.{}", self.sign("session", &expires.to_string()))
    }

    /// Whether `value` is a session this key issued that has not expired at `now` (unix s).
    pub fn session_valid(&self, value: &str, now: i64) -> bool {
        let Some((exp, sig)) = value.split_once('.') else {
            return false;
        };
        let Ok(expires) = exp.parse::<i64>() else {
            return false;
        };
        let want = self.sign("session", exp);
        expires > now && bool::from(want.as_bytes().ct_eq(sig.as_bytes()))
    }

    /// The CSRF token of a session.
    pub fn csrf_for(&self, session: &str) -> String {
        self.sign("csrf", session)
    }
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(…)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in `headers`.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A logged-in operator: the extractor every admin page but the login page takes. Without a
/// valid session the request is answered 401 with the login page, never with data.
#[derive(Debug, Clone)]
pub struct Operator {
    /// The CSRF token forms of this session must carry.
    pub csrf: String,
    admin: Arc<Admin>,
}

impl Operator {
    /// Whether `presented` is this session's CSRF token.
    pub fn csrf_ok(&self, presented: &str) -> bool {
        bool::from(self.csrf.as_bytes().ct_eq(presented.as_bytes()))
    }

    /// The admin UI's shared parts.
    pub fn admin(&self) -> &Arc<Admin> {
        &self.admin
    }

    /// Render a page of this session: `ctx` plus the CSRF token and the SLO warning banner
    /// (the monitor's stored alert state, so every page shows a warning while it is active,
    /// S3-17).
    pub async fn page(&self, state: &AppState, name: &str, ctx: minijinja::Value) -> Response {
        let warnings: Vec<minijinja::Value> = match state.kairos.store().slo_alert_list().await {
            Ok(alerts) => alerts
                .into_iter()
                .filter(|a| a.active)
                .map(|a| minijinja::context! { key => a.key, message => a.message, since => a.since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) })
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "admin: SLO alert state unreadable");
                Vec::new()
            }
        };
        self.admin.page(
            name,
            minijinja::context! { csrf => self.csrf.clone(), slo_warnings => warnings, ..ctx },
        )
    }
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let admin = parts
            .extensions
            .get::<Arc<Admin>>()
            .cloned()
            .ok_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response())?;
        let now = state.kairos.clock().now().timestamp();
        match cookie(&parts.headers, COOKIE) {
            Some(v) if admin.key.session_valid(v, now) => Ok(Operator {
                csrf: admin.key.csrf_for(v),
                admin,
            }),
            _ => Err(login_page(&admin, StatusCode::UNAUTHORIZED, None)),
        }
    }
}

/// The login page with `status` and an optional error line.
pub fn login_page(admin: &Admin, status: StatusCode, error: Option<&str>) -> Response {
    admin.page_with_status(status, "login.html", minijinja::context! { error => error })
}

/// A 403 for a form without its session's CSRF token.
pub fn csrf_refused() -> Response {
    (
        StatusCode::FORBIDDEN,
        Html("<!doctype html><title>Forbidden</title><p>This form is out of date or was not sent by the kairos admin. Go back, reload the page and try again.</p>".to_string()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_is_valid_until_it_expires_and_not_under_another_key() {
        let k = SessionKey::derive(b"token-a");
        let v = k.session_value(1_000);
        assert!(k.session_valid(&v, 999));
        assert!(!k.session_valid(&v, 1_000), "expired at its instant");
        assert!(!SessionKey::derive(b"token-b").session_valid(&v, 999));
        assert!(!k.session_valid("2000.deadbeef", 999), "forged signature");
        assert!(!k.session_valid("garbage", 999));
        let tampered = v.replacen("1000", "9999", 1);
        assert!(!k.session_valid(&tampered, 999), "extended expiry");
    }

    #[test]
    fn csrf_token_is_bound_to_the_session() {
        let k = SessionKey::derive(b"t");
        assert_ne!(k.csrf_for("1.a"), k.csrf_for("1.b"));
        assert_eq!(k.csrf_for("1.a"), k.csrf_for("1.a"));
    }

    #[test]
    fn cookie_parses_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            "a=1; kairos_admin=5.ff; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&h, COOKIE), Some("5.ff"));
        assert_eq!(cookie(&h, "c"), None);
    }
}
