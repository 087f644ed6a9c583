//! Security headers on the HTML pages people open in a browser (`/admin`, `/unsubscribe`):
//! no framing (`X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`, against
//! clickjacking the replay and unsubscribe buttons), no MIME sniffing, and no `Referer` that
//! would carry an unsubscribe token or an admin URL to another site.

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::Response;

/// The headers every browser page gets, as (name, value).
pub const SECURITY_HEADERS: &[(HeaderName, &str)] = &[
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::CONTENT_SECURITY_POLICY, "frame-ancestors 'none'"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
];

/// Middleware (`axum::middleware::map_response`): add [`SECURITY_HEADERS`] to a response,
/// keeping a value a handler set itself.
pub async fn security_headers(mut res: Response) -> Response {
    let headers = res.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), HeaderValue::from_static(value));
        }
    }
    res
}
