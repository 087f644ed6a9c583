//! `/admin/nodes`: the nodes of the cluster from their heartbeats (issue 36) — each node's
//! id, whether it leads, its last heartbeat and its age, when its process started, and the
//! jobs running on it. A node silent for longer than the heartbeat's `gone_after` (30 s by
//! default) is shown as gone; its row is deleted after `prune_after` (1 day). A node that
//! holds running jobs without a heartbeat row (a version before heartbeats) is listed too.

use crate::AppState;
use crate::admin::dashboard::store_error;
use crate::admin::search::RefreshQuery;
use crate::admin::session::Operator;
use crate::admin::views::fmt_t;
use axum::extract::{Query, State};
use axum::response::Response;
use kairos_engine::heartbeat::HeartbeatConfig;
use kairos_store::NodeList;
use minijinja::context;

/// `GET /admin/nodes`.
pub async fn nodes(
    op: Operator,
    State(state): State<AppState>,
    Query(r): Query<RefreshQuery>,
) -> Response {
    let list = match state.kairos.store().node_list(NodeList::default()).await {
        Ok(l) => l,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let now = state.kairos.clock().now();
    let gone_after = chrono::Duration::from_std(HeartbeatConfig::default().gone_after)
        .unwrap_or_else(|_| chrono::Duration::seconds(30));
    let rows: Vec<_> = list
        .iter()
        .map(|n| {
            let silent = n.last_heartbeat_at.map(|t| (now - t).num_seconds().max(0));
            let status = match n.last_heartbeat_at {
                None => "no heartbeat",
                Some(t) if now - t > gone_after => "gone",
                Some(_) => "alive",
            };
            context! {
                id => n.id, status,
                // A gone node's mark is stale: it leads no more, whatever it last said.
                leader => n.leader && status == "alive",
                last_heartbeat_at => n.last_heartbeat_at.map(fmt_t),
                silent_secs => silent,
                started_at => n.started_at.map(fmt_t),
                running => n.running,
            }
        })
        .collect();
    op.page(
        &state,
        "nodes.html",
        context! {
            rows, gone_secs => gone_after.num_seconds(),
            refresh => r.seconds(), refresh_path => "/admin/nodes",
            now => fmt_t(now),
        },
    )
    .await
}
