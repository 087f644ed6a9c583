//! The occurrence list's status filter (`GET /v1/occurrences?state=`): the store derives each
//! period's status from all its jobs' states (the rule of [`OccurrenceList::status`]) and
//! filters on it before the limit, so "the last 2 failures" are two failures, however many
//! successes came after them.

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_core::Job;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// What a job of a period ends as.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Succeeded,
    Dead,
    Skipped,
    Cancelled,
    /// Left available (due later, never claimed).
    Open,
}

/// A completion of the claimed `j`.
fn complete(j: &Job, t: Transition) -> JobComplete {
    let outcome = crate::fixtures::outcome_of(&t);
    JobComplete {
        id: j.id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: Attempt {
            job_id: j.id.clone(),
            attempt: j.attempt,
            started_at: t0(),
            finished_at: t0(),
            outcome: outcome.parse().expect("outcome"),
            error_class: None,
            status_code: None,
            error: None,
            response: None,
            provider_id: None,
            node: None,
        },
        transition: t,
        record_exposure: false,
    }
}

fn filter(status: Option<&str>, limit: Option<i64>) -> OccurrenceList {
    OccurrenceList {
        schedule_id: "sch_status".into(),
        period_key: None,
        limit,
        status: status.map(str::to_string),
    }
}

/// The distinct period keys of `counts`, in their order.
fn periods(counts: &[OccurrenceCount]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in counts {
        if out.last() != Some(&c.period_key) {
            out.push(c.period_key.clone());
        }
    }
    out
}

/// Each derived status selects exactly its periods, newest first; the limit counts the
/// periods that match; `missed` (no period of jobs) and an unknown status select none.
pub async fn occurrence_list_filters_on_the_derived_status_before_the_limit_i35_5(s: S) {
    use End::*;
    // Newest first: day 1 is the newest period (its first firing is the latest).
    let plan: [(&str, &[End]); 7] = [
        ("d1-pending", &[Succeeded, Open]),
        ("d2-success", &[Succeeded, Skipped]),
        ("d3-partial", &[Succeeded, Dead]),
        ("d4-failure", &[Dead, Skipped]),
        ("d5-skipped", &[Skipped, Cancelled]),
        ("d6-cancelled", &[Cancelled, Cancelled]),
        ("d7-failure", &[Dead]),
    ];
    let mut ends = std::collections::HashMap::new();
    for (day, (period, jobs)) in plan.iter().enumerate() {
        let fire_at = t0() - Duration::days(day as i64 + 1);
        for (i, end) in jobs.iter().enumerate() {
            let mut j = job(if *end == Open {
                t0() + Duration::days(1)
            } else {
                t0()
            });
            j.schedule_id = Some("sch_status".into());
            j.period_key = Some((*period).into());
            j.fire_at = Some(fire_at);
            j.channel = Some(format!("ch{i}"));
            j.dedupe_key = Some(format!("{period}-{i}"));
            ends.insert(j.id.clone(), *end);
            s.job_insert(j).await.unwrap();
        }
    }
    let claimed = s.job_claim(claim(t0(), 100, "n1")).await.unwrap();
    assert_eq!(claimed.len(), 12, "every job but the open one");
    let mut done = Vec::new();
    for j in &claimed {
        match ends[&j.id] {
            Succeeded => done.push(complete(j, Transition::Succeeded)),
            Dead => done.push(complete(j, Transition::Dead)),
            Skipped => done.push(complete(j, Transition::Skipped("quiet".into()))),
            Cancelled => {
                let c = JobCancel {
                    id: j.id.clone(),
                    reason: "test".into(),
                    now: t0(),
                };
                assert!(s.job_cancel(c).await.unwrap().is_some());
            }
            Open => unreachable!("an open job is not due"),
        }
    }
    s.job_complete_many(done).await.unwrap();

    let all = s.occurrence_list(filter(None, Some(200))).await.unwrap();
    assert_eq!(
        periods(&all),
        plan.iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>()
    );
    for status in ["pending", "success", "partial", "skipped", "cancelled"] {
        let got = s.occurrence_list(filter(Some(status), None)).await.unwrap();
        let want: Vec<String> = plan
            .iter()
            .filter(|(p, _)| p.ends_with(&format!("-{status}")))
            .map(|(p, _)| p.to_string())
            .collect();
        assert_eq!(periods(&got), want, "{status}");
        // Every count of the period, not only the ones that decided its status.
        let jobs: i64 = got.iter().map(|c| c.count).sum();
        assert_eq!(jobs, 2, "{status}: {got:?}");
    }
    let failures = s
        .occurrence_list(filter(Some("failure"), Some(2)))
        .await
        .unwrap();
    assert_eq!(periods(&failures), ["d4-failure", "d7-failure"]);
    let last = s
        .occurrence_list(filter(Some("failure"), Some(1)))
        .await
        .unwrap();
    assert_eq!(periods(&last), ["d4-failure"]);
    for none in ["missed", "exploded"] {
        let got = s.occurrence_list(filter(Some(none), None)).await.unwrap();
        assert!(got.is_empty(), "{none}: {got:?}");
    }
}
