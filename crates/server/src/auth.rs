//! Bearer-token authentication of `/v1/…`: a middleware that answers 401 (problem+json)
//! unless `Authorization: Bearer <token>` matches, compared in constant time.

use crate::AppState;
use crate::problem::Problem;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The API token. Its `Debug` never shows it.
#[derive(Clone)]
pub struct ApiToken(String);

impl ApiToken {
    /// A token (must not be empty: [`crate::config`] checks it).
    pub fn new(token: impl Into<String>) -> Self {
        ApiToken(token.into())
    }

    /// The token's bytes, for deriving keys from it (the admin session key).
    pub(crate) fn secret_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        !self.0.is_empty() && bool::from(self.0.as_bytes().ct_eq(presented.as_bytes()))
    }
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

/// The middleware: pass the request on with a valid bearer token, else 401.
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    match presented {
        Some(t) if state.token.matches(t) => next.run(req).await,
        _ => {
            let mut res = Problem::unauthorized().into_response();
            res.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            res
        }
    }
}
