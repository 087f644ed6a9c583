//! The limits of an `http` job's host through the operations facade (issue 34): the job or
//! schedule saved last that names `rate_limit` or `max_in_flight` sets its origin's limits; one
//! naming neither keeps them; `null` removes them; a refused request stores none; a schedule's
//! firings carry the origin and are held, with every other job calling it, to its limits in
//! the claim.

mod common;

use common::*;
use kairos_engine::ops::{HttpSpec, NewJob, RateLimitBody};
use kairos_engine::{Kairos, OpsErrorKind};
use kairos_store::flow::RateLimit;
use kairos_testkit::TestReceiver;

fn spec(url: &str) -> HttpSpec {
    HttpSpec {
        url: url.into(),
        ..Default::default()
    }
}

fn rate(per_second: i64) -> Option<Option<RateLimitBody>> {
    Some(Some(RateLimitBody {
        per_second,
        burst: None,
    }))
}

async fn enqueue(k: &Kairos, http: HttpSpec) -> Result<kairos_core::Job, kairos_engine::OpsError> {
    k.job_enqueue(NewJob {
        kind: Some("http".into()),
        parts: http.into_parts(),
        run_at: Some("2099-01-01T00:00:00Z".into()),
        ..Default::default()
    })
    .await
    .map(|(j, _)| j)
}

#[tokio::test]
async fn host_limits_saved_last_hold_and_a_job_naming_none_keeps_them() {
    let rx = TestReceiver::start().await;
    let h = Harness::new(t("2026-10-20T20:00:00Z"), &[]).await;
    let origin = format!("http://{}", rx.addr());
    let mut a = spec(&rx.url("/a"));
    a.rate_limit = rate(5);
    let job = enqueue(&h.kairos, a).await.expect("job a");
    assert_eq!(job.payload["http_origin"], serde_json::json!(origin));
    let l = h.kairos.host_limits(&origin).await.unwrap();
    assert_eq!(
        l.rate_limit,
        Some(RateLimit {
            per_second: 5,
            burst: 5
        })
    );
    // Another path of the same origin, naming only max_in_flight: the limits saved last.
    let mut b = spec(&rx.url("/b?x=1"));
    b.max_in_flight = Some(Some(3));
    enqueue(&h.kairos, b).await.expect("job b");
    let l = h.kairos.host_limits(&origin).await.unwrap();
    assert_eq!((l.rate_limit, l.max_in_flight), (None, Some(3)));
    // Naming neither keeps them.
    enqueue(&h.kairos, spec(&rx.url("/c")))
        .await
        .expect("job c");
    let l = h.kairos.host_limits(&origin).await.unwrap();
    assert_eq!(l.max_in_flight, Some(3));
    // `null` removes them.
    let mut d = spec(&rx.url("/d"));
    d.rate_limit = Some(None);
    enqueue(&h.kairos, d).await.expect("job d");
    let l = h.kairos.host_limits(&origin).await.unwrap();
    assert_eq!((l.rate_limit, l.max_in_flight), (None, None));
}

#[tokio::test]
async fn a_refused_job_or_schedule_stores_no_host_limits() {
    let rx = TestReceiver::start().await;
    let h = Harness::new(t("2026-10-20T20:00:00Z"), &[]).await;
    let origin = format!("http://{}", rx.addr());
    let mut bad = spec(&rx.url("/a"));
    bad.rate_limit = Some(Some(RateLimitBody {
        per_second: 20,
        burst: Some(0),
    }));
    bad.max_in_flight = Some(Some(2));
    let e = enqueue(&h.kairos, bad).await.unwrap_err();
    assert!(
        matches!(e.kind(), OpsErrorKind::Invalid { field, .. } if field == "http.rate_limit.burst"),
        "{e}"
    );
    // A schedule whose name is taken is refused after its `http` object was checked.
    let mut first = new_schedule("nightly", "http");
    first.cron = Some("0 2 * * *".into());
    first.parts = spec(&rx.url("/n")).into_parts();
    h.kairos.schedule_create(first).await.expect("schedule");
    let mut dup = new_schedule("nightly", "http");
    dup.cron = Some("0 2 * * *".into());
    let mut limited = spec(&rx.url("/n"));
    limited.max_in_flight = Some(Some(1));
    dup.parts = limited.into_parts();
    assert!(h.kairos.schedule_create(dup).await.is_err());
    let l = h.kairos.host_limits(&origin).await.unwrap();
    assert_eq!(
        (l.rate_limit, l.max_in_flight),
        (None, None),
        "nothing stored"
    );
}

#[tokio::test]
async fn a_schedules_firings_carry_the_origin_and_are_held_to_its_limits() {
    let rx = TestReceiver::start().await;
    let t0 = t("2026-10-20T20:00:00Z");
    let h = Harness::new(t0, &[]).await;
    let origin = format!("http://{}", rx.addr());
    let mut s = new_schedule("every-minute", "http");
    s.every = Some("1m".into());
    let mut limited = spec(&rx.url("/tick"));
    limited.max_in_flight = Some(Some(1));
    s.parts = limited.into_parts();
    let sch = h.kairos.schedule_create(s).await.expect("schedule");
    assert_eq!(sch.payload["http_origin"], serde_json::json!(origin));
    // Firings due, and a job to the same origin naming no limit: one claim takes one of them
    // (one call in flight to the origin at most).
    let at = t0 + chrono::Duration::minutes(1);
    h.sched(at).await;
    let jobs = h.schedule_jobs(&sch.id).await;
    assert!(!jobs.is_empty());
    assert!(
        jobs.iter()
            .all(|j| j.payload["http_origin"] == serde_json::json!(origin))
    );
    h.kairos
        .job_enqueue(NewJob {
            kind: Some("http".into()),
            parts: spec(&rx.url("/other-path")).into_parts(),
            run_at: Some(at.to_rfc3339()),
            ..Default::default()
        })
        .await
        .expect("job");
    let claimed = h
        .store
        .job_claim(kairos_store::JobClaim {
            now: at,
            limit: 10,
            node: "n1".into(),
            lease_token: "lease-1".into(),
            lease_until: at + chrono::Duration::seconds(30),
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "max_in_flight 1 to the origin");
}
