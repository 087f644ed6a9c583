//! Monitoring reads and the SLO alert state (metrics, readiness).

use crate::fixtures::{claim, job, t0};
use chrono::Duration;
use kairos_core::{Job, JobKind};
use kairos_store::*;
use std::sync::Arc;

type S = Arc<dyn Store>;

fn done(j: &Job, transition: Transition, finished: chrono::DateTime<chrono::Utc>) -> JobComplete {
    let outcome = crate::fixtures::outcome_of(&transition);
    JobComplete {
        id: j.id.clone(),
        lease_token: j.lease_token.clone().unwrap_or_default(),
        attempt: Attempt {
            job_id: j.id.clone(),
            attempt: j.attempt,
            started_at: finished,
            finished_at: finished,
            outcome: outcome.parse().expect("outcome"),
            error_class: (outcome == "failed").then_some(kairos_core::ErrorClass::Permanent),
            status_code: None,
            error: None,
            response: None,
            provider_id: None,
            node: Some("n".into()),
        },
        transition,
        record_exposure: false,
    }
}

fn count(v: &[JobCount], state: &str, kind: &str) -> i64 {
    v.iter()
        .filter(|c| c.state == state && c.kind == kind)
        .map(|c| c.count)
        .sum()
}

/// Every job per state and kind: both groups `kairos_jobs` reads.
async fn all_counts(s: &S) -> Vec<JobCount> {
    let mut all = Vec::new();
    for group in [JobStateGroup::Queued, JobStateGroup::Retained] {
        all.extend(s.job_count_group(JobCountGroup { group }).await.unwrap());
    }
    all
}

/// The `kairos_jobs{state,kind}` gauge's source, and the queue depth, oldest due job and
/// both stuck axes.
pub async fn job_count_by_state_kind_and_backlog(s: S) {
    let mut ids = Vec::new();
    for i in 0..3 {
        let p = job(t0() + Duration::seconds(i));
        ids.push(p.id.clone());
        s.job_insert(p).await.unwrap();
    }
    let mut h = job(t0() - Duration::hours(2));
    h.kind = JobKind("http".into());
    s.job_insert(h).await.unwrap();
    let mut later = job(t0() + Duration::hours(1));
    later.kind = JobKind("http".into());
    s.job_insert(later).await.unwrap();

    // Claim the oldest webhook-or-http job (the 2 h old http job): it runs under a 30 s lease.
    let claimed = s.job_claim(claim(t0(), 1, "n")).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].kind.as_str(), "http");

    let counts = all_counts(&s).await;
    assert_eq!(count(&counts, "available", "webhook"), 3);
    assert_eq!(count(&counts, "running", "http"), 1);
    assert_eq!(count(&counts, "available", "http"), 1);
    assert_eq!(counts.iter().map(|c| c.count).sum::<i64>(), 5);

    let now = t0() + Duration::seconds(10);
    let b = s
        .job_backlog(JobBacklog {
            now,
            stuck_before: t0() + Duration::seconds(1),
            lease_expired_before: now,
        })
        .await
        .unwrap();
    assert_eq!(
        b.due, 3,
        "three webhook jobs due; the later http job is not"
    );
    assert_eq!(b.oldest_due_at, Some(t0()));
    assert_eq!(b.stuck, 2, "due at t0 and t0+1s are due since stuck_before");
    assert_eq!(b.lease_expired, 0, "the lease runs until t0+30s");

    let later_now = t0() + Duration::seconds(90);
    let b = s
        .job_backlog(JobBacklog {
            now: later_now,
            stuck_before: later_now - Duration::hours(1),
            lease_expired_before: later_now - Duration::seconds(60),
        })
        .await
        .unwrap();
    assert_eq!(b.stuck, 0);
    assert_eq!(b.lease_expired, 1, "lease ended at t0+30s, 60 s before now");

    let none = s
        .job_backlog(JobBacklog {
            now: t0() - Duration::days(1),
            stuck_before: t0() - Duration::days(2),
            lease_expired_before: t0() - Duration::days(1),
        })
        .await
        .unwrap();
    assert_eq!(none, Backlog::default(), "nothing due a day earlier");
}

/// `kairos_jobs` in two reads that cost differently: the queue's states (`available`,
/// `running`) and the retained ones (every other). Together they are the whole count, each in
/// state and kind order, and neither holds a state of the other.
pub async fn job_count_group_splits_the_queue_from_what_is_retained(s: S) {
    for _ in 0..5 {
        s.job_insert(job(t0())).await.unwrap();
    }
    let mut jobs = s.job_claim(claim(t0(), 4, "n")).await.unwrap();
    assert_eq!(jobs.len(), 4);
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let at = t0() + Duration::minutes(1);
    s.job_complete_many(vec![
        done(&jobs[0], Transition::Succeeded, at),
        done(&jobs[1], Transition::Dead, at),
        done(&jobs[2], Transition::Skipped("suppressed".into()), at),
    ])
    .await
    .unwrap();
    let mut later = job(t0() + Duration::hours(1));
    later.kind = JobKind("http".into());
    s.job_insert(later).await.unwrap();

    let queued = s
        .job_count_group(JobCountGroup {
            group: JobStateGroup::Queued,
        })
        .await
        .unwrap();
    let retained = s
        .job_count_group(JobCountGroup {
            group: JobStateGroup::Retained,
        })
        .await
        .unwrap();
    let key = |c: &JobCount| (c.state.clone(), c.kind.clone(), c.count);
    assert_eq!(
        queued.iter().map(key).collect::<Vec<_>>(),
        vec![
            ("available".into(), "http".into(), 1),
            ("available".into(), "webhook".into(), 1),
            ("running".into(), "webhook".into(), 1),
        ],
        "the queue's states, a future job included"
    );
    assert_eq!(
        retained.iter().map(key).collect::<Vec<_>>(),
        vec![
            ("dead".into(), "webhook".into(), 1),
            ("skipped".into(), "webhook".into(), 1),
            ("succeeded".into(), "webhook".into(), 1),
        ],
        "the finished states"
    );
    let both: Vec<(String, i64)> = ["available", "dead", "running", "skipped", "succeeded"]
        .iter()
        .map(|st| {
            let n = queued.iter().chain(&retained).filter(|c| c.state == *st);
            (st.to_string(), n.map(|c| c.count).sum())
        })
        .collect();
    assert_eq!(
        both,
        s.job_count_by_state().await.unwrap(),
        "the two groups are the whole count"
    );
}

/// The failure rate's source: final states per kind in a window, by `finished_at`.
pub async fn job_count_finished_counts_final_states_in_window(s: S) {
    for _ in 0..4 {
        s.job_insert(job(t0())).await.unwrap();
    }
    let mut jobs = s.job_claim(claim(t0(), 10, "n")).await.unwrap();
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let at = t0() + Duration::minutes(1);
    let late = t0() + Duration::hours(2);
    s.job_complete_many(vec![
        done(&jobs[0], Transition::Succeeded, at),
        done(&jobs[1], Transition::Dead, at),
        done(&jobs[2], Transition::Skipped("suppressed".into()), at),
        done(&jobs[3], Transition::Succeeded, late),
    ])
    .await
    .unwrap();
    let v = s
        .job_count_finished(JobCountFinished {
            since: t0(),
            until: t0() + Duration::hours(1),
        })
        .await
        .unwrap();
    assert_eq!(count(&v, "succeeded", "webhook"), 1);
    assert_eq!(count(&v, "dead", "webhook"), 1);
    assert_eq!(count(&v, "skipped", "webhook"), 1);
    assert_eq!(v.iter().map(|c| c.count).sum::<i64>(), 3, "{v:?}");
    let empty = s
        .job_count_finished(JobCountFinished {
            since: at,
            until: at,
        })
        .await
        .unwrap();
    assert!(empty.is_empty(), "the window's end is exclusive: {empty:?}");
}

/// The sampler's quarter count holds what `job_count_finished` reads for the quarter: the
/// finished jobs per kind and final state, of that quarter only; the prune deletes them.
pub async fn quarter_count_record_counts_the_finished_jobs_per_kind_and_state(s: S) {
    let q = quarter_of(t0()) + QUARTER;
    let mut mail = job(q);
    mail.kind = JobKind::new("email");
    for j in [job(q), job(q), job(q), mail, job(q), job(q)] {
        s.job_insert(j).await.unwrap();
    }
    let mut jobs = s.job_claim(claim(q, 10, "n")).await.unwrap();
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let m = Duration::minutes;
    let (webhooks, mail): (Vec<_>, Vec<_>) =
        jobs.iter().partition(|j| j.kind.as_str() == "webhook");
    s.job_complete_many(vec![
        done(webhooks[0], Transition::Succeeded, q),
        done(webhooks[1], Transition::Succeeded, q + m(14)),
        done(webhooks[2], Transition::Dead, q + m(7)),
        done(
            webhooks[3],
            Transition::Skipped("suppressed".into()),
            q + m(3),
        ),
        done(mail[0], Transition::Dead, q + m(1)),
        // The next quarter's.
        done(webhooks[4], Transition::Succeeded, q + QUARTER),
    ])
    .await
    .unwrap();
    assert!(
        s.quarter_count_record(QuarterCountRecord {
            start: q,
            now: q + m(20),
        })
        .await
        .unwrap()
    );
    let list = || QuarterCountList {
        since: q - QUARTER,
        until: q + Duration::hours(1),
        of: QuarterCountOf::Kinds,
    };
    let listed = s.quarter_count_list(list()).await.unwrap();
    assert_eq!(listed.taken, vec![q]);
    assert!(
        listed.decided.is_empty() && listed.topics.is_empty(),
        "only what was asked for"
    );
    let c = |kind: &str, state: &str, count| {
        (
            q,
            JobCount {
                kind: kind.into(),
                state: state.into(),
                count,
            },
        )
    };
    assert_eq!(
        listed.kinds,
        vec![
            c("email", "dead", 1),
            c("webhook", "dead", 1),
            c("webhook", "skipped", 1),
            c("webhook", "succeeded", 2),
        ]
    );
    let mut read = s
        .job_count_finished(JobCountFinished {
            since: q,
            until: q + QUARTER,
        })
        .await
        .unwrap();
    read.sort_by(|a, b| (&a.kind, &a.state).cmp(&(&b.kind, &b.state)));
    assert_eq!(
        read,
        listed
            .kinds
            .iter()
            .map(|(_, k)| k.clone())
            .collect::<Vec<_>>(),
        "the same as reading the job table"
    );
    s.quarter_count_prune(QuarterCountPrune {
        before: q + QUARTER,
    })
    .await
    .unwrap();
    let left = s.quarter_count_list(list()).await.unwrap();
    assert_eq!((left.taken, left.kinds), (vec![], vec![]), "pruned");
}

/// The admin's throughput series: succeeded and dead jobs per bucket aligned on the epoch
/// (a job finished at 59.999 s is in the first minute), other states and jobs outside the
/// window left out, empty buckets absent.
pub async fn job_finished_series_counts_succeeded_and_dead_per_bucket(s: S) {
    for _ in 0..6 {
        s.job_insert(job(t0())).await.unwrap();
    }
    let mut jobs = s.job_claim(claim(t0(), 10, "n")).await.unwrap();
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    // The window starts on a minute, whatever t0 is.
    let since = chrono::DateTime::from_timestamp(t0().timestamp() / 60 * 60, 0).unwrap();
    let ms = Duration::milliseconds;
    s.job_complete_many(vec![
        done(&jobs[0], Transition::Succeeded, since + ms(10_000)),
        done(&jobs[1], Transition::Succeeded, since + ms(59_999)),
        done(
            &jobs[2],
            Transition::Skipped("suppressed".into()),
            since + ms(20_000),
        ),
        done(&jobs[3], Transition::Dead, since + ms(60_000)),
        done(&jobs[4], Transition::Succeeded, since + ms(61_000)),
        done(&jobs[5], Transition::Succeeded, since + Duration::hours(2)),
    ])
    .await
    .unwrap();
    let v = s
        .job_finished_series(JobFinishedSeries {
            since,
            until: since + Duration::hours(1),
            bucket_secs: 60,
        })
        .await
        .unwrap();
    let b = |start, state: &str, count| FinishedBucket {
        start,
        state: state.into(),
        count,
    };
    assert_eq!(
        v,
        vec![
            b(since, "succeeded", 2),
            b(since + Duration::minutes(1), "dead", 1),
            b(since + Duration::minutes(1), "succeeded", 1),
        ]
    );
}

/// The `dead_runs` check's source: per schedule, its jobs that died in the window, with the
/// latest one's channel, kind and error; dead jobs without a schedule, succeeded jobs and
/// deaths outside the window are not in it.
pub async fn job_dead_scheduled_lists_latest_death_per_schedule(s: S) {
    let named = s
        .schedule_create(crate::fixtures::schedule("nightly-report", t0()))
        .await
        .unwrap();
    let mk = |schedule: Option<&str>, channel: &str, i: usize| {
        let mut p = job(t0());
        p.kind = JobKind("http".into());
        p.schedule_id = schedule.map(str::to_string);
        p.channel = Some(channel.to_string());
        p.period_key = Some(format!("2026-11-{:02}", 20 + i));
        p.dedupe_key = Some(format!("dead-scheduled:{i}"));
        p
    };
    let inserts = vec![
        mk(Some(&named.id), "call", 0),
        mk(Some(&named.id), "call", 1),
        mk(Some("sch_gone"), "hook", 2),
        mk(None, "call", 3),
        mk(Some("sch_ok"), "call", 4),
        mk(Some("sch_old"), "call", 5),
    ];
    let ids: Vec<String> = inserts.iter().map(|p| p.id.clone()).collect();
    for p in inserts {
        s.job_insert(p).await.unwrap();
    }
    let claimed = s.job_claim(claim(t0(), 10, "n")).await.unwrap();
    assert_eq!(claimed.len(), 6);
    let by_id = |id: &str| claimed.iter().find(|j| j.id == id).unwrap().clone();
    let dead = |i: usize, at: chrono::DateTime<chrono::Utc>, err: &str| {
        let mut c = done(&by_id(&ids[i]), Transition::Dead, at);
        c.attempt.error = Some(err.to_string());
        c
    };
    let at = |m: i64| t0() + Duration::minutes(m);
    s.job_complete_many(vec![
        dead(0, at(1), "HTTP 500 first"),
        dead(1, at(5), "HTTP 500 latest"),
        dead(2, at(3), "connection refused"),
        dead(3, at(2), "no schedule"),
        done(&by_id(&ids[4]), Transition::Succeeded, at(2)),
        dead(5, t0() - Duration::hours(30), "long ago"),
    ])
    .await
    .unwrap();

    let v = s
        .job_dead_scheduled(JobDeadScheduled {
            since: t0() - Duration::hours(24),
            until: at(10),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].schedule_id, named.id, "newest death first");
    assert_eq!(v[0].schedule_name.as_deref(), Some("nightly-report"));
    assert_eq!(v[0].dead, 2);
    assert_eq!(v[0].job_id, ids[1]);
    assert_eq!(v[0].kind, "http");
    assert_eq!(v[0].channel.as_deref(), Some("call"));
    assert_eq!(v[0].period_key.as_deref(), Some("2026-11-21"));
    assert_eq!(v[0].last_error.as_deref(), Some("HTTP 500 latest"));
    assert_eq!(v[0].finished_at, at(5));
    assert_eq!(v[1].schedule_id, "sch_gone");
    assert_eq!(v[1].schedule_name, None, "the schedule does not exist");
    assert_eq!(v[1].dead, 1);
    assert_eq!(v[1].last_error.as_deref(), Some("connection refused"));

    let limited = s
        .job_dead_scheduled(JobDeadScheduled {
            since: t0() - Duration::hours(24),
            until: at(10),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0].schedule_id, named.id);
    let later = s
        .job_dead_scheduled(JobDeadScheduled {
            since: at(4),
            until: at(10),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(later.len(), 1, "{later:?}");
    assert_eq!(later[0].dead, 1, "only the death inside the window counts");

    // A replayed job is no longer dead.
    s.job_retry(JobRetry {
        id: ids[2].clone(),
        now: at(11),
    })
    .await
    .unwrap();
    let v = s
        .job_dead_scheduled(JobDeadScheduled {
            since: t0() - Duration::hours(24),
            until: at(12),
            limit: 10,
        })
        .await
        .unwrap();
    assert!(v.iter().all(|r| r.schedule_id != "sch_gone"), "{v:?}");
}

/// The order the decided-groups assertions compare in (the stores order NULLs differently).
fn group_key(d: &DecidedGroup) -> [Option<String>; 5] {
    [
        d.schedule_id.clone(),
        d.kind.clone(),
        d.topic.clone(),
        Some(d.state.clone()),
        d.reason.clone(),
    ]
}

/// The `skip_rate` check's source: decided jobs (succeeded, skipped, dead) finished in the
/// window, per schedule — or per kind and `payload.topic` for jobs without a schedule — state
/// and skip reason; counted under their schedule, or under their topic for the audience kinds
/// the caller names (`DecidedGroup::subject`). Jobs with neither, cancelled and pending jobs
/// and jobs outside the window are not counted. The sampler's count of the quarter
/// (`quarter_count_record`) holds the same groups.
pub async fn job_count_decided_groups_by_schedule_or_topic_and_reason(s: S) {
    let mk = |schedule: Option<&str>, payload: serde_json::Value| {
        let mut p = job(t0());
        p.kind = JobKind("email".into());
        p.schedule_id = schedule.map(str::to_string);
        p.payload = payload;
        p.audience = kairos_core::JobAudience::of_payload(&p.payload);
        p
    };
    let topic = |t: &str| serde_json::json!({ "topic": t });
    // A webhook job's payload `topic` is the caller's data, not an audience topic.
    let webhook_with_topic = || {
        let mut p = job(t0());
        p.payload = topic("orders");
        p.audience = kairos_core::JobAudience::of_payload(&p.payload);
        p
    };
    let plan: Vec<(JobInsert, &str)> = vec![
        (mk(Some("sch_a"), topic("ignored")), "skip:not_entitled"),
        (
            mk(Some("sch_a"), serde_json::json!({})),
            "skip:not_entitled",
        ),
        (
            mk(Some("sch_a"), serde_json::json!({})),
            "skip:not_entitled",
        ),
        (mk(Some("sch_a"), serde_json::json!({})), "skip:suppressed"),
        (mk(Some("sch_a"), serde_json::json!({})), "ok"),
        (mk(Some("sch_a"), serde_json::json!({})), "dead"),
        (mk(Some("sch_a"), serde_json::json!({})), "late"),
        (mk(None, topic("weekly")), "skip:suppressed"),
        (mk(None, topic("weekly")), "skip:suppressed"),
        (mk(None, topic("weekly")), "ok"),
        (mk(None, serde_json::json!({"topic": 5})), "skip:suppressed"),
        (mk(None, serde_json::json!({})), "skip:suppressed"),
        (webhook_with_topic(), "skip:endpoint_disabled"),
    ];
    let mut by_id = std::collections::HashMap::new();
    for (p, what) in plan {
        by_id.insert(p.id.clone(), what);
        s.job_insert(p).await.unwrap();
    }
    // A cancelled job of the schedule: finished, but not decided.
    let mut c = mk(Some("sch_a"), serde_json::json!({}));
    c.run_at = t0() + Duration::hours(1);
    let cancelled = c.id.clone();
    s.job_insert(c).await.unwrap();
    s.job_cancel(JobCancel {
        id: cancelled,
        reason: "by hand".into(),
        now: t0() + Duration::minutes(1),
    })
    .await
    .unwrap();
    let claimed = s.job_claim(claim(t0(), 20, "n")).await.unwrap();
    assert_eq!(claimed.len(), 13);
    let at = t0() + Duration::minutes(1);
    let done_all: Vec<JobComplete> = claimed
        .iter()
        .map(|j| match by_id[&j.id] {
            "ok" => done(j, Transition::Succeeded, at),
            "dead" => done(j, Transition::Dead, at),
            "late" => done(
                j,
                Transition::Skipped("not_entitled".into()),
                t0() + Duration::hours(3),
            ),
            skip => done(
                j,
                Transition::Skipped(skip.trim_start_matches("skip:").into()),
                at,
            ),
        })
        .collect();
    s.job_complete_many(done_all).await.unwrap();

    let groups = s
        .job_count_decided(JobCountDecided {
            since: t0(),
            until: t0() + Duration::hours(1),
        })
        .await
        .unwrap();
    let subjects = |topic_kinds: &[&str]| {
        let kinds: Vec<String> = topic_kinds.iter().map(|k| k.to_string()).collect();
        groups
            .iter()
            .cloned()
            .filter_map(|g| g.subject(&kinds))
            .collect::<Vec<_>>()
    };
    let mut v = subjects(&["email"]);
    v.sort_by(|a, b| {
        (&a.schedule_id, &a.topic, &a.state, &a.reason).cmp(&(
            &b.schedule_id,
            &b.topic,
            &b.state,
            &b.reason,
        ))
    });
    let row =
        |schedule: Option<&str>, topic: Option<&str>, state: &str, reason: Option<&str>, n: i64| {
            DecidedCount {
                schedule_id: schedule.map(str::to_string),
                topic: topic.map(str::to_string),
                state: state.to_string(),
                reason: reason.map(str::to_string),
                count: n,
            }
        };
    assert_eq!(
        v,
        vec![
            row(None, Some("weekly"), "skipped", Some("suppressed"), 2),
            row(None, Some("weekly"), "succeeded", None, 1),
            row(Some("sch_a"), None, "dead", None, 1),
            row(Some("sch_a"), None, "skipped", Some("not_entitled"), 3),
            row(Some("sch_a"), None, "skipped", Some("suppressed"), 1),
            row(Some("sch_a"), None, "succeeded", None, 1),
        ]
    );

    // Which kinds carry an audience topic is the caller's to say, not the store's: with the
    // webhook kind listed too, its job's topic counts; with none listed, no topic counts.
    let count = |topic_kinds: &[&str]| {
        subjects(topic_kinds)
            .into_iter()
            .filter(|r| r.schedule_id.is_none())
            .map(|r| (r.topic.unwrap_or_default(), r.count))
            .collect::<Vec<_>>()
    };
    let mut both = count(&["email", "webhook"]);
    both.sort();
    assert_eq!(
        both,
        vec![
            ("orders".to_string(), 1),
            ("weekly".to_string(), 1),
            ("weekly".to_string(), 2)
        ]
    );
    assert_eq!(count(&[]), vec![]);

    // The sampler's quarter count holds the same jobs, with the kind of those without a
    // schedule (the engine picks the kinds whose topic counts); the late skip is in its own
    // quarter.
    let q = quarter_of(at);
    count_quarter(&*s, q).await;
    let mut listed = s
        .quarter_count_list(QuarterCountList {
            since: q,
            until: q + Duration::hours(4),
            of: QuarterCountOf::Decided,
        })
        .await
        .unwrap();
    assert_eq!(listed.taken, vec![q]);
    assert!(listed.topics.is_empty(), "only what was asked for");
    listed.decided.sort_by_key(|(_, d)| group_key(d));
    let quarter = |schedule: Option<&str>,
                   kind_topic: Option<(&str, &str)>,
                   state: &str,
                   reason: Option<&str>,
                   count: i64| {
        (
            q,
            DecidedGroup {
                schedule_id: schedule.map(str::to_string),
                kind: kind_topic.map(|(k, _)| k.to_string()),
                topic: kind_topic.map(|(_, t)| t.to_string()),
                state: state.to_string(),
                reason: reason.map(str::to_string),
                count,
            },
        )
    };
    assert_eq!(
        listed.decided,
        vec![
            quarter(
                None,
                Some(("email", "weekly")),
                "skipped",
                Some("suppressed"),
                2
            ),
            quarter(None, Some(("email", "weekly")), "succeeded", None, 1),
            quarter(
                None,
                Some(("webhook", "orders")),
                "skipped",
                Some("endpoint_disabled"),
                1
            ),
            quarter(Some("sch_a"), None, "dead", None, 1),
            quarter(Some("sch_a"), None, "skipped", Some("not_entitled"), 3),
            quarter(Some("sch_a"), None, "skipped", Some("suppressed"), 1),
            quarter(Some("sch_a"), None, "succeeded", None, 1),
        ]
    );
    // The quarter's count holds the groups the job table gives for the quarter.
    let mut read = s
        .job_count_decided(JobCountDecided {
            since: q,
            until: q + QUARTER,
        })
        .await
        .unwrap();
    read.sort_by_key(group_key);
    assert_eq!(
        read,
        listed
            .decided
            .iter()
            .map(|(_, d)| d.clone())
            .collect::<Vec<_>>()
    );
    let marks = s
        .quarter_count_list(QuarterCountList {
            since: q,
            until: q + Duration::hours(4),
            of: QuarterCountOf::Marks,
        })
        .await
        .unwrap();
    assert_eq!(
        (marks.taken, marks.topics.len(), marks.decided.len()),
        (vec![q], 0, 0)
    );
}

/// Missed firings' source: distinct materialized firings of one schedule in a window.
pub async fn schedule_fire_times_lists_distinct_firings(s: S) {
    let fires = [
        t0(),
        t0(),
        t0() + Duration::hours(1),
        t0() + Duration::days(2),
    ];
    for (i, f) in fires.iter().enumerate() {
        let mut p = job(*f);
        p.schedule_id = Some("sch_a".into());
        p.fire_at = Some(*f);
        p.dedupe_key = Some(format!("sch_a:{i}"));
        s.job_insert(p).await.unwrap();
    }
    let mut other = job(t0());
    other.schedule_id = Some("sch_b".into());
    other.fire_at = Some(t0() + Duration::minutes(30));
    s.job_insert(other).await.unwrap();
    let v = s
        .schedule_fire_times(ScheduleFireTimes {
            schedule_id: "sch_a".into(),
            since: t0(),
            until: t0() + Duration::hours(1),
        })
        .await
        .unwrap();
    assert_eq!(v, vec![t0(), t0() + Duration::hours(1)]);

    // An audience firing being expanded (no job yet, or none at all) counts too.
    let expanding = t0() + Duration::minutes(30);
    s.expansion_begin(ExpansionBegin {
        schedule_id: "sch_a".into(),
        period_key: "2026-11-29T09:30".into(),
        fire_at: expanding,
        now: t0(),
    })
    .await
    .unwrap();
    let v = s
        .schedule_fire_times(ScheduleFireTimes {
            schedule_id: "sch_a".into(),
            since: t0(),
            until: t0() + Duration::hours(1),
        })
        .await
        .unwrap();
    assert_eq!(v, vec![t0(), expanding, t0() + Duration::hours(1)]);
}

/// The monitor's alert state survives as written and is replaced by key.
pub async fn slo_alert_put_replaces_by_key(s: S) {
    assert!(s.slo_alert_list().await.unwrap().is_empty());
    let mut a = SloAlert {
        key: "failure_rate:webhook".into(),
        check: "failure_rate".into(),
        active: true,
        since: t0() + Duration::milliseconds(7),
        message: "3 of 10 failed".into(),
        seq: 1,
        notified_seq: 0,
        updated_at: t0(),
        acked_at: None,
    };
    s.slo_alert_put(SloAlertPut { alert: a.clone() })
        .await
        .unwrap();
    assert_eq!(s.slo_alert_list().await.unwrap(), vec![a.clone()]);
    a.active = false;
    a.seq = 2;
    a.notified_seq = 2;
    a.message = "recovered".into();
    s.slo_alert_put(SloAlertPut { alert: a.clone() })
        .await
        .unwrap();
    let mut b = a.clone();
    b.key = "stuck_due".into();
    b.check = "stuck_due".into();
    b.acked_at = Some(t0() + Duration::milliseconds(3));
    s.slo_alert_put(SloAlertPut { alert: b.clone() })
        .await
        .unwrap();
    assert_eq!(s.slo_alert_list().await.unwrap(), vec![a, b]);
}

/// An acknowledgement turns an active alert into a recovery once (its `seq` advances, so the
/// alert webhook hears of it), keeps `acked_at` when the alert is raised again, leaves an
/// alert that is not active as it is, and answers `None` for an unknown key (S3-17).
pub async fn slo_alert_ack_recovers_an_active_alert_once_s3_17(s: S) {
    let raised = SloAlert {
        key: "dead_runs:sch_1".into(),
        check: "dead_runs".into(),
        active: true,
        since: t0(),
        message: "1 job ended dead".into(),
        seq: 1,
        notified_seq: 1,
        updated_at: t0(),
        acked_at: None,
    };
    s.slo_alert_put(SloAlertPut {
        alert: raised.clone(),
    })
    .await
    .unwrap();
    let at = t0() + Duration::minutes(5) + Duration::milliseconds(7);
    let ack = |at| SloAlertAck {
        key: "dead_runs:sch_1".into(),
        at,
        message: "acknowledged".into(),
    };
    let acked = s.slo_alert_ack(ack(at)).await.unwrap().expect("known key");
    let want = SloAlert {
        active: false,
        since: at,
        message: "acknowledged".into(),
        seq: 2,
        updated_at: at,
        acked_at: Some(at),
        ..raised.clone()
    };
    assert_eq!(acked, want);
    assert!(acked.acked());
    assert_eq!(s.slo_alert_list().await.unwrap(), vec![want.clone()]);

    // Not active any more: a second acknowledgement changes nothing.
    let again = s
        .slo_alert_ack(ack(at + Duration::minutes(1)))
        .await
        .unwrap();
    assert_eq!(again, Some(want.clone()));

    // Raised again later: the acknowledgement's instant is still there.
    let mut re = want.clone();
    re.active = true;
    re.since = at + Duration::hours(1);
    re.seq = 3;
    s.slo_alert_put(SloAlertPut { alert: re.clone() })
        .await
        .unwrap();
    let listed = s.slo_alert_list().await.unwrap();
    assert_eq!(listed, vec![re.clone()]);
    assert!(!listed[0].acked());

    assert_eq!(
        s.slo_alert_ack(SloAlertAck {
            key: "dead_runs:nope".into(),
            at,
            message: "acknowledged".into(),
        })
        .await
        .unwrap(),
        None
    );
}

/// The background monitor's last completed pass: none before the first, then the latest
/// recorded with what it found (S3-17).
pub async fn monitor_pass_record_keeps_the_latest_pass_s3_17(s: S) {
    assert_eq!(s.monitor_pass_last().await.unwrap(), None);
    assert_eq!(s.monitor_pass_get().await.unwrap(), None);
    let first = t0() + Duration::milliseconds(123);
    s.monitor_pass_record(MonitorPassRecord {
        at: first,
        report: Some("[{\"check\":\"stuck_due\"}]".into()),
    })
    .await
    .unwrap();
    assert_eq!(s.monitor_pass_last().await.unwrap(), Some(first));
    let second = first + Duration::seconds(60);
    s.monitor_pass_record(MonitorPassRecord {
        at: second,
        report: Some("[]".into()),
    })
    .await
    .unwrap();
    assert_eq!(s.monitor_pass_last().await.unwrap(), Some(second));
    assert_eq!(
        s.monitor_pass_get().await.unwrap(),
        Some(MonitorPass {
            at: second,
            report: Some("[]".into())
        }),
        "the latest pass and its own report"
    );
    s.monitor_pass_record(MonitorPassRecord {
        at: second + Duration::seconds(60),
        report: None,
    })
    .await
    .unwrap();
    assert_eq!(s.monitor_pass_get().await.unwrap().unwrap().report, None);
}

/// Readiness: a migrated store has no pending migration.
pub async fn migration_pending_is_empty_after_migrate(s: S) {
    assert_eq!(s.migration_pending().await.unwrap(), Vec::<i64>::new());
    s.migrate().await.unwrap();
    assert_eq!(s.migration_pending().await.unwrap(), Vec::<i64>::new());
}

/// Count the quarter starting at `q` as the sampler does, five minutes after it settled.
async fn count_quarter(s: &dyn Store, q: chrono::DateTime<chrono::Utc>) {
    assert!(
        s.quarter_count_record(QuarterCountRecord {
            start: q,
            now: q + Duration::minutes(20),
        })
        .await
        .unwrap(),
        "the quarter is counted"
    );
}

/// Jobs of the topic `weekly` that finished five minutes into a quarter (the one after
/// [`t0`]'s), one per transition in that order (sorted by id), and the quarter counted.
async fn finished_in_a_counted_quarter(
    s: &S,
    transitions: Vec<Transition>,
) -> (chrono::DateTime<chrono::Utc>, Vec<Job>) {
    let (q, jobs) = finished_in_a_quarter(&**s, transitions).await;
    count_quarter(&**s, q).await;
    (q, jobs)
}

/// Jobs of the topic `weekly` that finished five minutes into a quarter (the one after
/// [`t0`]'s), one per transition in that order (sorted by id); the quarter not counted.
pub async fn finished_in_a_quarter(
    s: &dyn Store,
    transitions: Vec<Transition>,
) -> (chrono::DateTime<chrono::Utc>, Vec<Job>) {
    let q = quarter_of(t0()) + QUARTER;
    for _ in &transitions {
        let mut j = job(q);
        j.payload = serde_json::json!({"topic": "weekly", "recipient_id": "r"});
        j.audience = kairos_core::JobAudience::of_payload(&j.payload);
        s.job_insert(j).await.unwrap();
    }
    let mut jobs = s
        .job_claim(claim(q, transitions.len() as i64, "n"))
        .await
        .unwrap();
    assert_eq!(jobs.len(), transitions.len());
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let at = q + Duration::minutes(5);
    s.job_complete_many(
        jobs.iter()
            .zip(transitions)
            .map(|(j, t)| done(j, t, at))
            .collect(),
    )
    .await
    .unwrap();
    (q, jobs)
}

/// The quarter `q`'s (dead, skipped, succeeded) jobs in its kind counts, and in its decided
/// counts of the topic `weekly`.
pub async fn counts_of_quarter(
    s: &dyn Store,
    q: chrono::DateTime<chrono::Utc>,
) -> ([i64; 3], [i64; 3]) {
    let list = |of| QuarterCountList {
        since: q,
        until: q + QUARTER,
        of,
    };
    let kinds = s
        .quarter_count_list(list(QuarterCountOf::Kinds))
        .await
        .unwrap();
    let decided = s
        .quarter_count_list(list(QuarterCountOf::Decided))
        .await
        .unwrap();
    let of_kinds = |state: &str| {
        kinds
            .kinds
            .iter()
            .filter(|(_, k)| k.state == state)
            .map(|(_, k)| k.count)
            .sum()
    };
    let of_decided = |state: &str| {
        decided
            .decided
            .iter()
            .filter(|(_, d)| d.state == state && d.topic.as_deref() == Some("weekly"))
            .map(|(_, d)| d.count)
            .sum()
    };
    (
        [of_kinds("dead"), of_kinds("skipped"), of_kinds("succeeded")],
        [
            of_decided("dead"),
            of_decided("skipped"),
            of_decided("succeeded"),
        ],
    )
}

/// A finished job sent back to the queue (`job_retry`, `job_bulk_retry`) leaves its counted
/// quarter's finished and decided counts in the retry's transaction, once however often it is
/// retried, so that it is counted where it finishes next and not in both; a succeeded job's
/// counts stay.
pub async fn a_retried_job_leaves_the_counts_of_its_quarter(s: S) {
    let (q, jobs) = finished_in_a_counted_quarter(
        &s,
        vec![
            Transition::Dead,
            Transition::Dead,
            Transition::Dead,
            Transition::Skipped("suppressed".into()),
            Transition::Succeeded,
        ],
    )
    .await;
    let counts = || counts_of_quarter(&*s, q);
    assert_eq!(counts().await, ([3, 1, 1], [3, 1, 1]));
    let later = q + Duration::minutes(25);
    let retry = |id: &str| JobRetry {
        id: id.into(),
        now: later,
    };
    assert!(s.job_retry(retry(&jobs[0].id)).await.unwrap().is_some());
    assert_eq!(
        counts().await,
        ([2, 1, 1], [2, 1, 1]),
        "one dead job retried"
    );
    s.job_retry(retry(&jobs[0].id)).await.unwrap();
    assert_eq!(counts().await, ([2, 1, 1], [2, 1, 1]), "taken once");
    s.job_retry(retry(&jobs[3].id)).await.unwrap();
    s.job_retry(retry(&jobs[4].id)).await.unwrap();
    assert_eq!(
        counts().await,
        ([2, 0, 1], [2, 0, 1]),
        "the skipped job retried; a succeeded one is not retried"
    );
    let done = s
        .job_bulk_retry(JobBulkRetry {
            select: JobSelect {
                ids: Some(vec![jobs[1].id.clone(), jobs[2].id.clone()]),
                filter: JobFilter::default(),
                after_id: None,
                limit: 10,
            },
            now: later,
        })
        .await
        .unwrap();
    assert_eq!(done.count, 2);
    assert_eq!(counts().await, ([0, 0, 1], [0, 0, 1]), "retried in bulk");
}

/// Two retries of one dead job at the same moment take it out of its quarter's counts once.
pub async fn concurrent_retries_of_one_job_take_it_out_of_its_quarter_once(s: S) {
    let (q, jobs) = finished_in_a_counted_quarter(&s, vec![Transition::Dead; 20]).await;
    assert_eq!(counts_of_quarter(&*s, q).await, ([20, 0, 0], [20, 0, 0]));
    let mut tasks = Vec::new();
    for j in &jobs {
        for _ in 0..2 {
            let (s, id) = (s.clone(), j.id.clone());
            tasks.push(tokio::spawn(async move {
                s.job_retry(JobRetry {
                    id,
                    now: q + Duration::minutes(25),
                })
                .await
                .expect("a retry");
            }));
        }
    }
    for t in tasks {
        t.await.expect("a retry ran");
    }
    assert_eq!(counts_of_quarter(&*s, q).await, ([0, 0, 0], [0, 0, 0]));
}

/// A dead job retried after the sampler read its quarter's jobs (outside the write
/// transaction) and before it stored their counts is not counted in the quarter: the retry
/// marked the quarter (`quarter_retries`), the store finds the mark changed since its read and
/// stores nothing ([`sql::quarter_counts::QuarterStored::Retried`]), and the next count reads
/// the job back in the queue. Without the mark the job was counted dead in the quarter and
/// again wherever it finished next. The steps are the store's own, in the order the race
/// takes them (the reads, the retry, the store's transaction).
pub async fn a_job_retried_while_its_quarter_is_read_is_counted_once<D>(s: Arc<D>)
where
    D: sql::SqlDb + Store,
{
    use sql::quarter_counts::{self as qc, QuarterStored};
    let (q, jobs) = finished_in_a_quarter(&*s, vec![Transition::Dead, Transition::Dead]).await;
    let now = q + Duration::minutes(20);
    let retried = qc::quarter_retried(&mut s.reader(), q).await.unwrap();
    let tally = qc::quarter_tally(&mut s.reader(), q).await.unwrap();
    assert_eq!(count(&tally.kinds, "dead", "webhook"), 2, "{tally:?}");

    s.job_retry(JobRetry {
        id: jobs[0].id.clone(),
        now,
    })
    .await
    .unwrap()
    .expect("the job is retried");
    let mut tx = s.begin("test quarter count").await.unwrap();
    let stored = qc::quarter_count_store(&mut D::in_tx(&mut tx), q, now, retried, &tally)
        .await
        .unwrap();
    assert_eq!(stored, QuarterStored::Retried, "the read is discarded");
    drop(tx);
    let marks = s
        .quarter_count_list(QuarterCountList {
            since: q,
            until: q + QUARTER,
            of: QuarterCountOf::Marks,
        })
        .await
        .unwrap();
    assert!(marks.taken.is_empty(), "nothing stored: {marks:?}");

    assert!(
        s.quarter_count_record(QuarterCountRecord { start: q, now })
            .await
            .unwrap(),
        "the next count stores the quarter"
    );
    assert_eq!(
        counts_of_quarter(&*s, q).await,
        ([1, 0, 0], [1, 0, 0]),
        "the retried job is not in its old quarter"
    );
    // A retry after the count takes from the stored counts, as before.
    s.job_retry(JobRetry {
        id: jobs[1].id.clone(),
        now,
    })
    .await
    .unwrap();
    assert_eq!(counts_of_quarter(&*s, q).await, ([0, 0, 0], [0, 0, 0]));
}

/// Finished jobs of the release before migration 0039: id, kind, state, minutes after the
/// quarter of [`t0`] that they finished.
pub const BEFORE_0039_JOBS: [(&str, &str, &str, i64); 6] = [
    ("j1", "webhook", "succeeded", 1),
    ("j2", "webhook", "dead", 2),
    ("j3", "email", "succeeded", 14),
    ("j4", "webhook", "succeeded", 16),
    ("j5", "webhook", "dead", 31),
    ("j6", "webhook", "succeeded", -1),
];
/// The quarters the sampler had counted before migration 0039, in minutes after the quarter of
/// [`t0`]: the first two (the third and the one before were not counted).
pub const COUNTED_BEFORE_0039: [i64; 2] = [0, 15];

/// After migration 0039 on a database holding [`BEFORE_0039_JOBS`] with the quarters
/// [`COUNTED_BEFORE_0039`] marked counted, those quarters have their finished jobs per kind
/// and state, and the others none (the monitor reads them from the job table until the
/// sampler counts them).
pub async fn kind_counts_of_the_release_before_after_0039(store: &dyn Store) {
    let q = quarter_of(t0());
    let listed = store
        .quarter_count_list(QuarterCountList {
            since: q - Duration::hours(1),
            until: q + Duration::hours(1),
            of: QuarterCountOf::Kinds,
        })
        .await
        .unwrap();
    assert_eq!(listed.taken, vec![q, q + QUARTER]);
    let c = |start, kind: &str, state: &str| {
        (
            start,
            JobCount {
                kind: kind.into(),
                state: state.into(),
                count: 1,
            },
        )
    };
    assert_eq!(
        listed.kinds,
        vec![
            c(q, "email", "succeeded"),
            c(q, "webhook", "dead"),
            c(q, "webhook", "succeeded"),
            c(q + QUARTER, "webhook", "succeeded"),
        ]
    );
}
