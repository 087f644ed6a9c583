//! Errors as `application/problem+json` (RFC 9457), and the extractors that make sure axum's
//! plain-text rejections never reach a user: [`ApiJson`] for bodies, [`ApiQuery`] for query
//! strings.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kairos_engine::{OpsError, OpsErrorKind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

/// Seconds a client is told to wait (`Retry-After`) when the database is unavailable.
pub const RETRY_AFTER_SECS: u64 = 2;

/// A problem document: what went wrong, for a human and for a program.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem (`urn:kairos:problem:invalid`).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong in this request.
    pub detail: String,
    /// The request field that was wrong (dotted path), for validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl Problem {
    /// A problem with `status`, a `slug` naming its kind, a title and a detail.
    pub fn new(status: StatusCode, slug: &str, title: &str, detail: impl Into<String>) -> Self {
        Problem {
            kind: format!("urn:kairos:problem:{slug}"),
            title: title.to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
        }
    }

    /// 400: the body or query could not be read.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "malformed",
            "Malformed request",
            detail,
        )
    }

    /// 422: `field` is not valid because of `reason`.
    pub fn invalid(field: &str, reason: &str) -> Self {
        let mut p = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "Invalid field",
            format!("{field}: {reason}"),
        );
        p.field = Some(field.to_string());
        p
    }

    /// 401: no valid bearer token.
    pub fn unauthorized() -> Self {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Unauthorized",
            "a valid `Authorization: Bearer <token>` header is required",
        )
    }

    /// 404 for a path that matches no route.
    pub fn no_route() -> Self {
        Problem::new(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            "no such route",
        )
    }

    /// 500: the detail never shows internals (they are logged).
    pub fn internal() -> Self {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            "an internal error occurred; it was logged",
        )
    }

    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| b"{}".to_vec());
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if status == StatusCode::SERVICE_UNAVAILABLE {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        res
    }
}

/// The slug and title of a problem made from a bare status (see [`plain_errors_as_problems`]).
fn status_kind(status: StatusCode) -> (String, String) {
    let slug = match status {
        StatusCode::BAD_REQUEST => "malformed".to_string(),
        StatusCode::NOT_FOUND => "not-found".to_string(),
        StatusCode::METHOD_NOT_ALLOWED => "method-not-allowed".to_string(),
        StatusCode::PAYLOAD_TOO_LARGE => "too-large".to_string(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported-media-type".to_string(),
        StatusCode::REQUEST_TIMEOUT => "timeout".to_string(),
        s => format!("http-{}", s.as_u16()),
    };
    let title = status.canonical_reason().unwrap_or("Error").to_string();
    (slug, title)
}

/// Largest plain-text error body read back to become a problem's detail.
const PLAIN_DETAIL_MAX: usize = 4096;

/// A middleware for the whole application: an error response (4xx or 5xx) that is plain
/// text or has no content type — axum's own rejections (a body over the limit on
/// `/hooks/*` or `/unsubscribe`, a malformed query), its 404 and 405 — becomes an
/// `application/problem+json` document like `/v1`'s, with the same status and headers (an
/// `Allow` stays). HTML pages (`/admin`, `/unsubscribe`) and problems pass through untouched.
pub async fn plain_errors_as_problems(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let res = next.run(req).await;
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let plain = match res.headers().get(header::CONTENT_TYPE) {
        None => true,
        Some(v) => v
            .to_str()
            .map(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("text/plain")
            })
            .unwrap_or(false),
    };
    if !plain {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, PLAIN_DETAIL_MAX)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let (slug, title) = status_kind(status);
    let detail = if status == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "the request body is larger than {} bytes",
            crate::BODY_LIMIT
        )
    } else if text.is_empty() {
        title.to_lowercase()
    } else {
        text
    };
    let problem = Problem::new(status, &slug, &title, detail).into_response();
    let (problem_parts, problem_body) = problem.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in problem_parts.headers.iter() {
        parts.headers.insert(name.clone(), value.clone());
    }
    Response::from_parts(parts, problem_body)
}

impl From<OpsError> for Problem {
    fn from(e: OpsError) -> Self {
        match e.kind() {
            OpsErrorKind::Invalid { field, reason } => Problem::invalid(field, reason),
            // As serde's refusal of the body: an unknown field, a kind's part of the wrong shape.
            OpsErrorKind::Malformed { .. } => {
                Problem::bad_request(format!("invalid JSON body: {}", e.message()))
            }
            OpsErrorKind::NotFound => {
                Problem::new(StatusCode::NOT_FOUND, "not-found", "Not found", e.message())
            }
            OpsErrorKind::Conflict => {
                Problem::new(StatusCode::CONFLICT, "conflict", "Conflict", e.message())
            }
            OpsErrorKind::Unavailable => {
                // The database, or a dependency such as the template workers: the chain says which.
                tracing::warn!(error = %kairos_core::error_chain(&e), "service unavailable");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "Service unavailable",
                    format!("{}; try again shortly", e.message()),
                )
            }
            _ => {
                tracing::error!(error = %kairos_core::error_chain(&e), "internal error");
                Problem::internal()
            }
        }
    }
}

/// The result of a handler.
pub type ApiResult<T> = Result<T, Problem>;

/// A JSON body, read whatever the `content-type` (so `curl -d` works), with errors as
/// problems: malformed JSON and unknown fields are 400 with serde's message, a body over
/// the limit is 413.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

fn body_problem(rejection: axum::extract::rejection::BytesRejection) -> Problem {
    let status = rejection.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        Problem::new(
            status,
            "too-large",
            "Body too large",
            format!(
                "the request body is larger than {} bytes",
                crate::BODY_LIMIT
            ),
        )
    } else {
        Problem::bad_request(format!("could not read the request body: {rejection}"))
    }
}

/// Parse `bytes` as JSON into `T`, or a 400 problem with serde's message. Every body of the
/// API is a JSON object: an array is refused too (serde would read it as the struct's fields
/// in order, which the API does not document).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(Problem::bad_request(
            "invalid JSON body: the body must be a JSON object",
        ));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| Problem::bad_request(format!("invalid JSON body: {e}")))
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(body_problem)?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// An optional JSON body: an empty body is `None`.
#[derive(Debug, Clone)]
pub struct OptionalJson<T>(pub Option<T>);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(body_problem)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        parse_json(&bytes).map(|v| OptionalJson(Some(v)))
    }
}

/// A query string, with errors as 400 problems.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| Problem::bad_request(e.body_text()))
    }
}
