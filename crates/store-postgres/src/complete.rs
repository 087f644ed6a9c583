//! A batch of completions as one typed array per column, for `UNNEST` in the completion
//! statement. PostgreSQL receives arrays in binary; the JSON batch this replaced was parsed
//! into `jsonb` on every completion — sorting each object's keys included — which was about a
//! sixth of the server's CPU on the hot path.

use chrono::{DateTime, Utc};
use kairos_store::{JobComplete, Transition};

/// The columns, in the order of the statement's `UNNEST` (see [`crate::jobs`]).
#[derive(Default)]
pub(crate) struct Columns {
    pub id: Vec<String>,
    pub token: Vec<String>,
    pub state: Vec<&'static str>,
    pub run_at: Vec<Option<DateTime<Utc>>>,
    pub refund: Vec<i32>,
    pub reason: Vec<Option<String>>,
    pub started_at: Vec<DateTime<Utc>>,
    pub finished_at: Vec<DateTime<Utc>>,
    pub outcome: Vec<&'static str>,
    pub error_class: Vec<Option<&'static str>>,
    pub status_code: Vec<Option<i32>>,
    pub error: Vec<Option<String>>,
    pub response: Vec<Option<String>>,
    pub provider_id: Vec<Option<String>>,
    pub node: Vec<Option<String>>,
    pub expose: Vec<bool>,
    pub implicit: Vec<bool>,
}

impl Columns {
    pub(crate) fn of(completions: &[JobComplete]) -> Columns {
        let mut c = Columns::default();
        for x in completions {
            let (state, run_at, refund, reason) = match &x.transition {
                Transition::Succeeded => ("succeeded", None, 0, None),
                Transition::Skipped(r) => ("skipped", None, 0, Some(r.clone())),
                Transition::Retry {
                    run_at,
                    refund_attempt,
                } => ("available", Some(*run_at), i32::from(*refund_attempt), None),
                Transition::Dead => ("dead", None, 0, None),
            };
            let a = &x.attempt;
            c.id.push(x.id.clone());
            c.token.push(x.lease_token.clone());
            c.state.push(state);
            c.run_at.push(run_at);
            c.refund.push(refund);
            c.reason.push(reason);
            c.started_at.push(a.started_at);
            c.finished_at.push(a.finished_at);
            c.outcome.push(a.outcome.as_str());
            c.error_class.push(a.error_class.map(|e| e.as_str()));
            c.status_code.push(a.status_code);
            c.error.push(a.error.clone());
            c.response.push(a.response.clone());
            c.provider_id.push(a.provider_id.clone());
            c.node.push(a.node.clone());
            c.expose.push(x.record_exposure);
            c.implicit.push(x.attempt_is_implicit());
        }
        c
    }
}
