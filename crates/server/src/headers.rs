//! Security headers on the HTML pages people open in a browser (`/admin`, `/unsubscribe`, an
//! artifact's page): no framing (`X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`,
//! against clickjacking the replay and unsubscribe buttons), no script at all (CSP
//! `script-src 'none'`: the pages are plain forms; their one inline `<style>` is allowed), no
//! MIME sniffing, no `Referer` that would carry an unsubscribe token or an admin URL to
//! another site, and `Cache-Control: no-store` (an admin page or an unsubscribe link must not
//! stay in a shared or back-button cache).

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::Response;

/// The policy of the admin and unsubscribe pages: same-origin forms and an inline style.
pub const PAGE_CSP: &str = "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The policy of an artifact's page, whose text comes from feeds: nothing loads, nothing
/// runs, no form posts; only its inline style applies.
pub const ARTIFACT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

/// The headers every browser page gets, as (name, value), the policy aside.
pub const SECURITY_HEADERS: &[(HeaderName, &str)] = &[
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::CACHE_CONTROL, "no-store"),
];

/// Add [`SECURITY_HEADERS`] and the content security policy `csp` to `res`, keeping a value
/// a handler set itself.
pub fn with_security_headers(mut res: Response, csp: &'static str) -> Response {
    let headers = res.headers_mut();
    for (name, value) in SECURITY_HEADERS
        .iter()
        .chain([&(header::CONTENT_SECURITY_POLICY, csp)])
    {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), HeaderValue::from_static(value));
        }
    }
    res
}

/// Middleware (`axum::middleware::map_response`): [`with_security_headers`] with
/// [`PAGE_CSP`].
pub async fn security_headers(res: Response) -> Response {
    with_security_headers(res, PAGE_CSP)
}
