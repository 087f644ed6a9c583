//! The public HTML pages outside `/admin` (an artifact's page, the unsubscribe pages),
//! rendered by minijinja with HTML auto-escaping, like the admin UI: every value from a feed,
//! a topic or a token is escaped by the template engine, never by hand.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use minijinja::{AutoEscape, Environment, HtmlEscape, Output, State, Value};
use std::sync::LazyLock;

const TEMPLATES: &[(&str, &str)] = &[
    ("artifact.html", include_str!("templates/artifact.html")),
    (
        "unsubscribe.html",
        include_str!("templates/unsubscribe.html"),
    ),
];

static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    // Before the templates: it applies when they are parsed.
    env.set_keep_trailing_newline(true);
    // Templates are compiled into the binary and tested; a broken one is a build bug.
    for (name, src) in TEMPLATES {
        if let Err(e) = env.add_template(name, src) {
            tracing::error!(template = name, error = %e, "page template does not parse");
        }
    }
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_formatter(keep_slashes);
    env
});

/// minijinja's HTML escaping, except that `/` stays `/` (minijinja writes `&#x2f;`): in
/// quoted attributes and text it protects nothing, and links keep reading as written.
fn keep_slashes(out: &mut Output, state: &State, value: &Value) -> Result<(), minijinja::Error> {
    if state.auto_escape() == AutoEscape::Html
        && !value.is_safe()
        && let Some(s) = value.as_str()
    {
        let escaped = HtmlEscape(s).to_string().replace("&#x2f;", "/");
        return out.write_str(&escaped).map_err(minijinja::Error::from);
    }
    minijinja::escape_formatter(out, state, value)
}

/// `name` rendered with `ctx`; a rendering error is logged and is `None`, never a panic.
pub fn render(name: &str, ctx: Value) -> Option<String> {
    match ENV.get_template(name).and_then(|t| t.render(ctx)) {
        Ok(html) => Some(html),
        Err(e) => {
            tracing::error!(template = name, error = %e, "page failed to render");
            None
        }
    }
}

/// `name` rendered with `ctx` as a page with `status`; a rendering error is a 500 page.
pub fn page(status: StatusCode, name: &str, ctx: Value) -> Response {
    respond(status, render(name, ctx))
}

/// A rendered page with `status`, or (`None`: it failed to render) a 500 page.
pub fn respond(status: StatusCode, html: Option<String>) -> Response {
    match html {
        Some(html) => (status, Html(html)).into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html("<!doctype html><title>Error</title><p>This page failed to render; the server log has the reason.</p>".to_string()),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        for (name, _) in TEMPLATES {
            assert!(ENV.get_template(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn values_are_escaped_but_slashes_kept() {
        let mut env = Environment::new();
        env.set_formatter(keep_slashes);
        env.add_template("t.html", "<a href=\"{{ u }}\">{{ t }}</a> {{ n }}")
            .unwrap();
        let out = env
            .get_template("t.html")
            .unwrap()
            .render(minijinja::context! { u => "https://e.com/a?b=1&c=\"2\"", t => "<script>'x'</script>", n => 3 })
            .unwrap();
        assert_eq!(
            out,
            "<a href=\"https://e.com/a?b=1&amp;c=&quot;2&quot;\">&lt;script&gt;&#x27;x&#x27;&lt;/script&gt;</a> 3"
        );
    }
}
