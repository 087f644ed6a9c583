//! Endpoint health (folded from the attempt log), the streak disable, and secret rotation.

use crate::fixtures::{claim, job, t0};
use chrono::{DateTime, Duration, Utc};
use kairos_core::id::{IdPrefix, new_id};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

const URL: &str = "http://127.0.0.1:9/hook";
const SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_B: &str = "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC";
const SECRET_C: &str = "whsec_Q0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0ND";

async fn endpoint(s: &S, id: &str, secret: &str) -> Endpoint {
    s.endpoint_upsert(EndpointUpsert {
        id: id.into(),
        url: URL.into(),
        secret: secret.into(),
        now: t0(),
    })
    .await
    .unwrap()
}

/// One attempt of a new job to `ep` (or to no endpoint) that finished at `at` with `outcome`.
async fn attempt_to(s: &S, ep: Option<&str>, at: DateTime<Utc>, outcome: &str) {
    attempt_of(s, "webhook", ep, at, outcome).await
}

/// An attempt of a job of `kind` (with endpoint `ep`) that finished at `at` with `outcome`.
async fn attempt_of(s: &S, kind: &str, ep: Option<&str>, at: DateTime<Utc>, outcome: &str) {
    attempt_with(s, kind, ep, serde_json::json!({}), at, outcome).await
}

/// [`attempt_of`] with the job's `payload`.
async fn attempt_with(
    s: &S,
    kind: &str,
    ep: Option<&str>,
    payload: serde_json::Value,
    at: DateTime<Utc>,
    outcome: &str,
) {
    let mut j = job(t0());
    j.kind = kairos_core::JobKind::new(kind);
    j.endpoint_id = ep.map(str::to_string);
    j.payload = payload;
    s.job_insert(j).await.unwrap();
    let c = s
        .job_claim(claim(t0() + Duration::days(10), 1, "a"))
        .await
        .unwrap()
        .remove(0);
    let failed = outcome == "failed";
    let transition = match outcome {
        "succeeded" => Transition::Succeeded,
        "skipped" => Transition::Skipped("endpoint_disabled".into()),
        _ => Transition::Dead,
    };
    let done = s
        .job_complete_many(vec![JobComplete {
            id: c.id.clone(),
            lease_token: c.lease_token.clone().unwrap_or_default(),
            attempt: Attempt {
                job_id: c.id.clone(),
                attempt: c.attempt,
                started_at: at - Duration::milliseconds(5),
                finished_at: at,
                outcome: outcome.parse().expect("outcome"),
                error_class: failed.then_some(kairos_core::ErrorClass::Transient),
                status_code: Some(if failed { 500 } else { 200 }),
                error: failed.then(|| "HTTP 500".to_string()),
                response: None,
                provider_id: None,
                node: Some("node-a".into()),
            },
            transition,
            record_exposure: false,
        }])
        .await
        .unwrap();
    assert_eq!(done.applied, 1);
}

fn flush(before: DateTime<Utc>) -> EndpointHealthFlush {
    EndpointHealthFlush {
        settled_before: before,
        limit: 100,
        kinds: vec!["webhook".into()],
    }
}

async fn get(s: &S, id: &str) -> Endpoint {
    s.endpoint_get(id).await.unwrap().expect("endpoint exists")
}

async fn counts(s: &S, ids: &[&str], since: DateTime<Utc>) -> Vec<(String, i64, i64)> {
    s.endpoint_health_counts(EndpointHealthCounts {
        ids: ids.iter().map(|i| i.to_string()).collect(),
        since,
    })
    .await
    .unwrap()
    .into_iter()
    .map(|c| (c.endpoint_id, c.attempts, c.failures))
    .collect()
}

/// A notification to a recipient's webhook (a job without an endpoint, naming its recipient)
/// counts for the recipient's endpoint; a job naming a recipient without one counts nowhere.
pub async fn endpoint_health_flush_counts_recipient_webhooks_for_their_endpoint(s: S) {
    endpoint(&s, "ep_rcp", SECRET_A).await;
    for (id, ep) in [("rcp_hooked", Some("ep_rcp")), ("rcp_plain", None)] {
        s.recipient_upsert(RecipientUpsert {
            id: id.into(),
            email: format!("{id}@example.com"),
            timezone: "UTC".into(),
            locale: None,
            attributes: serde_json::json!({}),
            state: RecipientState::Active,
            endpoint_id: ep.map(str::to_string),
            now: t0(),
        })
        .await
        .unwrap();
    }
    let m = |mins: i64| t0() + Duration::minutes(mins);
    let to = |r: &str| serde_json::json!({"topic": "orders", "recipient_id": r});
    attempt_with(&s, "webhook", None, to("rcp_hooked"), m(1), "succeeded").await;
    attempt_with(&s, "webhook", None, to("rcp_hooked"), m(2), "failed").await;
    attempt_with(&s, "webhook", None, to("rcp_plain"), m(3), "failed").await;
    let done = s.endpoint_health_flush(flush(m(100))).await.unwrap();
    assert_eq!(done.attempts, 3);
    assert_eq!(done.endpoints, 1);
    let h = get(&s, "ep_rcp").await.health;
    assert_eq!(h.last_success_at, Some(m(1)));
    assert_eq!(h.consecutive_failures, 1);
    assert_eq!(
        counts(&s, &["ep_rcp"], t0()).await,
        vec![("ep_rcp".to_string(), 2, 1)]
    );
}

/// The flush folds sends (succeeded and failed attempts of jobs with an endpoint) into the
/// streak and the hourly counters once each, waits for attempts not yet settled and for
/// everything after them, and ignores skips and jobs without an endpoint.
pub async fn endpoint_health_flush_folds_settled_attempts_once(s: S) {
    endpoint(&s, "ep_h1", SECRET_A).await;
    endpoint(&s, "ep_h2", SECRET_B).await;
    let m = |mins: i64| t0() + Duration::minutes(mins);
    attempt_to(&s, Some("ep_h1"), m(1), "failed").await;
    attempt_to(&s, Some("ep_h1"), m(2), "succeeded").await;
    attempt_to(&s, Some("ep_h1"), m(3), "failed").await;
    attempt_to(&s, Some("ep_h1"), m(70), "failed").await;
    attempt_to(&s, None, m(71), "failed").await;
    attempt_to(&s, Some("ep_h1"), m(72), "skipped").await;
    // A digest with the endpoint for its follow-up events, whose feed fetch failed: not a
    // send to the endpoint, so it counts for nothing.
    attempt_of(&s, "digest", Some("ep_h1"), m(72), "failed").await;
    attempt_to(&s, Some("ep_h2"), m(200), "failed").await;
    attempt_to(&s, Some("ep_h1"), m(73), "failed").await;

    // Settled up to minute 100: the ep_h2 attempt (minute 200) waits, and so does the one
    // recorded after it although it finished earlier.
    let done = s.endpoint_health_flush(flush(m(100))).await.unwrap();
    assert_eq!(done.attempts, 7);
    assert_eq!(done.endpoints, 1);
    let h1 = get(&s, "ep_h1").await;
    assert_eq!(h1.health.last_success_at, Some(m(2)));
    assert_eq!(h1.health.consecutive_failures, 2);
    assert_eq!(h1.health.failing_since, Some(m(3)));
    assert_eq!(get(&s, "ep_h2").await.health, EndpointHealth::default());
    assert_eq!(
        counts(&s, &["ep_h1", "ep_h2"], t0()).await,
        vec![("ep_h1".to_string(), 4, 3)]
    );
    // Only the hours from `since` (rounded down to its hour) count.
    assert_eq!(
        counts(&s, &["ep_h1"], m(65)).await,
        vec![("ep_h1".to_string(), 1, 1)]
    );

    // Nothing new settled: nothing changes.
    let again = s.endpoint_health_flush(flush(m(100))).await.unwrap();
    assert_eq!(again, EndpointHealthFlushed::default());
    assert_eq!(get(&s, "ep_h1").await.health.consecutive_failures, 2);

    let rest = s.endpoint_health_flush(flush(m(300))).await.unwrap();
    assert_eq!(rest.attempts, 2);
    let h1 = get(&s, "ep_h1").await;
    assert_eq!(h1.health.consecutive_failures, 3);
    assert_eq!(
        h1.health.failing_since,
        Some(m(3)),
        "the streak's start stays"
    );
    let h2 = get(&s, "ep_h2").await;
    assert_eq!(h2.health.consecutive_failures, 1);
    assert_eq!(h2.health.failing_since, Some(m(200)));
    assert_eq!(
        counts(&s, &["ep_h1", "ep_h2"], t0()).await,
        vec![("ep_h1".to_string(), 5, 4), ("ep_h2".to_string(), 1, 1)]
    );

    // A success ends the streak.
    attempt_to(&s, Some("ep_h1"), m(301), "succeeded").await;
    s.endpoint_health_flush(flush(m(400))).await.unwrap();
    let h1 = get(&s, "ep_h1").await;
    assert_eq!(h1.health.consecutive_failures, 0);
    assert_eq!(h1.health.failing_since, None);
    assert_eq!(h1.health.last_success_at, Some(m(301)));
    assert!(counts(&s, &[], t0()).await.is_empty());
}

/// A flush reads at most `limit` attempts; the next one goes on from there.
pub async fn endpoint_health_flush_is_bounded(s: S) {
    endpoint(&s, "ep_b", SECRET_A).await;
    for i in 0..5 {
        attempt_to(&s, Some("ep_b"), t0() + Duration::seconds(i), "failed").await;
    }
    let later = t0() + Duration::hours(1);
    let first = s
        .endpoint_health_flush(EndpointHealthFlush {
            settled_before: later,
            limit: 3,
            kinds: vec!["webhook".into()],
        })
        .await
        .unwrap();
    assert_eq!(first.attempts, 3);
    assert_eq!(get(&s, "ep_b").await.health.consecutive_failures, 3);
    let second = s.endpoint_health_flush(flush(later)).await.unwrap();
    assert_eq!(second.attempts, 2);
    assert_eq!(get(&s, "ep_b").await.health.consecutive_failures, 5);
}

/// The streak disable needs both the count and the duration; it records `failure_streak`,
/// touches no disabled endpoint, and enabling again resets the streak.
pub async fn endpoint_streak_disable_needs_count_and_time_and_enable_resets(s: S) {
    endpoint(&s, "ep_s1", SECRET_A).await;
    endpoint(&s, "ep_s2", SECRET_B).await;
    let m = |mins: i64| t0() + Duration::minutes(mins);
    for i in 0..3 {
        attempt_to(&s, Some("ep_s1"), m(i), "failed").await;
    }
    attempt_to(&s, Some("ep_s2"), m(50), "failed").await;
    s.endpoint_health_flush(flush(m(100))).await.unwrap();
    let disable = |min_failures: i64, failing_before: DateTime<Utc>| EndpointStreakDisable {
        min_failures,
        failing_before,
        now: m(120),
    };
    // Enough failures, not long enough; long enough, not enough failures.
    assert!(
        s.endpoint_streak_disable(disable(3, m(-1)))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.endpoint_streak_disable(disable(4, m(60)))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(get(&s, "ep_s1").await.disabled_at, None);
    let off = s.endpoint_streak_disable(disable(1, m(10))).await.unwrap();
    assert_eq!(off, vec!["ep_s1".to_string()]);
    let e = get(&s, "ep_s1").await;
    assert_eq!(e.disabled_at, Some(m(120)));
    assert_eq!(e.disabled_reason.as_deref(), Some(FAILURE_STREAK));
    assert!(
        s.endpoint_streak_disable(disable(1, m(10)))
            .await
            .unwrap()
            .is_empty(),
        "a disabled endpoint is not disabled again"
    );
    // Enabling an enabled endpoint changes nothing; enabling a disabled one resets its streak.
    let s2 = s
        .endpoint_enable(EndpointEnable { id: "ep_s2".into() })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s2.health.consecutive_failures, 1);
    let e = s
        .endpoint_enable(EndpointEnable { id: "ep_s1".into() })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.disabled_at, None);
    assert_eq!(e.health.consecutive_failures, 0);
    assert_eq!(e.health.failing_since, None);
}

/// Rotation: the new secret is the endpoint's (found by it on upsert), the old one is kept as
/// the previous secret until the window ends; a new secret another endpoint has with the same
/// URL is a conflict and changes nothing; an unknown id is `None`.
pub async fn endpoint_secret_rotate_keeps_the_previous_and_moves_the_lookup(s: S) {
    let a = endpoint(&s, "ep_r1", SECRET_A).await;
    endpoint(&s, "ep_r2", SECRET_C).await;
    let until = t0() + Duration::days(1);
    let r = s
        .endpoint_secret_rotate(EndpointSecretRotate {
            id: a.id.clone(),
            secret: SECRET_B.into(),
            previous_expires_at: until,
        })
        .await
        .unwrap()
        .expect("the endpoint exists");
    assert_eq!(r.secret, SECRET_B);
    assert_eq!(r.previous_secret.as_deref(), Some(SECRET_A));
    assert_eq!(r.previous_secret_expires_at, Some(until));
    let got = get(&s, "ep_r1").await;
    assert_eq!(got, r);
    assert_eq!(
        got.previous_secret_at(until - Duration::seconds(1)),
        Some(SECRET_A)
    );
    assert_eq!(got.previous_secret_at(until), None);
    // Upserting the new pair finds the endpoint; the old pair is free for a new one.
    let same = endpoint(&s, &new_id(IdPrefix::Endpoint, t0()), SECRET_B).await;
    assert_eq!(same.id, "ep_r1");
    let other = endpoint(&s, "ep_r3", SECRET_A).await;
    assert_eq!(other.id, "ep_r3");
    // ep_r2 to SECRET_B: ep_r1 has that URL and secret now.
    let e = s
        .endpoint_secret_rotate(EndpointSecretRotate {
            id: "ep_r2".into(),
            secret: SECRET_B.into(),
            previous_expires_at: until,
        })
        .await
        .expect_err("a conflict");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let r2 = get(&s, "ep_r2").await;
    assert_eq!(
        (r2.secret.as_str(), r2.previous_secret),
        (SECRET_C, None),
        "nothing changed"
    );
    let none = s
        .endpoint_secret_rotate(EndpointSecretRotate {
            id: "ep_nope".into(),
            secret: SECRET_B.into(),
            previous_expires_at: until,
        })
        .await
        .unwrap();
    assert!(none.is_none());
}

/// Hourly counters older than the cut-off are pruned, in bounded batches.
pub async fn endpoint_health_hours_are_pruned_by_age(s: S) {
    endpoint(&s, "ep_p", SECRET_A).await;
    for h in 0..3 {
        attempt_to(&s, Some("ep_p"), t0() + Duration::hours(h), "failed").await;
    }
    s.endpoint_health_flush(flush(t0() + Duration::hours(10)))
        .await
        .unwrap();
    let prune = |limit| RetentionPrune {
        table: RetentionTable::EndpointHealthHours,
        before: t0() + Duration::hours(2),
        limit,
    };
    assert_eq!(s.retention_prune(prune(1)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(prune(10)).await.unwrap(), 1);
    assert_eq!(s.retention_prune(prune(10)).await.unwrap(), 0);
    assert_eq!(
        counts(&s, &["ep_p"], t0()).await,
        vec![("ep_p".to_string(), 1, 1)]
    );
}
