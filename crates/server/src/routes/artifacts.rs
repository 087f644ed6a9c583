//! `/v1/artifacts`: the products of periodic jobs (a day's digest), listed, and served
//! one by one as JSON or, when the client asks for `text/html`, as a page.

use crate::AppState;
use crate::problem::{ApiQuery, ApiResult};
use crate::views::ts;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kairos_store::Artifact;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/artifacts`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/{name}/{period}", get(show))
}

/// An artifact in a list (without its content).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ArtifactSummary {
    /// The artifact's name.
    pub name: String,
    /// Its period key (`2026-10-20`).
    pub period: String,
    /// When it was stored.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// The job that built it.
    pub job_id: Option<String>,
    /// That job's schedule.
    pub schedule_id: Option<String>,
    /// Where it is served.
    pub url: String,
}

/// A list of artifacts, newest period first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ArtifactList {
    /// The artifacts.
    pub data: Vec<ArtifactSummary>,
}

/// One artifact.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ArtifactView {
    /// The artifact's name.
    pub name: String,
    /// Its period key.
    pub period: String,
    /// The text (a digest: Markdown).
    pub content: String,
    /// Structured data (a digest: `items`, `feeds`, `failed_feeds`, `summarizer`, `model`).
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    /// The job that built it.
    pub job_id: Option<String>,
    /// That job's schedule.
    pub schedule_id: Option<String>,
    /// When it was stored.
    #[schema(format = DateTime)]
    pub created_at: String,
}

fn url_of(a: &Artifact) -> String {
    format!("/v1/artifacts/{}/{}", a.name, a.period_key)
}

impl From<&Artifact> for ArtifactSummary {
    fn from(a: &Artifact) -> Self {
        ArtifactSummary {
            name: a.name.clone(),
            period: a.period_key.clone(),
            created_at: ts(a.created_at),
            job_id: a.job_id.clone(),
            schedule_id: a.schedule_id.clone(),
            url: url_of(a),
        }
    }
}

impl From<&Artifact> for ArtifactView {
    fn from(a: &Artifact) -> Self {
        ArtifactView {
            name: a.name.clone(),
            period: a.period_key.clone(),
            content: a.content.clone(),
            data: a.data.clone(),
            job_id: a.job_id.clone(),
            schedule_id: a.schedule_id.clone(),
            created_at: ts(a.created_at),
        }
    }
}

/// Filters of the artifact list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ArtifactQuery {
    /// Only artifacts of this name.
    pub name: Option<String>,
    /// Only periods before this key (the next page: the last period of the previous one).
    pub before: Option<String>,
    /// At most this many (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// List artifacts, newest period first.
#[utoipa::path(operation_id = "artifacts_list", get, path = "/v1/artifacts", tag = "artifacts", params(ArtifactQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Artifacts", body = ArtifactList),
        (status = 422, description = "A filter is not valid", body = crate::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ArtifactQuery>,
) -> ApiResult<Json<ArtifactList>> {
    let list = state
        .kairos
        .artifact_list(q.name.as_deref(), q.before.as_deref(), q.limit)
        .await?;
    Ok(Json(ArtifactList {
        data: list.iter().map(ArtifactSummary::from).collect(),
    }))
}

/// One artifact: JSON, or an HTML page when `Accept` prefers `text/html`.
#[utoipa::path(operation_id = "artifacts_show", get, path = "/v1/artifacts/{name}/{period}", tag = "artifacts",
    params(
        ("name" = String, Path, description = "Artifact name"),
        ("period" = String, Path, description = "Period key (`2026-10-20`)"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The artifact (JSON, or text/html when asked for)", body = ArtifactView),
        (status = 404, description = "No artifact for this name and period", body = crate::problem::Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path((name, period)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let a = state.kairos.artifact_get(&name, &period).await?;
    if wants_html(&headers) {
        return Ok(crate::headers::with_security_headers(
            crate::pages::respond(StatusCode::OK, render_html(&a)),
            crate::headers::ARTIFACT_CSP,
        ));
    }
    Ok(Json(ArtifactView::from(&a)).into_response())
}

/// Whether `Accept` ranks `text/html` above `application/json` (a browser does; an API
/// client sending `*/*` or nothing gets JSON).
pub fn wants_html(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let q_of = |ty: &str| -> f32 {
        accept
            .split(',')
            .filter_map(|part| {
                let mut it = part.split(';');
                let media = it.next()?.trim().to_ascii_lowercase();
                if media != ty {
                    return None;
                }
                let q = it
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                Some(q)
            })
            .fold(0.0, f32::max)
    };
    let html = q_of("text/html");
    html > 0.0 && html > q_of("application/json")
}

/// The page of one artifact: its text, then its sources (items with links) and the feeds
/// that failed. Everything from feeds is escaped (the `artifact.html` template, minijinja's
/// auto-escaping); only http(s) links are linked. `None` when the page failed to render.
pub fn render_html(a: &Artifact) -> Option<String> {
    let items: Vec<minijinja::Value> = a
        .data
        .get("items")
        .and_then(|i| i.as_array())
        .map(|items| {
            items
                .iter()
                .map(|it| {
                    let s = |k: &str| it.get(k).and_then(|v| v.as_str()).unwrap_or_default();
                    let link = Some(s("link"))
                        .filter(|l| l.starts_with("https://") || l.starts_with("http://"));
                    minijinja::context! { title => s("title"), source => s("source"), link => link }
                })
                .collect()
        })
        .unwrap_or_default();
    let failed = a
        .data
        .get("failed_feeds")
        .and_then(|i| i.as_array())
        .map_or(0, Vec::len);
    crate::pages::render(
        "artifact.html",
        minijinja::context! {
            title => format!("{} — {}", a.name, a.period_key),
            content => a.content,
            items => items,
            failed => failed,
            built => ts(a.created_at),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn html_only_when_accept_prefers_it() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            wants_html(&m)
        };
        assert!(h("text/html"));
        assert!(h(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(!h("application/json"));
        assert!(!h("*/*"));
        assert!(!h("application/json, text/html;q=0.5"));
        assert!(!wants_html(&HeaderMap::new()));
    }

    #[test]
    fn html_escapes_feed_text_and_links_only_http() {
        let a = Artifact {
            name: "n".into(),
            period_key: "2026-10-20".into(),
            content: "<script>x</script>".into(),
            data: serde_json::json!({"items": [
                {"title": "<b>t</b>", "source": "s", "link": "javascript:alert(1)"},
                {"title": "ok", "source": "s", "link": "https://e.com/a?b=1&c=2"},
            ]}),
            job_id: None,
            schedule_id: None,
            created_at: chrono::DateTime::UNIX_EPOCH,
        };
        let html = render_html(&a).expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"https://e.com/a?b=1&amp;c=2\""));
    }

    /// What reaches the page from a feed (an item's title and source, its link) is escaped
    /// by the template engine, in text and in attributes.
    #[test]
    fn item_titles_and_links_are_escaped() {
        let a = Artifact {
            name: "ai & ml".into(),
            period_key: "2026-10-20".into(),
            content: String::new(),
            data: serde_json::json!({"items": [{
                "title": "<script>alert(\"x\")</script> & co",
                "source": "Lab \"Q\"",
                "link": "https://e.com/\"><script>",
            }], "failed_feeds": [{}]}),
            job_id: None,
            schedule_id: None,
            created_at: chrono::DateTime::UNIX_EPOCH,
        };
        let html = render_html(&a).expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains(
                ">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co</a> <small>Lab &quot;Q&quot;</small>"
            ),
            "{html}"
        );
        assert!(
            html.contains("href=\"https://e.com/&quot;&gt;&lt;script&gt;\""),
            "{html}"
        );
        assert!(html.contains("<h1>ai &amp; ml — 2026-10-20</h1>"), "{html}");
        assert!(html.contains("1 feed(s) could not be read"), "{html}");
        assert!(html.ends_with("</body></html>\n"), "{html}");
    }
}
