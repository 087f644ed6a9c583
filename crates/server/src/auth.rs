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
use crate::scope::{self, Scope};
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

/// The middleware: pass the request on with the node's token (scope `admin`) or a scoped
/// token whose scope allows it ([`crate::scope`]: 403 naming the scope needed otherwise), else
/// 401 (429 while the source address is backing off after wrong tokens).
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
        })
        .map(str::to_string);
    let Some(t) = presented else {
        return unauthorized();
    };
    if state.token.matches(&t) {
        return next.run(req).await;
    }
    let now = state.kairos.clock().now();
    let hash = scope::token_hash(&t);
    let scoped = match state.kairos.store().api_token_get(&hash).await {
        Ok(found) => found.filter(|r| r.revoked_at.is_none()),
        Err(e) => {
            tracing::error!(error = %e, "reading scoped API tokens failed");
            return Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Unavailable",
                "the token could not be checked: the database did not answer",
            )
            .into_response();
        }
    };
    if let Some(record) = scoped {
        let has = Scope::parse(&record.scope).unwrap_or(Scope::Read);
        let needs = Scope::needed(req.method(), req.uri().path());
        if has < needs {
            return Problem::new(
                StatusCode::FORBIDDEN,
                "insufficient-scope",
                "Insufficient scope",
                format!(
                    "this token's scope is `{}`; {} {} needs `{}`",
                    has.as_str(),
                    req.method(),
                    req.uri().path(),
                    needs.as_str()
                ),
            )
            .into_response();
        }
        let touch = kairos_store::ApiTokenTouch {
            token_hash: hash,
            now,
            skip_after: now - chrono::Duration::seconds(60),
        };
        if let Err(e) = state.kairos.store().api_token_touch(touch).await {
            tracing::warn!(error = %e, token = %record.name, "recording a token's use failed");
        }
        return next.run(req).await;
    }
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
    unauthorized()
}

/// A 401 asking for a bearer token.
fn unauthorized() -> Response {
    let mut res = Problem::unauthorized().into_response();
    res.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    res
}
