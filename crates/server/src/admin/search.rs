//! Finding and watching: `/admin/search` (a job, schedule or endpoint id opens its page; any
//! other text finds schedules by name and jobs by payload text) and `/admin/running` (the
//! jobs running now, grouped by the node holding them).

use crate::AppState;
use crate::admin::dashboard::store_error;
use crate::admin::filters::urlencode;
use crate::admin::jobs::schedule_names;
use crate::admin::session::Operator;
use crate::admin::views::{JobRow, fmt_t};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use kairos_core::id::{IdPrefix, is_valid};
use kairos_store::JobSearch;
use minijinja::context;
use serde::Deserialize;

/// Most jobs a payload search lists.
const JOB_HITS: i64 = 100;
/// Most schedules read for a name search.
const SCHEDULES: i64 = 1000;
/// Most running jobs listed.
const RUNNING: i64 = 500;

/// The search box.
#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    q: Option<String>,
}

/// `GET /admin/search?q=…`.
pub async fn search(
    op: Operator,
    State(state): State<AppState>,
    Query(sq): Query<SearchQuery>,
) -> Response {
    let q = sq.q.unwrap_or_default().trim().to_string();
    if q.is_empty() {
        return op
            .page(&state, "search.html", context! { q, empty => true })
            .await;
    }
    // An id opens its page when it exists.
    let store = state.kairos.store();
    let page = if is_valid(IdPrefix::Job, &q) {
        matches!(store.job_get(&q).await, Ok(Some(_))).then_some("jobs")
    } else if is_valid(IdPrefix::Schedule, &q) {
        matches!(store.schedule_get(&q).await, Ok(Some(_))).then_some("schedules")
    } else if is_valid(IdPrefix::Endpoint, &q) {
        matches!(store.endpoint_get(&q).await, Ok(Some(_))).then_some("endpoints")
    } else {
        None
    };
    if let Some(page) = page {
        return Redirect::to(&format!("/admin/{page}/{}", urlencode(&q))).into_response();
    }
    let needle = q.to_lowercase();
    let schedules: Vec<_> = match state.kairos.schedule_list(None, Some(SCHEDULES)).await {
        Ok(all) => all
            .into_iter()
            .filter(|s| s.name.to_lowercase().contains(&needle))
            .map(|s| context! { id => s.id, name => s.name, state => s.state.as_str() })
            .collect(),
        Err(e) => return store_error(&op, &state, e).await,
    };
    let jobs = match store
        .job_search(JobSearch {
            payload_text: Some(q.clone()),
            limit: JOB_HITS,
            ..Default::default()
        })
        .await
    {
        Ok(j) => j,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let names = schedule_names(&state, &jobs).await;
    let jobs: Vec<JobRow> = jobs
        .iter()
        .map(|j| {
            let mut r = JobRow::new(state.kairos.kinds(), j);
            r.schedule_name = j.schedule_id.as_ref().and_then(|id| names.get(id).cloned());
            r
        })
        .collect();
    let capped = jobs.len() as i64 == JOB_HITS;
    op.page(
        &state,
        "search.html",
        context! { q, schedules, jobs, capped, job_hits => JOB_HITS },
    )
    .await
}

/// The live-refresh toggle of the overview and the lists.
#[derive(Debug, Default, Deserialize)]
pub struct RefreshQuery {
    /// Reload the page every this many seconds (5 to 300); absent or not a number: no
    /// reload (a hand-edited URL never breaks the page).
    #[serde(default)]
    pub refresh: Option<String>,
}

impl RefreshQuery {
    /// The refresh interval to put in `<meta http-equiv=refresh>`, clamped to 5..=300 s.
    pub fn seconds(&self) -> Option<u32> {
        let s: u32 = self.refresh.as_deref()?.trim().parse().ok()?;
        Some(s.clamp(5, 300))
    }
}

/// `GET /admin/running`: the jobs running now, and the nodes running them with the latest
/// lease each holds (a node renews its leases while it lives: the latest lease end is its
/// last sign of life).
pub async fn running(
    op: Operator,
    State(state): State<AppState>,
    Query(r): Query<RefreshQuery>,
) -> Response {
    let jobs = match state
        .kairos
        .store()
        .job_search(JobSearch {
            state: Some("running".into()),
            limit: RUNNING,
            ..Default::default()
        })
        .await
    {
        Ok(j) => j,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let mut nodes: std::collections::BTreeMap<
        String,
        (usize, Option<chrono::DateTime<chrono::Utc>>),
    > = Default::default();
    for j in &jobs {
        let n = nodes
            .entry(j.locked_by.clone().unwrap_or_else(|| "unknown".into()))
            .or_default();
        n.0 += 1;
        n.1 = n.1.max(j.lease_expires_at);
    }
    let nodes: Vec<_> = nodes
        .into_iter()
        .map(|(node, (running, lease))| {
            context! { node, running, lease_until => lease.map(fmt_t) }
        })
        .collect();
    let leases: std::collections::HashMap<&str, String> = jobs
        .iter()
        .filter_map(|j| Some((j.id.as_str(), fmt_t(j.lease_expires_at?))))
        .collect();
    let names = schedule_names(&state, &jobs).await;
    let rows: Vec<_> = jobs
        .iter()
        .map(|j| {
            let mut row = JobRow::new(state.kairos.kinds(), j);
            row.schedule_name = j.schedule_id.as_ref().and_then(|id| names.get(id).cloned());
            context! { j => row, lease_until => leases.get(j.id.as_str()) }
        })
        .collect();
    op.page(
        &state,
        "running.html",
        context! {
            rows, nodes, capped => jobs.len() as i64 == RUNNING,
            refresh => r.seconds(), refresh_path => "/admin/running",
            now => fmt_t(state.kairos.clock().now()),
        },
    )
    .await
}
