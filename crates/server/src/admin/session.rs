//! Admin sessions and CSRF protection.
//!
//! - A login stores a session row (`admin_sessions`: the SHA-256 of a random session id, its
//!   creation and expiry) and sets the cookie `<id>.<hex HMAC("session", id)>`, `HttpOnly`,
//!   `SameSite=Strict`, scoped to `/admin`, and `Secure` when `KAIROS_PUBLIC_URL` is https.
//! - A request has a session when the cookie's signature is valid under the key derived from
//!   the API token (so rotating the token logs every operator out) and its row exists and has
//!   not expired. Logout deletes the row: the old cookie, and its CSRF token, open nothing
//!   afterwards, on every node and after a restart.
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
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
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

    /// A new random session id (32 bytes, base64url).
    pub fn new_session_id() -> String {
        let bytes: [u8; 32] = rand::random();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The cookie value of session `id`.
    pub fn session_value(&self, id: &str) -> String {
        format!("{id}.{}", self.sign("session", id))
    }

    /// The session id of a cookie value this key signed; `None` for anything else. Whether
    /// the session still exists is the store's to say.
    pub fn session_id<'a>(&self, value: &'a str) -> Option<&'a str> {
        let (id, sig) = value.split_once('.')?;
        if id.is_empty() || id.len() > 64 {
            return None;
        }
        let want = self.sign("session", id);
        bool::from(want.as_bytes().ct_eq(sig.as_bytes())).then_some(id)
    }

    /// The CSRF token of a session.
    pub fn csrf_for(&self, session: &str) -> String {
        self.sign("csrf", session)
    }
}

/// What the store keeps of session `id`: its hex SHA-256 (a copy of the database opens no
/// session).
pub fn id_hash(id: &str) -> String {
    hex(&Sha256::digest(id.as_bytes()))
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
    /// The stored session's key ([`id_hash`] of its id): logout deletes it.
    pub session_hash: String,
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
    /// (the monitor's stored alert state, so every page shows a warning while it is active).
    pub async fn page(&self, state: &AppState, name: &str, ctx: minijinja::Value) -> Response {
        let warnings: Vec<minijinja::Value> = match state.kairos.store().slo_alert_list().await {
            Ok(alerts) => alerts
                .into_iter()
                .filter(|a| a.active)
                .map(|a| {
                    // The key is `check` or `check:subject`; the subject (a schedule or
                    // endpoint id) becomes a link on the banner.
                    let subject = a.key.split_once(':').map(|(_, s)| s.to_string());
                    minijinja::context! { key => a.key, subject, message => a.message, since => a.since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) }
                })
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
        let refused = || login_page(&admin, StatusCode::UNAUTHORIZED, None);
        let Some(value) = cookie(&parts.headers, COOKIE) else {
            return Err(refused());
        };
        let Some(id) = admin.key.session_id(value) else {
            return Err(refused());
        };
        let hash = id_hash(id);
        let now = state.kairos.clock().now();
        match state.kairos.store().admin_session_get(&hash).await {
            Ok(Some(s)) if s.expires_at > now => Ok(Operator {
                csrf: admin.key.csrf_for(value),
                session_hash: hash,
                admin,
            }),
            Ok(_) => Err(refused()),
            Err(e) => {
                tracing::error!(error = %e, "admin: reading the session failed");
                Err(StatusCode::SERVICE_UNAVAILABLE.into_response())
            }
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
    fn session_cookie_is_signed_and_not_valid_under_another_key() {
        let k = SessionKey::derive(b"token-a");
        let id = SessionKey::new_session_id();
        assert_eq!(id.len(), 43);
        let v = k.session_value(&id);
        assert_eq!(k.session_id(&v), Some(id.as_str()));
        assert_eq!(SessionKey::derive(b"token-b").session_id(&v), None);
        assert_eq!(k.session_id("abc.deadbeef"), None, "forged signature");
        assert_eq!(k.session_id("garbage"), None);
        let tampered = format!("x{v}");
        assert_eq!(k.session_id(&tampered), None, "another id");
        assert_ne!(id_hash(&id), id, "the store never sees the id");
        assert_eq!(id_hash(&id).len(), 64);
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
