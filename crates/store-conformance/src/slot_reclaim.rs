//! Concurrency slots left behind (issue 34): a slot whose job's lease expired (its node
//! crashed) is taken again by the next claim of its key, before any rescue; slot rows no job
//! holds any more are deleted by the pruner (`RetentionTable::ConcurrencySlots`), and held
//! ones stay.

use crate::concurrency::{delivery, endpoint, limits};
use crate::fixtures::{claim, keyed, t0};
use crate::jobs::complete;
use chrono::Duration;
use kairos_store::concurrency::WAIT_MAX;
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

/// The holder of a key's only slot is claimed by a node that then dies (its lease is never
/// renewed, nothing rescues it yet): once the lease has expired, the next claim frees the
/// slot and the key's other job runs.
pub async fn concurrency_slot_of_an_expired_lease_is_taken_again(s: S) {
    s.job_insert_many(vec![keyed("k", 1, 0), keyed("k", 1, 1)])
        .await
        .unwrap();
    let now = t0() + Duration::seconds(1);
    let first = s.job_claim(claim(now, 10, "dead-node")).await.unwrap();
    assert_eq!(first.len(), 1);
    // While its lease runs the slot is held.
    let during = now + WAIT_MAX;
    assert!(
        s.job_claim(claim(during, 10, "n2"))
            .await
            .unwrap()
            .is_empty()
    );
    // Its lease (30 s) has expired; no rescue has run.
    let after = now + Duration::seconds(31) + WAIT_MAX;
    let next = s.job_claim(claim(after, 10, "n2")).await.unwrap();
    assert_eq!(next.len(), 1, "the dead holder's slot is free");
    assert_ne!(next[0].id, first[0].id);
}

/// Slot rows no job holds (their job finished, and no claim of the key came since) are
/// deleted by age, in bounded batches; a held slot stays and keeps holding. (Slots of an
/// endpoint's `max_in_flight`, which both databases take; PostgreSQL checks concurrency keys
/// without slots.)
pub async fn concurrency_slots_no_job_holds_are_pruned_and_held_ones_stay(s: S) {
    for ep in ["ep_gone", "ep_held"] {
        endpoint(&s, ep).await;
        s.endpoint_limits_set(limits(ep, None, Some(1)))
            .await
            .unwrap();
    }
    s.job_insert_many(vec![
        delivery("ep_gone", 0),
        delivery("ep_held", 1),
        delivery("ep_held", 2),
    ])
    .await
    .unwrap();
    let now = t0() + Duration::seconds(1);
    let got = s.job_claim(claim(now, 10, "n1")).await.unwrap();
    assert_eq!(got.len(), 2, "one of each endpoint");
    let gone = got
        .iter()
        .find(|j| j.endpoint_id.as_deref() == Some("ep_gone"))
        .expect("the delivery to ep_gone");
    s.job_complete_many(vec![complete(gone, Transition::Succeeded)])
        .await
        .unwrap();
    let prune = |before| RetentionPrune {
        table: RetentionTable::ConcurrencySlots,
        before,
        limit: 100,
    };
    assert_eq!(
        s.retention_prune(prune(now - Duration::seconds(1)))
            .await
            .unwrap(),
        0,
        "rows taken after the cut-off stay"
    );
    assert_eq!(
        s.retention_prune(prune(now + Duration::seconds(1)))
            .await
            .unwrap(),
        1,
        "the finished job's slot row, not the held one"
    );
    assert_eq!(
        s.retention_prune(prune(now + Duration::seconds(1)))
            .await
            .unwrap(),
        0
    );
    // The held slot still holds: the key's other job waits.
    assert!(
        s.job_claim(claim(now + WAIT_MAX, 10, "n1"))
            .await
            .unwrap()
            .is_empty()
    );
}
