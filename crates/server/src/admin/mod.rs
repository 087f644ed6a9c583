//! The admin UI at `/admin`: server-rendered pages for operators, no
//! single-page app. Every page but the login page needs a session ([`session::Operator`]);
//! every form carries a CSRF token bound to the session.
//!
//! - `/admin` — jobs by state, the SLO panel (a topic's deliverability rows link to its page)
//!   and a banner while a warning is active.
//! - `/admin/jobs` — jobs filtered on every axis at once (state, kind, channel, schedule,
//!   period, topic, recipient id, creation time), keyset-paginated so page 1,000 costs what page 1 costs;
//!   cancel or retry the ticked jobs, or all matching the filter after a confirmation with the
//!   count (`POST /admin/jobs/bulk`).
//! - `/admin/jobs/{id}` — the job with every attempt; replay and cancel.
//! - `/admin/dead` — dead jobs; replay one, or all matching a kind.
//! - `/admin/deliveries` — the delivery log: one row per (topic, recipient, target, period)
//!   with each channel's state, filtered like `GET /v1/deliveries`.
//! - `/admin/schedules` — schedules with their next five firings in their zone and in UTC;
//!   pause, resume, fire now.
//! - `/admin/schedules/{id}/occurrences` — each firing with its channels side by side and the
//!   derived status (success, partial, failure, skipped, cancelled, pending).
//! - `/admin/schedules/{id}` — one schedule: its target (http URL and method or webhook
//!   endpoint, credentials masked), payload, retry, channels, misfire rule, next firings in its
//!   zone and UTC, recent occurrences; pause, resume, fire, edit, delete
//!   (`/admin/schedules/new` and `/admin/schedules/{id}/edit` take the API's JSON body).
//! - `/admin/endpoints` — webhook endpoints with their health and disabled state; enable a
//!   disabled one again.
//! - `/admin/endpoints/{id}` — one endpoint: health and recent deliveries with the request
//!   sent and the response; resend one, send a test event, rotate the secret.
//! - `/admin/search` — a job, schedule or endpoint id opens its page; other text finds
//!   schedules by name and jobs by payload text.
//! - `/admin/running` — running jobs and the nodes holding them.
//! - `/admin/nodes` — every node's heartbeat: leader or not, last heartbeat, started, jobs
//!   running on it; a node silent for long is shown as gone.
//!
//! Every id on a page is a link to its page (job → schedule, occurrence, endpoint; SLO
//! messages' ids); the overview and the lists reload on their own when asked
//! (`?refresh=N`, a `<meta http-equiv=refresh>`, no JavaScript).
//! - `/admin/topics/{name}` — a topic's A/B variants with their mails sent, delivered,
//!   opened, clicked, bounced and complained.
//!
//! Stored values the code does not know (a state written by a newer version) render as
//! "unknown" and never break a page.

pub mod charts;
pub mod dashboard;
pub mod deliveries;
pub mod endpoint_page;
pub mod endpoints;
pub mod filters;
pub mod jobs;
pub mod login_limit;
pub mod nodes;
pub mod schedule_edit;
pub mod schedule_page;
pub mod schedules;
pub mod search;
pub mod session;
pub mod timeline;
pub mod topics;
pub mod views;

use crate::AppState;
use axum::Router;
use axum::extract::{Form, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use minijinja::Environment;
use serde::Deserialize;
use session::{COOKIE, SESSION_SECS, SessionKey, csrf_refused, login_page};
use std::sync::Arc;

/// What the admin pages share: the templates, the session key, the login backoff.
pub struct Admin {
    /// Signs sessions and CSRF tokens.
    pub key: SessionKey,
    /// Whether the session cookie is `Secure` (the public URL is https).
    pub secure_cookie: bool,
    /// Login attempts per source address.
    pub limiter: login_limit::LoginLimiter,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("login.html", include_str!("templates/login.html")),
    ("dashboard.html", include_str!("templates/dashboard.html")),
    ("jobs.html", include_str!("templates/jobs.html")),
    (
        "bulk_confirm.html",
        include_str!("templates/bulk_confirm.html"),
    ),
    ("job.html", include_str!("templates/job.html")),
    ("dead.html", include_str!("templates/dead.html")),
    ("schedules.html", include_str!("templates/schedules.html")),
    ("schedule.html", include_str!("templates/schedule.html")),
    (
        "schedule_form.html",
        include_str!("templates/schedule_form.html"),
    ),
    ("running.html", include_str!("templates/running.html")),
    ("nodes.html", include_str!("templates/nodes.html")),
    ("search.html", include_str!("templates/search.html")),
    ("refresh.html", include_str!("templates/refresh.html")),
    (
        "occurrences.html",
        include_str!("templates/occurrences.html"),
    ),
    ("endpoints.html", include_str!("templates/endpoints.html")),
    ("endpoint.html", include_str!("templates/endpoint.html")),
    ("topic.html", include_str!("templates/topic.html")),
    ("deliveries.html", include_str!("templates/deliveries.html")),
];

/// The admin templates, compiled at the first page rendered rather than at start-up: a node
/// whose admin UI is never opened does not hold them (nor run the template compiler) — part of
/// keeping an idle `kairos serve` small (`docs/benchmarks.md`).
static ENV: std::sync::LazyLock<Environment<'static>> = std::sync::LazyLock::new(|| {
    let mut env = Environment::new();
    // Templates are compiled into the binary and tested; a broken one is a build bug.
    for (name, src) in TEMPLATES {
        if let Err(e) = env.add_template(name, src) {
            tracing::error!(template = name, error = %e, "admin template does not parse");
        }
    }
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
    env.add_filter("truncate", truncate);
    env.add_filter("linkify", linkify);
    env.add_filter("text", text);
    env
});

/// Whether the admin templates have been compiled. They are compiled at the first admin page,
/// not when the server starts: a node whose admin UI nobody opens never holds them.
pub fn templates_compiled() -> bool {
    std::sync::LazyLock::get(&ENV).is_some()
}

impl Admin {
    /// The admin UI for a server whose API token is `token`.
    pub fn new(token: &crate::ApiToken) -> Self {
        Admin {
            key: SessionKey::derive(token.secret_bytes()),
            secure_cookie: false,
            limiter: login_limit::LoginLimiter::default(),
        }
    }

    /// Render `name` with `ctx` as a page with `status`; a rendering error is a 500 page (and
    /// a log line), never a panic.
    pub fn page_with_status(
        &self,
        status: StatusCode,
        name: &str,
        ctx: minijinja::Value,
    ) -> Response {
        match ENV.get_template(name).and_then(|t| t.render(ctx)) {
            Ok(html) => (status, Html(html)).into_response(),
            Err(e) => {
                tracing::error!(template = name, error = %e, "admin page failed to render");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Html("<!doctype html><title>Error</title><p>This page failed to render; the server log has the reason.</p>".to_string()),
                )
                    .into_response()
            }
        }
    }

    /// Render `name` as a 200 page.
    pub fn page(&self, name: &str, ctx: minijinja::Value) -> Response {
        self.page_with_status(StatusCode::OK, name, ctx)
    }
}

/// At most `n` characters of `s`, with an ellipsis when cut (long errors and responses).
fn truncate(s: String, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// A URL as every admin page shows it: a password and query values masked
/// (`https://user:***@host/path?token=***`). The one masking function, shared with the API's
/// views ([`kairos_core::text::mask_url`]), so the admin never shows more than the API.
pub fn mask_url(url: &str) -> String {
    kairos_core::text::mask_url(url)
}

/// The admin page an id of this kind opens, by its prefix.
fn id_page(id: &str) -> Option<&'static str> {
    [
        ("job_", "/admin/jobs/"),
        ("sch_", "/admin/schedules/"),
        ("ep_", "/admin/endpoints/"),
    ]
    .into_iter()
    .find(|(p, _)| {
        id.strip_prefix(p)
            .is_some_and(|r| r.len() == 32 && r.bytes().all(|b| b.is_ascii_hexdigit()))
    })
    .map(|(_, page)| page)
}

fn escape_html(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

/// `s` escaped for HTML text without touching `/` (minijinja's escaping writes `&#x2f;`): a
/// URL on a page reads as itself in the HTML source too, so a plain-HTTP client finds it.
fn text(s: String) -> minijinja::Value {
    let mut out = String::with_capacity(s.len());
    escape_html(&s, &mut out);
    minijinja::Value::from_safe_string(out)
}

/// `s` escaped, with every job, schedule and endpoint id in it a link to its page (SLO
/// messages and errors name what they are about: the operator follows them without typing).
fn linkify(s: String) -> minijinja::Value {
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end.max(rest.chars().next().map_or(1, char::len_utf8)));
        match id_page(word) {
            Some(page) => out.push_str(&format!(
                "<a class=\"id-link mono\" href=\"{page}{word}\">{word}</a>"
            )),
            None => escape_html(word, &mut out),
        }
        rest = tail;
    }
    minijinja::Value::from_safe_string(out)
}

/// The `/admin` routes (nest them under `/admin`).
pub fn router(state: &AppState) -> Router<AppState> {
    let admin = Arc::new(Admin {
        secure_cookie: state.secure_cookies,
        ..Admin::new(&state.token)
    });
    Router::new()
        .route("/", get(dashboard::dashboard))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/jobs", get(jobs::list))
        .route("/jobs/bulk", post(jobs::bulk))
        .route("/jobs/{id}", get(jobs::show))
        .route("/jobs/{id}/replay", post(jobs::replay))
        .route("/jobs/{id}/cancel", post(jobs::cancel))
        .route("/dead", get(jobs::dead))
        .route("/dead/replay", post(jobs::dead_replay))
        .route("/deliveries", get(deliveries::list))
        .route("/schedules", get(schedules::list))
        .route(
            "/schedules/new",
            get(schedule_edit::new_form).post(schedule_edit::create),
        )
        .route("/schedules/{id}", get(schedule_page::show))
        .route(
            "/schedules/{id}/edit",
            get(schedule_edit::edit_form).post(schedule_edit::update),
        )
        .route("/schedules/{id}/occurrences", get(schedules::occurrences))
        .route("/schedules/{id}/{action}", post(schedules::act))
        .route("/search", get(search::search))
        .route("/running", get(search::running))
        .route("/nodes", get(nodes::nodes))
        .route("/endpoints", get(endpoints::list))
        .route("/endpoints/{id}", get(endpoint_page::show))
        .route("/endpoints/{id}/resend", post(endpoint_page::resend))
        .route("/endpoints/{id}/test", post(endpoint_page::test_event))
        .route("/endpoints/{id}/rotate", post(endpoint_page::rotate))
        .route("/endpoints/{id}/enable", post(endpoints::enable))
        .route("/topics/{name}", get(topics::show))
        .layer(axum::Extension(admin))
        .layer(axum::middleware::map_response(
            crate::headers::security_headers,
        ))
}

/// A state string for display: known states as they are, anything else "unknown".
pub fn state_label(s: &str) -> &'static str {
    match s {
        "available" => "available",
        "running" => "running",
        "succeeded" => "succeeded",
        "skipped" => "skipped",
        "cancelled" => "cancelled",
        "dead" => "dead",
        _ => "unknown",
    }
}

async fn login_form(axum::Extension(admin): axum::Extension<Arc<Admin>>) -> Response {
    login_page(&admin, StatusCode::OK, None)
}

/// The login form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    token: String,
}

/// The source address of a request (`None` when the server was started without connection
/// info; then every client shares one login backoff).
#[derive(Debug, Clone, Copy)]
pub struct SourceAddr(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for SourceAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(SourceAddr(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

/// `Set-Cookie` for the session cookie with `value` living `max_age` seconds.
fn session_cookie(admin: &Admin, value: &str, max_age: i64) -> Option<HeaderValue> {
    let secure = if admin.secure_cookie { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .ok()
}

async fn login(
    State(state): State<AppState>,
    SourceAddr(source): SourceAddr,
    axum::Extension(admin): axum::Extension<Arc<Admin>>,
    Form(form): Form<LoginForm>,
) -> Response {
    let now = state.kairos.clock().now();
    let addr = source.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    if let Err(wait) = admin.limiter.attempt(addr, now) {
        tracing::warn!(source = %addr, retry_after = wait, "admin login refused: too many attempts");
        let msg =
            format!("Too many login attempts from your address. Try again in {wait} seconds.");
        let mut res = login_page(&admin, StatusCode::TOO_MANY_REQUESTS, Some(&msg));
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return res;
    }
    if !state.token.matches(form.token.trim()) {
        tracing::warn!(source = %addr, "admin login refused: wrong token");
        return login_page(
            &admin,
            StatusCode::UNAUTHORIZED,
            Some("That token is not this server's API token."),
        );
    }
    admin.limiter.succeeded(addr);
    let id = SessionKey::new_session_id();
    let created = kairos_store::AdminSessionCreate {
        session: kairos_store::AdminSession {
            id_hash: session::id_hash(&id),
            created_at: now,
            expires_at: now + chrono::Duration::seconds(SESSION_SECS),
        },
    };
    if let Err(e) = state.kairos.store().admin_session_create(created).await {
        tracing::error!(error = %e, "admin login: storing the session failed");
        return login_page(
            &admin,
            StatusCode::SERVICE_UNAVAILABLE,
            Some("The session could not be stored; the server log has the reason."),
        );
    }
    let mut res = Redirect::to("/admin").into_response();
    if let Some(v) = session_cookie(&admin, &admin.key.session_value(&id), SESSION_SECS) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

/// A form that carries nothing but its CSRF token.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    /// The session's CSRF token.
    pub csrf: String,
}

async fn logout(
    State(state): State<AppState>,
    op: session::Operator,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    // Deleting the row is what ends the session: the cookie may still be replayed.
    if let Err(e) = state
        .kairos
        .store()
        .admin_session_delete(&op.session_hash)
        .await
    {
        tracing::error!(error = %e, "admin logout: deleting the session failed");
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let mut res = Redirect::to("/admin/login").into_response();
    if let Some(v) = session_cookie(op.admin(), "", 0) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_stored_state_renders_as_unknown() {
        assert_eq!(state_label("dead"), "dead");
        assert_eq!(state_label("archived-by-v9"), "unknown");
        assert_eq!(state_label(""), "unknown");
    }

    #[test]
    fn every_template_parses_and_truncate_cuts_on_characters() {
        for (name, _) in TEMPLATES {
            assert!(ENV.get_template(name).is_ok(), "{name}");
        }
        assert_eq!(truncate("héllo".into(), 2), "hé…");
        assert_eq!(truncate("hi".into(), 5), "hi");
    }

    #[test]
    fn linkify_links_well_formed_ids_and_escapes_the_rest() {
        let sch = "sch_0193a0b0c0d0e0f00112233445566778";
        let html = linkify(format!("schedule {sch}: <b>3</b> dead; job_x is no id")).to_string();
        assert!(
            html.contains(&format!(
                "<a class=\"id-link mono\" href=\"/admin/schedules/{sch}\">{sch}</a>"
            )),
            "{html}"
        );
        assert!(html.contains("&lt;b&gt;3&lt;/b&gt;"), "{html}");
        assert!(!html.contains("/admin/jobs/job_x"), "{html}");
        assert_eq!(linkify("héllo — ok".into()).to_string(), "héllo — ok");
        assert_eq!(
            text("https://u:***@h/p?a=***&b=<x>".into()).to_string(),
            "https://u:***@h/p?a=***&amp;b=&lt;x&gt;"
        );
    }
}
