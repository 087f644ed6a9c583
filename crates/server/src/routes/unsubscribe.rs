//! `/unsubscribe`: the RFC 8058 one-click unsubscribe.
//!
//! - `GET /unsubscribe?token=…` shows a small confirmation page with a button and changes
//!   nothing: mail scanners and link previews fetch GETs.
//! - `POST /unsubscribe?token=…` with the body `List-Unsubscribe=One-Click` (form-urlencoded,
//!   as mail clients send it, or multipart/form-data) unsubscribes the recipient from the
//!   token's topic and answers 200 — never a redirect. The same POST again is 200 and changes
//!   nothing.
//! - A forged, tampered or unknown-key token is 400 and changes nothing.
//!
//! The token is the email helper's HMAC over (recipient, topic) with a key id
//! ([`kairos_channels::email::unsubscribe`]), verified against `KAIROS_UNSUBSCRIBE_SECRET` and
//! `KAIROS_UNSUBSCRIBE_OLD_SECRETS`, so links in old mails keep working after a rotation.
//! Pages never show the address. Served in maintenance mode.

use crate::AppState;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use kairos_channels::email::unsubscribe::verify;
use serde::Deserialize;

/// The routes (mounted at the root).
pub fn router() -> Router<AppState> {
    Router::new().route("/unsubscribe", get(show).post(confirm))
}

/// The query: the token of the `List-Unsubscribe` URL.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TokenQuery {
    /// The signed token.
    pub token: Option<String>,
}

/// An unsubscribe page (`unsubscribe.html`: `which` picks its paragraph, minijinja escapes the
/// topic and token), never cached.
fn page(status: StatusCode, title: &str, which: &str, topic: &str, token: &str) -> Response {
    let mut res = crate::pages::page(
        status,
        "unsubscribe.html",
        minijinja::context! { title => title, page => which, topic => topic, token => token },
    );
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    res
}

fn bad_token() -> Response {
    page(StatusCode::BAD_REQUEST, "Invalid link", "invalid", "", "")
}

/// The (recipient, topic) of a valid token; `None` (answered with [`bad_token`]) otherwise.
fn check(state: &AppState, token: Option<&str>) -> Option<(String, String)> {
    let token = token.filter(|t| !t.is_empty() && t.len() <= 2048)?;
    verify(&state.inbound.unsubscribe, token)
        .map_err(|e| tracing::warn!(reason = %e, "unsubscribe token refused"))
        .ok()
}

/// The confirmation page (changes nothing).
#[utoipa::path(operation_id = "unsubscribe_show", get, path = "/unsubscribe", tag = "inbound", params(TokenQuery),
    responses(
        (status = 200, description = "A page with a button that POSTs the one-click form", content_type = "text/html"),
        (status = 400, description = "A forged or tampered token", content_type = "text/html"),
    ))]
pub async fn show(State(state): State<AppState>, Query(q): Query<TokenQuery>) -> Response {
    let Some((_, topic)) = check(&state, q.token.as_deref()) else {
        return bad_token();
    };
    let token = q.token.unwrap_or_default();
    page(StatusCode::OK, "Unsubscribe", "confirm", &topic, &token)
}

/// Whether a form body (urlencoded or multipart) carries `List-Unsubscribe=One-Click`.
async fn one_click(headers: &HeaderMap, body: Bytes) -> bool {
    let ctype = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if ctype
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        return multipart_one_click(ctype, body).await;
    }
    // application/x-www-form-urlencoded (also when a client omits the content type).
    form_pairs(&body).any(|(k, v)| k == "List-Unsubscribe" && v.trim() == "One-Click")
}

/// The pairs of an urlencoded form body (`url`'s WHATWG decoder; bad escapes are kept as
/// written, so they never match).
fn form_pairs(body: &[u8]) -> impl Iterator<Item = (String, String)> + '_ {
    url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned()))
}

/// The part named `List-Unsubscribe` of a multipart body is `One-Click` (axum's multipart
/// reader, multer, does the parsing).
async fn multipart_one_click(ctype: String, body: Bytes) -> bool {
    use axum::extract::{FromRequest, Multipart};
    let Ok(req) = axum::http::Request::builder()
        .header(header::CONTENT_TYPE, ctype)
        .body(axum::body::Body::from(body))
    else {
        return false;
    };
    let Ok(mut form) = Multipart::from_request(req, &()).await else {
        return false;
    };
    // Bounded: a form of more than 16 parts is not a mail client's one-click request.
    for _ in 0..16 {
        match form.next_field().await {
            Ok(Some(field)) => {
                let named = field
                    .name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("List-Unsubscribe"));
                if named {
                    return field.text().await.is_ok_and(|v| v.trim() == "One-Click");
                }
            }
            Ok(None) | Err(_) => return false,
        }
    }
    false
}

/// The one-click unsubscribe (RFC 8058): 200, never a redirect.
#[utoipa::path(operation_id = "unsubscribe_confirm", post, path = "/unsubscribe", tag = "inbound", params(TokenQuery),
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "`List-Unsubscribe=One-Click` (multipart/form-data is accepted too)"),
    responses(
        (status = 200, description = "Unsubscribed (also when it already was)", content_type = "text/html"),
        (status = 400, description = "A forged or tampered token, or no `List-Unsubscribe=One-Click`", content_type = "text/html"),
    ))]
pub async fn confirm(
    State(state): State<AppState>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let token = q.token.clone().or_else(|| {
        form_pairs(&body)
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v)
    });
    let Some((recipient, topic)) = check(&state, token.as_deref()) else {
        return bad_token();
    };
    if !one_click(&headers, body).await {
        return page(
            StatusCode::BAD_REQUEST,
            "Not unsubscribed",
            "not_one_click",
            &topic,
            "",
        );
    }
    match state.kairos.unsubscribe(&recipient, &topic).await {
        Ok(_) => page(StatusCode::OK, "Unsubscribed", "done", &topic, ""),
        Err(e) => {
            tracing::error!(error = %e, "one-click unsubscribe failed");
            page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "retry",
                "",
                "",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(res: Response) -> String {
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .expect("body");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    /// A topic name reaches the confirmation page and the done page escaped (the template
    /// engine's auto-escaping), the token in the form's action too; pages are never cached.
    #[tokio::test]
    async fn topic_and_token_are_escaped_and_pages_not_cached() {
        let topic = "<script>alert(\"x\")</script> & co";
        let res = page(StatusCode::OK, "Unsubscribe", "confirm", topic, "v1.\"a&b");
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
        let ct = res.headers()[header::CONTENT_TYPE].to_str().expect("ASCII");
        assert!(ct.starts_with("text/html"), "{ct}");
        let html = body(res).await;
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains(
                "<strong>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co</strong>"
            ),
            "{html}"
        );
        assert!(
            html.contains("action=\"/unsubscribe?token=v1.&quot;a&amp;b\""),
            "{html}"
        );
        let done = body(page(StatusCode::OK, "Unsubscribed", "done", topic, "")).await;
        assert!(
            done.contains("no longer receive <strong>&lt;script&gt;"),
            "{done}"
        );
        let bad = bad_token();
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        assert_eq!(bad.headers()[header::CACHE_CONTROL], "no-store");
        assert!(
            body(bad)
                .await
                .contains("<h1>Invalid link</h1><p>This unsubscribe link is not valid.")
        );
    }
}
