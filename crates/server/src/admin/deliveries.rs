//! `/admin/deliveries`: the delivery log (seed 003's admin log) — one row per (topic,
//! recipient, target, period) with the email and webhook states side by side, filtered on the
//! same fields as `GET /v1/deliveries` (parsed by the same code), keyset-paginated.

use crate::AppState;
use crate::admin::dashboard::store_error;
use crate::admin::filters::urlencode;
use crate::admin::session::Operator;
use crate::admin::state_label;
use crate::routes::deliveries::{DeliveryView, cursor_of, parse_filters};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use minijinja::context;
use std::collections::BTreeMap;

/// The query string of `pairs` without its cursor, with `before` set to `cursor`.
fn next_query(pairs: &[(String, String)], cursor: &str) -> String {
    pairs
        .iter()
        .filter(|(k, v)| k != "before" && !v.trim().is_empty())
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain([("before", cursor)])
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `GET /admin/deliveries`.
pub async fn list(
    op: Operator,
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Response {
    let raw = raw.unwrap_or_default();
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(raw.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    // The form's values, shown back in its fields.
    let f: BTreeMap<String, String> = pairs.iter().cloned().collect();
    let (rows, next, error) = match parse_filters(pairs.iter().map(|(k, v)| (k, v))) {
        Ok(q) => {
            let limit = q.limit;
            match state.kairos.store().delivery_list(q).await {
                Ok(rows) => {
                    let next = (rows.len() as i64 == limit)
                        .then(|| rows.last().map(|d| next_query(&pairs, &cursor_of(&d.key))))
                        .flatten();
                    (rows, next, None)
                }
                Err(e) => return store_error(&op, &state, e).await,
            }
        }
        Err(p) => (Vec::new(), None, Some(p.detail)),
    };
    let channels = kairos_engine::audience::CHANNELS;
    let rows: Vec<_> = rows
        .iter()
        .map(|d| {
            let v = DeliveryView::from(d);
            let cells: Vec<_> = channels
                .iter()
                .map(|ch| {
                    v.channels.get(*ch).map(|c| {
                        context! {
                            state => state_label(&c.state), attempts => c.attempts,
                            error => c.last_error.clone().or_else(|| c.reason.clone()),
                            job_id => c.job_id,
                        }
                    })
                })
                .collect();
            context! {
                topic => v.topic, recipient => v.recipient, target => v.target,
                period => v.period, status => v.status, cells,
            }
        })
        .collect();
    op.page(
        &state,
        "deliveries.html",
        context! { rows, f, channels, next, error },
    )
    .await
}
