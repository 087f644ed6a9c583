//! Bearer-token authentication of `/v1/…`: a middleware that answers 401 (problem+json)
//! unless `Authorization: Bearer <token>` matches, compared in constant time. Wrong tokens
//! are counted per source address with the admin login's backoff
//! ([`crate::admin::login_limit`]): past a few, that address's wrong tokens are answered 429
//! with `Retry-After` until its wait is over. Valid tokens are never slowed, from any address
//! (a client sharing an address with a guesser keeps working; the token is too long to guess
//! in any number of attempts, so the backoff is about the noise, not the odds), and a request
//! without a token is a 401 (it guesses nothing).

use crate::AppState;
use crate::admin::SourceAddr;
use crate::problem::Problem;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr};
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

/// The middleware: pass the request on with a valid bearer token, else 401 (429 while the
/// source address is backing off after wrong tokens).
pub async fn require_token(
    State(state): State<AppState>,
    SourceAddr(source): SourceAddr,
    req: Request,
    next: Next,
) -> Response {
    let presented = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    if let Some(t) = presented
        && !state.token.matches(t)
    {
        let now = state.kairos.clock().now();
        let addr = source.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if let Err(wait) = state.bearer_limiter.check(addr, now) {
            let mut res = Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-attempts",
                "Too many wrong tokens",
                format!("too many wrong bearer tokens from your address; retry in {wait} seconds"),
            )
            .into_response();
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(wait));
            return res;
        }
        state.bearer_limiter.failed(addr, now);
    }
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
