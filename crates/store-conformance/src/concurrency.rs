//! Concurrency keys (issue 34): at most `max` claimed jobs of one key run at once, whoever
//! claims; the others go back to wait without spending an attempt and do not block other
//! keys; a slot is free again when its job finishes, is rescued or is cancelled. Endpoint
//! limits (rate and in flight) hold the same way.

use crate::fixtures::{claim, job, keyed, t0};
use crate::jobs::complete;
use chrono::Duration;
use kairos_core::{Concurrency, JobState};
use kairos_store::concurrency::{WAIT_BASE, WAIT_MAX};
use kairos_store::flow::{EndpointLimitsSet, RateLimit};
use kairos_store::*;
use std::collections::HashMap;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn keys_of(jobs: &[kairos_core::Job]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for j in jobs {
        let k = j
            .concurrency
            .as_ref()
            .map_or("-".to_string(), |c| c.key.clone());
        *n.entry(k).or_default() += 1;
    }
    n
}

/// A job's key and limit are stored and read back.
pub async fn concurrency_key_roundtrips(s: S) {
    let j = keyed("account:42", 3, 0);
    s.job_insert(j.clone()).await.unwrap();
    let back = s.job_get(&j.id).await.unwrap().expect("job");
    assert_eq!(
        back.concurrency,
        Some(Concurrency {
            key: "account:42".into(),
            max: 3
        })
    );
    let plain = job(t0());
    s.job_insert(plain.clone()).await.unwrap();
    assert_eq!(
        s.job_get(&plain.id).await.unwrap().unwrap().concurrency,
        None
    );
}

/// One claim takes at most `max` jobs of a key; the rest stay as they were (not claimed, so
/// no attempt and no move); jobs of other keys and without a key are claimed beside.
pub async fn concurrency_claim_takes_at_most_max_per_key_and_other_keys_run(s: S) {
    let mut all = Vec::new();
    for i in 0..4 {
        all.push(keyed("a", 2, i));
    }
    all.push(keyed("b", 1, 10));
    all.push(keyed("b", 1, 11));
    all.push(job(t0() + Duration::milliseconds(20)));
    s.job_insert_many(all.clone()).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let got = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    let n = keys_of(&got);
    assert_eq!(n.get("a"), Some(&2), "{n:?}");
    assert_eq!(n.get("b"), Some(&1), "{n:?}");
    assert_eq!(n.get("-"), Some(&1), "{n:?}");
    let ran: Vec<&str> = got.iter().map(|j| j.id.as_str()).collect();
    for j in all.iter().filter(|j| !ran.contains(&j.id.as_str())) {
        let w = s.job_get(&j.id).await.unwrap().unwrap();
        assert_eq!(w.state, JobState::Available, "{}", j.id);
        assert_eq!(w.attempt, 0, "waiting for a slot is not an attempt");
        assert!(w.lease_token.is_none());
        assert_eq!(w.run_at, j.run_at, "left where it was");
    }
    // While the slots are held, the waiting jobs are not claimed, even when due again.
    let later = now + WAIT_MAX + Duration::seconds(1);
    assert!(
        s.job_claim(claim(later, 10, "n2"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// A slot is free again when its job completes: the next claim takes a waiting job of the key.
pub async fn concurrency_slot_frees_on_completion(s: S) {
    s.job_insert_many(vec![keyed("k", 1, 0), keyed("k", 1, 1)])
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(first.len(), 1);
    let later = now + WAIT_BASE;
    assert!(
        s.job_claim(claim(later, 10, "n1"))
            .await
            .unwrap()
            .is_empty()
    );
    s.job_complete_many(vec![complete(&first[0], Transition::Succeeded)])
        .await
        .unwrap();
    // The claim at `later` put it back again; once due again, its slot is free.
    let next = s
        .job_claim(claim(later + WAIT_MAX, 10, "n1"))
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_ne!(next[0].id, first[0].id);
    assert_eq!(next[0].attempt, 1, "its first attempt");
}

/// A slot is free again when its job's lease expires and the rescuer returns it, and when a
/// running job is cancelled.
pub async fn concurrency_slot_frees_on_rescue_and_cancel(s: S) {
    s.job_insert_many(vec![keyed("k", 1, 0), keyed("k", 1, 1)])
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(first.len(), 1);
    let expired = now + Duration::seconds(31);
    let rescued = s
        .job_rescue(JobRescue {
            now: expired,
            limit: 10,
            restarted_node: None,
        })
        .await
        .unwrap();
    assert_eq!(rescued, vec![first[0].id.clone()]);
    let next = s.job_claim(claim(expired, 10, "n2")).await.unwrap();
    assert_eq!(next.len(), 1, "the rescued job's slot is free");
    // Cancel the running one: its slot is free for the other.
    let running = &next[0];
    s.job_cancel(JobCancel {
        id: running.id.clone(),
        reason: "test".into(),
        now: expired,
    })
    .await
    .unwrap();
    let after = expired + WAIT_MAX;
    let last = s.job_claim(claim(after, 10, "n3")).await.unwrap();
    assert_eq!(last.len(), 1, "the cancelled job's slot is free");
    assert_ne!(last[0].id, running.id);
}

/// Claimers racing on one key (tasks standing for nodes) never run more than `max` of its
/// jobs at once; jobs of another key run beside them.
pub async fn concurrency_claims_racing_never_exceed_max(s: S) {
    let mut all = Vec::new();
    for i in 0..40 {
        all.push(keyed("hot", 2, i));
        all.push(keyed(&format!("cold-{i}"), 1, i));
    }
    s.job_insert_many(all).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let mut tasks = Vec::new();
    for w in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for _ in 0..5 {
                got.extend(s.job_claim(claim(now, 8, &format!("w{w}"))).await.unwrap());
            }
            got
        }));
    }
    let mut running = Vec::new();
    for t in tasks {
        running.extend(t.await.unwrap());
    }
    let n = keys_of(&running);
    assert_eq!(n.get("hot"), Some(&2), "{n:?}");
    assert_eq!(
        n.keys().filter(|k| k.starts_with("cold-")).count(),
        40,
        "every other key ran"
    );
}

/// A key that could not be rendered takes no slot: its jobs are claimed (the executor fails
/// them, saying why) and never wait.
pub async fn concurrency_failed_key_takes_no_slot(s: S) {
    let bad = JobInsert {
        concurrency: Some(Concurrency::failed("the concurrency key rendered empty", 1)),
        ..job(t0())
    };
    let bad2 = JobInsert {
        concurrency: Some(Concurrency::failed("the concurrency key rendered empty", 1)),
        ..job(t0())
    };
    s.job_insert_many(vec![bad, bad2]).await.unwrap();
    let got = s.job_claim(claim(t0(), 10, "n1")).await.unwrap();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|j| {
        j.concurrency
            .as_ref()
            .and_then(|c| c.problem())
            .is_some_and(|p| p.contains("empty"))
    }));
}

/// The jobs put back wait with reason `concurrency_key`, counted with the time they were made
/// to wait; every reason is listed, zeros included; a job that then runs no longer counts.
/// (A claim takes at most a job's own `max` of its key, but a key's limit is the smallest
/// `max` of its jobs in the batch: jobs of one key asking for different limits are claimed
/// and put back, as jobs are when claims race.)
pub async fn concurrency_waits_are_counted_by_reason(s: S) {
    let before = s.job_waiting().await.unwrap();
    let reasons: Vec<&str> = before.iter().map(|w| w.reason.as_str()).collect();
    assert_eq!(reasons, ["rate_limit", "in_flight", "concurrency_key"]);
    assert!(before.iter().all(|w| w.waiting == 0 && w.waits_total == 0));
    s.job_insert_many(vec![keyed("k", 1, 0), keyed("k", 3, 1), keyed("k", 3, 2)])
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(first.len(), 1);
    let after = s.job_waiting().await.unwrap();
    let k = after
        .iter()
        .find(|w| w.reason == "concurrency_key")
        .unwrap();
    assert_eq!(k.waiting, 2);
    assert_eq!(k.waits_total, 2);
    // The first waits WAIT_BASE, the second twice that (spread out).
    assert_eq!(k.wait_ms_total, 3 * WAIT_BASE.num_milliseconds());
    s.job_complete_many(vec![complete(&first[0], Transition::Succeeded)])
        .await
        .unwrap();
    let next = s.job_claim(claim(now + WAIT_BASE, 10, "n1")).await.unwrap();
    assert_eq!(next.len(), 1);
    let k = s.job_waiting().await.unwrap().remove(2);
    assert_eq!(k.waiting, 1, "the job that ran no longer waits");
}

/// Issue 34's cost: a claim does not take the jobs of a key already at its max. They stay
/// `available` as they were (no attempt, no write, no put-back counted) while other jobs are
/// claimed, say why they wait, count as waiting, and run once the key frees.
pub async fn concurrency_claim_skips_a_key_at_its_max_issue_34(s: S) {
    s.job_insert(keyed("busy", 1, 0)).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let holder = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(holder.len(), 1);
    let waiter = keyed("busy", 1, 1);
    let other = job(t0() + Duration::milliseconds(2));
    s.job_insert_many(vec![waiter.clone(), other.clone()])
        .await
        .unwrap();
    let got = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [other.id.as_str()], "only the job without a busy key");
    let w = s.job_get(&waiter.id).await.unwrap().unwrap();
    assert_eq!(w.state, JobState::Available);
    assert_eq!(w.attempt, 0, "skipping is not an attempt");
    assert_eq!(w.run_at, waiter.run_at, "skipping moves nothing");
    assert_eq!(w.wait_reason.as_deref(), Some("concurrency_key"));
    let k = s.job_waiting().await.unwrap().remove(2);
    assert_eq!(
        (k.waiting, k.waits_total),
        (1, 0),
        "waiting, never put back"
    );
    s.job_complete_many(vec![complete(&holder[0], Transition::Succeeded)])
        .await
        .unwrap();
    let next = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].id, waiter.id);
    assert_eq!(next[0].wait_reason, None);
}

/// `job_waiting` counts every available job whose key is at that job's own max: several
/// jobs of one busy key, not those of the same key asking for a larger max, nor those of a
/// key with nothing running.
pub async fn concurrency_waiting_counts_each_job_of_a_key_at_its_max(s: S) {
    s.job_insert(keyed("busy", 1, 0)).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let holder = s.job_claim(claim(now, 1, "n1")).await.unwrap();
    assert_eq!(holder.len(), 1);
    s.job_insert_many(vec![
        keyed("busy", 1, 1),
        keyed("busy", 1, 2),
        keyed("busy", 1, 3),
        keyed("busy", 2, 4),
        keyed("idle", 1, 5),
        keyed("idle", 1, 6),
    ])
    .await
    .unwrap();
    let k = s.job_waiting().await.unwrap().remove(2);
    assert_eq!(k.reason, "concurrency_key");
    assert_eq!(k.waiting, 3, "the three of max 1 behind the running one");
    s.job_complete_many(vec![complete(&holder[0], Transition::Succeeded)])
        .await
        .unwrap();
    let k = s.job_waiting().await.unwrap().remove(2);
    assert_eq!(k.waiting, 0, "nothing of the key runs any more");
}

/// A job a claim skipped for its busy key, below the jobs the claim took, is claimed by the
/// first claim after its key frees: not left for a sweep (PostgreSQL's claim cursor).
pub async fn concurrency_skipped_job_below_the_claimed_runs_when_its_key_frees(s: S) {
    let now = t0() + Duration::seconds(1);
    s.job_insert(keyed("k", 1, 0)).await.unwrap();
    let holder = s.job_claim(claim(now, 1, "n1")).await.unwrap();
    assert_eq!(holder.len(), 1);
    let skipped = keyed("k", 1, 1);
    let plain: Vec<JobInsert> = (2..6)
        .map(|ms| job(t0() + Duration::milliseconds(ms)))
        .collect();
    let mut all = vec![skipped.clone()];
    all.extend(plain.iter().cloned());
    s.job_insert_many(all).await.unwrap();
    let two = s.job_claim(claim(now, 2, "n1")).await.unwrap();
    let two: Vec<&str> = two.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(two, [plain[0].id.as_str(), plain[1].id.as_str()]);
    s.job_complete_many(vec![complete(&holder[0], Transition::Succeeded)])
        .await
        .unwrap();
    let rest = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    let rest: Vec<&str> = rest.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        rest,
        [
            skipped.id.as_str(),
            plain[2].id.as_str(),
            plain[3].id.as_str()
        ]
    );
}

pub(crate) async fn endpoint(s: &S, id: &str) {
    s.endpoint_upsert(EndpointUpsert {
        id: id.into(),
        url: format!("https://example.com/{id}"),
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        now: t0(),
    })
    .await
    .unwrap();
}

pub(crate) fn limits(
    id: &str,
    rate: Option<(u32, u32)>,
    max_in_flight: Option<u32>,
) -> EndpointLimitsSet {
    EndpointLimitsSet {
        endpoint_id: id.into(),
        rate_limit: rate.map(|(per_second, burst)| RateLimit { per_second, burst }),
        max_in_flight,
        now: t0(),
    }
}

pub(crate) fn delivery(endpoint: &str, ms: i64) -> JobInsert {
    JobInsert {
        endpoint_id: Some(endpoint.into()),
        ..job(t0() + Duration::milliseconds(ms))
    }
}

/// An endpoint's limits are stored, listed (with zero waiting) and removed; an unknown
/// endpoint has none to set.
pub async fn endpoint_limits_set_list_and_remove(s: S) {
    endpoint(&s, "ep_l").await;
    let set = s
        .endpoint_limits_set(limits("ep_l", Some((20, 40)), Some(4)))
        .await
        .unwrap()
        .expect("the endpoint exists");
    assert_eq!(
        set.rate_limit,
        Some(RateLimit {
            per_second: 20,
            burst: 40
        })
    );
    assert_eq!(set.max_in_flight, Some(4));
    assert_eq!((set.waiting_rate_limit, set.waiting_in_flight), (0, 0));
    let listed = s.endpoint_limits_list(vec!["ep_l".into()]).await.unwrap();
    assert_eq!(listed, vec![set]);
    let only_rate = s
        .endpoint_limits_set(limits("ep_l", Some((5, 5)), None))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        only_rate.max_in_flight, None,
        "a field left out is no limit"
    );
    let none = s
        .endpoint_limits_set(limits("ep_l", None, None))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((none.rate_limit, none.max_in_flight), (None, None));
    assert!(
        s.endpoint_limits_set(limits("ep_nope", Some((1, 1)), None))
            .await
            .unwrap()
            .is_none()
    );
}

/// A delivery over its endpoint's rate limit goes back without an attempt, due when its token
/// is free; the burst goes at once; deliveries to other endpoints are not held back.
pub async fn endpoint_rate_limit_puts_deliveries_back_until_their_token(s: S) {
    endpoint(&s, "ep_r").await;
    endpoint(&s, "ep_free").await;
    s.endpoint_limits_set(limits("ep_r", Some((2, 2)), None))
        .await
        .unwrap();
    let mut all: Vec<JobInsert> = (0..5).map(|i| delivery("ep_r", i)).collect();
    all.push(delivery("ep_free", 10));
    s.job_insert_many(all.clone()).await.unwrap();
    let now = t0() + Duration::seconds(1);
    let got = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    let to_r = got
        .iter()
        .filter(|j| j.endpoint_id.as_deref() == Some("ep_r"))
        .count();
    assert_eq!(to_r, 2, "the burst");
    assert!(
        got.iter()
            .any(|j| j.endpoint_id.as_deref() == Some("ep_free"))
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
    // One token each 500 ms at 2/s, paced 4 % under (`kairos_store::flow::PACE`).
    assert_eq!(due, [520, 1040, 1560]);
    let l = s.endpoint_limits_list(vec!["ep_r".into()]).await.unwrap();
    assert_eq!(l[0].waiting_rate_limit, 3);
    // When its token is free, one more goes.
    let at = now + Duration::milliseconds(520);
    let later = s.job_claim(claim(at, 10, "n2")).await.unwrap();
    assert_eq!(later.len(), 1);
    assert!(s.job_claim(claim(at, 10, "n2")).await.unwrap().is_empty());
}

/// At most `max_in_flight` deliveries to an endpoint run at once; when one finishes the next
/// goes.
pub async fn endpoint_max_in_flight_holds_until_a_delivery_finishes(s: S) {
    endpoint(&s, "ep_f").await;
    s.endpoint_limits_set(limits("ep_f", None, Some(1)))
        .await
        .unwrap();
    s.job_insert_many((0..3).map(|i| delivery("ep_f", i)).collect())
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(first.len(), 1);
    let l = s.endpoint_limits_list(vec!["ep_f".into()]).await.unwrap();
    assert_eq!(l[0].waiting_in_flight, 2);
    let later = now + WAIT_MAX;
    assert!(
        s.job_claim(claim(later, 10, "n1"))
            .await
            .unwrap()
            .is_empty()
    );
    s.job_complete_many(vec![complete(&first[0], Transition::Succeeded)])
        .await
        .unwrap();
    let again = later + WAIT_MAX;
    assert_eq!(s.job_claim(claim(again, 10, "n1")).await.unwrap().len(), 1);
}

/// Issue 34: a job put back says why on the job itself (`Job::wait_reason`, what the admin's
/// job page shows): `concurrency_key` for a key without a free slot, `rate_limit` for an
/// endpoint's empty bucket; the job that ran says nothing.
pub async fn job_get_reads_why_a_due_job_waits_issue_34(s: S) {
    s.job_insert_many(vec![keyed("acct:7", 1, 0), keyed("acct:7", 1, 1)])
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let ran = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].wait_reason, None);
    let all = s
        .job_search(JobSearch {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let waiting = all.iter().find(|j| j.id != ran[0].id).expect("the other");
    let got = s.job_get(&waiting.id).await.unwrap().unwrap();
    assert_eq!(got.state, JobState::Available);
    assert_eq!(got.wait_reason.as_deref(), Some("concurrency_key"));

    endpoint(&s, "ep_wait").await;
    s.endpoint_limits_set(limits("ep_wait", Some((1, 1)), None))
        .await
        .unwrap();
    let d = [delivery("ep_wait", 2), delivery("ep_wait", 3)];
    s.job_insert_many(d.to_vec()).await.unwrap();
    let later = now + Duration::seconds(2);
    let sent = s.job_claim(claim(later, 10, "n1")).await.unwrap();
    let sent: Vec<&str> = sent.iter().map(|j| j.id.as_str()).collect();
    let held: Vec<_> = d
        .iter()
        .filter(|j| !sent.contains(&j.id.as_str()))
        .collect();
    assert_eq!(held.len(), 1, "one token: one delivery goes");
    let got = s.job_get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(got.wait_reason.as_deref(), Some("rate_limit"));
    assert_eq!(got.endpoint_id.as_deref(), Some("ep_wait"));
}
