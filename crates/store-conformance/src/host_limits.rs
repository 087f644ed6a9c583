//! The limits of an origin that `http` jobs call (issue 34): stored per origin (the limits
//! saved last hold; saving the same limits again leaves the bucket alone), and enforced in the
//! claim for every job whose `http_origin` is that origin, like an endpoint's: a call over the
//! rate limit or `max_in_flight` goes back without an attempt; calls to other origins and
//! jobs of other kinds are not held back.

use crate::fixtures::{claim, job, t0};
use crate::jobs::complete;
use chrono::Duration;
use kairos_core::JobState;
use kairos_store::concurrency::WAIT_MAX;
use kairos_store::flow::{HostLimitsSet, RateLimit};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

const ORIGIN: &str = "https://api.example.com:443";

fn limits(origin: &str, rate: Option<(u32, u32)>, max_in_flight: Option<u32>) -> HostLimitsSet {
    HostLimitsSet {
        origin: origin.into(),
        rate_limit: rate.map(|(per_second, burst)| RateLimit { per_second, burst }),
        max_in_flight,
        now: t0(),
    }
}

/// An `http` job calling `origin`, due `ms` after t0.
fn call(origin: &str, ms: i64) -> JobInsert {
    JobInsert {
        kind: kairos_core::JobKind::new("http"),
        http_origin: Some(origin.into()),
        ..job(t0() + Duration::milliseconds(ms))
    }
}

/// An origin's limits are stored, listed (any origin: none), replaced by the ones saved last,
/// and removed.
pub async fn host_limits_set_list_replace_and_remove(s: S) {
    let set = s
        .host_limits_set(limits(ORIGIN, Some((20, 40)), Some(4)))
        .await
        .unwrap();
    assert_eq!(
        set.rate_limit,
        Some(RateLimit {
            per_second: 20,
            burst: 40
        })
    );
    assert_eq!(set.max_in_flight, Some(4));
    assert_eq!((set.waiting_rate_limit, set.waiting_in_flight), (0, 0));
    let listed = s
        .host_limits_list(vec![ORIGIN.into(), "http://other:80".into()])
        .await
        .unwrap();
    assert_eq!(listed[0], set);
    assert_eq!(listed[1].origin, "http://other:80");
    assert_eq!(
        (listed[1].rate_limit, listed[1].max_in_flight),
        (None, None)
    );
    let last = s
        .host_limits_set(limits(ORIGIN, None, Some(2)))
        .await
        .unwrap();
    assert_eq!(
        (last.rate_limit, last.max_in_flight),
        (None, Some(2)),
        "the limits saved last hold; a field left out is no limit"
    );
    let none = s.host_limits_set(limits(ORIGIN, None, None)).await.unwrap();
    assert_eq!((none.rate_limit, none.max_in_flight), (None, None));
}

/// Calls over an origin's rate limit go back without an attempt, due when their token is free;
/// saving the same limits again (as every job naming them does) does not refill the bucket;
/// calls to another origin are not held back.
pub async fn host_rate_limit_puts_calls_back_and_a_repeated_save_keeps_the_bucket(s: S) {
    s.host_limits_set(limits(ORIGIN, Some((2, 2)), None))
        .await
        .unwrap();
    let mut all: Vec<JobInsert> = (0..4).map(|i| call(ORIGIN, i)).collect();
    all.push(call("https://free.example.com:443", 10));
    all.push(job(t0() + Duration::milliseconds(11)));
    s.job_insert_many(all.clone()).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let got = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(
        got.len(),
        4,
        "the burst of 2, the other origin, the other job"
    );
    let mut due: Vec<i64> = Vec::new();
    for j in &all {
        let back = s.job_get(&j.id).await.unwrap().unwrap();
        if back.state == JobState::Available {
            assert_eq!(back.attempt, 0, "waiting for a token is not an attempt");
            due.push((back.run_at - now).num_milliseconds());
        }
    }
    due.sort();
    assert_eq!(due, [520, 1040], "one token each 500 ms at 2/s, paced");
    let l = s.host_limits_list(vec![ORIGIN.into()]).await.unwrap();
    assert_eq!(l[0].waiting_rate_limit, 2);
    // The same limits saved again: the bucket stays empty.
    s.host_limits_set(limits(ORIGIN, Some((2, 2)), None))
        .await
        .unwrap();
    s.job_insert_many(vec![call(ORIGIN, 20)]).await.unwrap();
    assert!(
        s.job_claim(claim(now + Duration::milliseconds(10), 10, "n2"))
            .await
            .unwrap()
            .is_empty(),
        "no token yet"
    );
}

/// At most `max_in_flight` calls to an origin run at once, whoever claims; when one finishes
/// the next goes.
pub async fn host_max_in_flight_holds_until_a_call_finishes(s: S) {
    s.host_limits_set(limits(ORIGIN, None, Some(1)))
        .await
        .unwrap();
    s.job_insert_many((0..3).map(|i| call(ORIGIN, i)).collect())
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(first.len(), 1);
    let l = s.host_limits_list(vec![ORIGIN.into()]).await.unwrap();
    assert_eq!(l[0].waiting_in_flight, 2);
    let later = now + WAIT_MAX;
    assert!(
        s.job_claim(claim(later, 10, "n2"))
            .await
            .unwrap()
            .is_empty()
    );
    s.job_complete_many(vec![complete(&first[0], Transition::Succeeded)])
        .await
        .unwrap();
    let again = later + WAIT_MAX;
    assert_eq!(s.job_claim(claim(again, 10, "n2")).await.unwrap().len(), 1);
}
