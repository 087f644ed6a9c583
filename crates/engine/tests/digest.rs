//! The `digest` kind and catch-up firings on a manual clock, against local HTTP servers
//!.

mod digest_kit;

use digest_kit::*;
use kairos_core::{Clock, Job, JobState, Outcome};
use kairos_engine::ops::{NewJob, NewSchedule};
use kairos_store::{ArtifactKey, ArtifactPut, JobSearch, Store};
use kairos_testkit::{Reply, TestReceiver};
use std::sync::Arc;
use std::time::Duration;

fn no_model() -> kairos_channels::digest::DigestConfig {
    digest_config(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        Duration::from_secs(2),
    )
}

fn feed_reply(body: String, ty: &str) -> Reply {
    Reply::status(200)
        .with_header("content-type", ty)
        .with_body(body)
}

fn item(t: &str, l: &str, d: &str, p: &str) -> (String, String, String, String) {
    (t.into(), l.into(), d.into(), p.into())
}

async fn digest_job(w: &World, feeds: Vec<String>, summarizer: &str, period: &str) -> Job {
    let (job, created) = w
        .kairos
        .job_enqueue(NewJob {
            kind: Some("digest".into()),
            payload: Some(serde_json::json!({
                "name": "ai-news", "feeds": feeds, "summarizer": summarizer, "period": period,
            })),
            ..Default::default()
        })
        .await
        .expect("enqueue digest");
    assert!(created);
    job
}

async fn artifact(w: &World, period: &str) -> Option<kairos_store::Artifact> {
    w.store
        .artifact_get(ArtifactKey {
            name: "ai-news".into(),
            period_key: period.into(),
        })
        .await
        .unwrap()
}

/// RSS and Atom are read, items de-duplicated across feeds and ordered newest first; a
/// failing feed is recorded in the artifact and does not lose the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_failing_feed_is_recorded_and_the_others_are_kept() {
    let rss_feed = TestReceiver::start().await;
    let atom_feed = TestReceiver::start().await;
    let broken = TestReceiver::start().await;
    rss_feed.set_default(feed_reply(
        rss(
            "Lab A",
            &[
                item(
                    "Old",
                    "https://a/old",
                    "Old news. Really.",
                    "Mon, 19 Oct 2026 01:00:00 +0000",
                ),
                item(
                    "Shared",
                    "https://shared/1",
                    "&lt;b&gt;Both&lt;/b&gt; feeds carry it. Yes.",
                    "Tue, 20 Oct 2026 02:00:00 +0000",
                ),
            ],
        ),
        "application/rss+xml",
    ));
    atom_feed.set_default(feed_reply(
        atom(
            "Lab B",
            &[
                item(
                    "Newest",
                    "https://b/new",
                    "Fresh from B. More.",
                    "2026-10-20T05:00:00Z",
                ),
                item(
                    "Shared again",
                    "https://shared/1",
                    "dup",
                    "2026-10-20T02:00:00Z",
                ),
            ],
        ),
        "application/atom+xml",
    ));
    broken.set_default(Reply::status(500).with_body("boom"));
    let w = World::new(t("2026-10-20T00:00:00Z"), no_model()).await;
    let job = digest_job(
        &w,
        vec![
            rss_feed.url("/rss"),
            broken.url("/x"),
            atom_feed.url("/atom"),
        ],
        "extractive",
        "2026-10-20",
    )
    .await;
    w.tick(w.clock.now()).await;
    assert_eq!(
        w.store.job_get(&job.id).await.unwrap().unwrap().state,
        JobState::Succeeded
    );
    let a = artifact(&w, "2026-10-20").await.expect("artifact");
    let titles: Vec<&str> = a.data["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Newest", "Shared", "Old"]);
    assert_eq!(a.data["failed_feeds"][0]["feed"], 1);
    assert_eq!(a.data["failed_feeds"][0]["status_code"], 500);
    assert_eq!(a.data["feeds"].as_array().unwrap().len(), 2);
    assert!(a.content.contains("## Lab A"), "{}", a.content);
    assert!(
        a.content.contains("**Shared** — Both feeds carry it."),
        "{}",
        a.content
    );
    assert!(a.content.contains("## Lab B"), "{}", a.content);
    let attempt = &w.store.attempt_list(&job.id).await.unwrap()[0];
    let response: serde_json::Value =
        serde_json::from_str(attempt.response.as_deref().unwrap()).unwrap();
    assert_eq!(response["created"], true);
    assert_eq!(response["failed_feeds"][0]["status_code"], 500);
}

/// when the period's artifact exists, a run fetches nothing, calls no model, writes
/// nothing, and answers `{"skipped": true}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_artifact_skips_without_fetch_model_or_write_s4_5() {
    let feed = TestReceiver::start().await;
    let gemini = TestReceiver::start().await;
    gemini.set_default(gemini_ok("model text"));
    feed.set_default(feed_reply(
        rss(
            "A",
            &[item(
                "x",
                "https://a/x",
                "x.",
                "Tue, 20 Oct 2026 01:00:00 +0000",
            )],
        ),
        "application/rss+xml",
    ));
    let cfg = digest_config(
        &gemini.url(""),
        "http://127.0.0.1:9",
        Duration::from_secs(2),
    );
    let w = World::new(t("2026-10-20T00:00:00Z"), cfg).await;
    let first = digest_job(&w, vec![feed.url("/f")], "gemini", "2026-10-20").await;
    w.tick(w.clock.now()).await;
    let before = artifact(&w, "2026-10-20").await.expect("built");
    assert_eq!(before.content, "model text");
    assert_eq!((feed.count(), gemini.count()), (1, 1));
    assert_eq!(before.job_id.as_deref(), Some(first.id.as_str()));

    // A re-run (a manual fire, a replay, a catch-up) of the same period.
    gemini.set_default(gemini_ok("a different text"));
    let again = digest_job(&w, vec![feed.url("/f")], "gemini", "2026-10-20").await;
    w.tick(w.clock.now() + chrono::Duration::seconds(1)).await;
    let job = w.store.job_get(&again.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Succeeded);
    let attempt = &w.store.attempt_list(&again.id).await.unwrap()[0];
    let response: serde_json::Value =
        serde_json::from_str(attempt.response.as_deref().unwrap()).unwrap();
    assert_eq!(response["skipped"], true);
    assert_eq!(
        (feed.count(), gemini.count()),
        (1, 1),
        "no fetch, no model call"
    );
    assert_eq!(
        artifact(&w, "2026-10-20").await.unwrap(),
        before,
        "no write"
    );
}

/// The openai summarizer speaks chat completions with a bearer key from the configuration;
/// a 400 is permanent: 1 s, 2 s, then dead after 3 attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_summarizer_and_permanent_errors_stop_after_three_attempts() {
    let feed = TestReceiver::start().await;
    let openai = TestReceiver::start().await;
    feed.set_default(feed_reply(
        rss(
            "A",
            &[item(
                "x",
                "https://a/x",
                "x.",
                "Tue, 20 Oct 2026 01:00:00 +0000",
            )],
        ),
        "application/rss+xml",
    ));
    openai.set_default(openai_ok("digest by gpt"));
    let cfg = digest_config(
        "http://127.0.0.1:9",
        &openai.url(""),
        Duration::from_secs(2),
    );
    let w = World::new(t("2026-10-20T00:00:00Z"), cfg).await;
    digest_job(&w, vec![feed.url("/f")], "openai", "2026-10-20").await;
    w.tick(w.clock.now()).await;
    assert_eq!(
        artifact(&w, "2026-10-20").await.unwrap().content,
        "digest by gpt"
    );
    let req = openai.last().unwrap();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("[A] x")
    );

    openai.set_default(Reply::status(400).with_body(r#"{"error":{"message":"bad request"}}"#));
    let job = digest_job(&w, vec![feed.url("/f")], "openai", "2026-10-21").await;
    let start = w.clock.now();
    w.tick(start).await;
    w.run_until(start + chrono::Duration::hours(1), |_| {})
        .await;
    let job = w.store.job_get(&job.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead);
    let attempts = w.store.attempt_list(&job.id).await.unwrap();
    assert_eq!(attempts.len(), 3);
    assert!(
        attempts
            .iter()
            .all(|a| a.error_class.map(|c| c.as_str()) == Some("permanent"))
    );
    let gaps: Vec<i64> = attempts
        .windows(2)
        .map(|p| (p[1].started_at - p[0].started_at).num_milliseconds())
        .collect();
    assert!(
        (1000..=1100).contains(&gaps[0]) && (2000..=2200).contains(&gaps[1]),
        "{gaps:?}"
    );
    assert!(artifact(&w, "2026-10-21").await.is_none());
}

fn digest_schedule(feeds: Vec<String>, catch_up: &[&str]) -> NewSchedule {
    serde_json::from_value(serde_json::json!({
        "name": "digest", "kind": "digest",
        "digest": {"name": "ai-news", "feeds": feeds},
        "cron": "0 6 * * *", "timezone": "Asia/Tokyo", "period": "day",
        "catch_up": catch_up,
    }))
    .unwrap()
}

/// at 13:00 the period runs again only if its artifact is missing: with the morning
/// run dead (feed down), the catch-up creates one job with its own dedupe key and builds
/// the day; on a day whose artifact exists, the catch-up creates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_fires_only_when_the_artifact_is_missing_s4_4() {
    let feed = TestReceiver::start().await;
    feed.set_default(Reply::status(503));
    let w = World::new(t("2026-10-19T12:00:00Z"), no_model()).await;
    let s = w
        .kairos
        .schedule_create(digest_schedule(vec![feed.url("/f")], &["13:00"]))
        .await
        .unwrap();
    let ok = feed_reply(
        rss(
            "A",
            &[item(
                "x",
                "https://a/x",
                "x.",
                "Tue, 20 Oct 2026 01:00:00 +0000",
            )],
        ),
        "application/rss+xml",
    );
    // Day 1: the morning fails for good; at 13:00 the feed is back.
    w.tick(t("2026-10-20T06:00:00+09:00")).await;
    w.run_until(t("2026-10-20T12:59:00+09:00"), |_| {}).await;
    let jobs = |period: &'static str| {
        let store = w.store.clone();
        let sid = s.id.clone();
        async move {
            let mut v = store
                .job_search(JobSearch {
                    schedule_id: Some(sid),
                    period_key: Some(period.into()),
                    limit: 10,
                    ..Default::default()
                })
                .await
                .unwrap();
            v.sort_by(|a, b| a.id.cmp(&b.id));
            v
        }
    };
    let morning = jobs("2026-10-20").await;
    assert_eq!(morning.len(), 1);
    assert_eq!(morning[0].state, JobState::Dead);
    feed.set_default(ok.clone());
    let r = {
        w.clock.set(t("2026-10-20T13:00:00+09:00"));
        w.engine.scheduler().run_once(w.clock.now()).await.unwrap()
    };
    assert_eq!((r.catch_ups, r.catch_up_jobs), (1, 1));
    // A second tick at the same time (another node, a double wake-up) creates nothing more.
    let r2 = w.engine.scheduler().run_once(w.clock.now()).await.unwrap();
    assert_eq!(r2.catch_up_jobs, 0);
    w.engine.executor().run_once(w.clock.now()).await.unwrap();
    let day1 = jobs("2026-10-20").await;
    assert_eq!(day1.len(), 2);
    assert_eq!(
        day1[1].dedupe_key.as_deref(),
        Some(format!("{}:2026-10-20:catchup:13:00", s.id).as_str())
    );
    assert_eq!(day1[1].state, JobState::Succeeded);
    assert!(artifact(&w, "2026-10-20").await.is_some());

    // Day 2: the morning works; the 13:00 catch-up finds the artifact and creates nothing.
    w.tick(t("2026-10-21T06:00:00+09:00")).await;
    assert!(artifact(&w, "2026-10-21").await.is_some());
    let fetches = feed.count();
    w.clock.set(t("2026-10-21T13:00:00+09:00"));
    let r = w.engine.scheduler().run_once(w.clock.now()).await.unwrap();
    assert_eq!((r.catch_ups, r.catch_up_jobs), (1, 0));
    assert_eq!(jobs("2026-10-21").await.len(), 1);
    assert_eq!(feed.count(), fetches);
    // Its next catch-up is the next day's 13:00.
    let c = w.store.catch_up_list(&s.id).await.unwrap();
    assert_eq!(c[0].next_at, Some(t("2026-10-22T13:00:00+09:00")));
}

/// For a kind without artifacts the rule is "a succeeded job of the period": present → no
/// catch-up; a job still retrying → the catch-up waits for it instead of running beside it;
/// failed for good → one catch-up job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_for_other_kinds_needs_no_succeeded_job_and_waits_for_retries() {
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Flaky(AtomicBool);
    #[async_trait::async_trait]
    impl kairos_engine::Handler for Flaky {
        async fn handle(&self, _job: &Job, _ctx: &kairos_engine::JobContext) -> Outcome {
            if self.0.load(Ordering::SeqCst) {
                Outcome::ok()
            } else {
                Outcome::Failed(kairos_core::Failure::transient("down"))
            }
        }
    }
    let flaky = Arc::new(Flaky(AtomicBool::new(true)));
    let w = World::with(
        t("2026-10-19T12:00:00Z"),
        no_model(),
        &[("report", flaky.clone())],
    )
    .await;
    let req: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "report", "kind": "report", "cron": "0 6 * * *", "timezone": "Asia/Tokyo",
        "period": "day", "catch_up": ["13:00"], "retry": {"delays": ["6h"], "max_attempts": 3},
    }))
    .unwrap();
    let s = w.kairos.schedule_create(req).await.unwrap();
    let count = |p: &'static str| {
        let store: Arc<dyn Store> = w.store.clone();
        let sid = s.id.clone();
        async move {
            store
                .job_search(JobSearch {
                    schedule_id: Some(sid),
                    period_key: Some(p.into()),
                    limit: 10,
                    ..Default::default()
                })
                .await
                .unwrap()
                .len()
        }
    };
    // Day 1 succeeds in the morning: no catch-up job.
    w.tick(t("2026-10-20T06:00:00+09:00")).await;
    w.clock.set(t("2026-10-20T13:00:00+09:00"));
    let r = w.engine.scheduler().run_once(w.clock.now()).await.unwrap();
    assert_eq!((r.catch_ups, r.catch_up_jobs), (1, 0));
    assert_eq!(count("2026-10-20").await, 1);

    // Day 2 fails in the morning and waits 6 h for its retry (12:00): at 13:00 … it already
    // retried and failed again (next retry at 18:00 plus up to 30 s of jitter): in flight, so
    // the catch-up waits.
    flaky.0.store(false, Ordering::SeqCst);
    w.tick(t("2026-10-21T06:00:00+09:00")).await;
    w.tick(t("2026-10-21T12:00:31+09:00")).await;
    w.clock.set(t("2026-10-21T13:00:00+09:00"));
    let r = w.engine.scheduler().run_once(w.clock.now()).await.unwrap();
    assert_eq!(r.catch_up_jobs, 0, "a retry is in flight");
    assert_eq!(count("2026-10-21").await, 1);
    let c = w.store.catch_up_list(&s.id).await.unwrap();
    assert_eq!(
        c[0].next_at,
        Some(t("2026-10-21T13:01:00+09:00")),
        "looks again in a minute"
    );
    // The third attempt (18:00) fails: dead. The next look creates the catch-up job.
    w.tick(t("2026-10-21T18:01:30+09:00")).await;
    let jobs = w
        .store
        .job_search(JobSearch {
            schedule_id: Some(s.id.clone()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        jobs.iter().any(|j| j.state == JobState::Dead),
        "{:?}",
        jobs.iter()
            .map(|j| (&j.period_key, &j.state, j.attempt, j.run_at))
            .collect::<Vec<_>>()
    );
    flaky.0.store(true, Ordering::SeqCst);
    let next = w.store.catch_up_list(&s.id).await.unwrap()[0]
        .next_at
        .unwrap();
    assert!(next < t("2026-10-21T18:05:00+09:00"), "{next}");
    w.tick(next).await;
    assert_eq!(
        count("2026-10-21").await,
        2,
        "the catch-up ran after the retries ended"
    );
}

/// A `digest` job enqueued directly must name its period; schedules validate the digest and
/// the catch-up times field by field and change nothing on error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_definitions_and_catch_up_times_are_validated_by_field() {
    let w = World::new(t("2026-10-19T12:00:00Z"), no_model()).await;
    let e = w
        .kairos
        .job_enqueue(NewJob {
            kind: Some("digest".into()),
            payload: Some(serde_json::json!({"name": "x", "feeds": ["https://a/f"]})),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("payload.period:"), "{e}");
    for (body, field) in [
        (
            serde_json::json!({"digest": {"name": "n", "feeds": []}}),
            "digest.feeds",
        ),
        (
            serde_json::json!({"digest": {"name": "n", "feeds": ["nope"]}}),
            "digest.feeds[0]",
        ),
        (
            serde_json::json!({"digest": {"name": "n", "feeds": ["https://a/f"], "summarizer": "x"}}),
            "digest.summarizer",
        ),
        (
            serde_json::json!({"digest": {"name": "n", "feeds": ["https://a/f"]}, "catch_up": ["13:00", "13:00"]}),
            "catch_up[1]",
        ),
        (
            serde_json::json!({"digest": {"name": "n", "feeds": ["https://a/f"]}, "catch_up": ["1pm"]}),
            "catch_up[0]",
        ),
        (serde_json::json!({}), "digest"),
        (
            serde_json::json!({"digest": {"name": "n", "feeds": ["https://a/f"], "period": "2026-10-20"}}),
            "digest.period",
        ),
    ] {
        let mut v = serde_json::json!({"name": "d", "kind": "digest", "cron": "0 6 * * *"});
        for (k, x) in body.as_object().unwrap() {
            v[k] = x.clone();
        }
        let req: NewSchedule = serde_json::from_value(v).unwrap();
        let e = w.kairos.schedule_create(req).await.unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("{field}:")),
            "{field}: {e}"
        );
    }
    assert!(w.kairos.schedule_list(None, None).await.unwrap().is_empty());
    // A valid one stores its catch-ups; a skip needs nothing but the artifact.
    let s = w
        .kairos
        .schedule_create(digest_schedule(
            vec!["https://a/f".into()],
            &["13:00", "07:30"],
        ))
        .await
        .unwrap();
    let c = w.kairos.schedule_catch_ups(&s.id).await.unwrap();
    assert_eq!(
        c.iter().map(|c| c.at.as_str()).collect::<Vec<_>>(),
        ["07:30", "13:00"]
    );
    // Resuming after days re-arms the catch-ups from the resumption, not from the past.
    w.kairos.schedule_pause(&s.id, true).await.unwrap();
    w.clock.set(t("2026-10-25T14:00:00+09:00"));
    w.kairos.schedule_pause(&s.id, false).await.unwrap();
    let c = w.kairos.schedule_catch_ups(&s.id).await.unwrap();
    assert_eq!(c[0].next_at, Some(t("2026-10-26T07:30:00+09:00")));
    assert_eq!(c[1].next_at, Some(t("2026-10-26T13:00:00+09:00")));
    let put = w
        .store
        .artifact_put(ArtifactPut {
            artifact: kairos_store::Artifact {
                name: "ai-news".into(),
                period_key: "2026-10-20".into(),
                content: "c".into(),
                data: serde_json::json!({}),
                job_id: None,
                schedule_id: None,
                created_at: w.clock.now(),
            },
            then: vec![],
        })
        .await
        .unwrap();
    assert!(put.created);
}

/// Two nodes' schedulers handling the same due catch-up at once create one job: the catch-up
/// advances once (optimistic check) and the job's dedupe key is unique.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schedulers_create_one_catch_up_job() {
    use kairos_engine::scheduler::{Scheduler, SchedulerConfig};
    let feed = TestReceiver::start().await;
    feed.set_default(Reply::status(500));
    let w = World::new(t("2026-10-19T12:00:00Z"), no_model()).await;
    let s = w
        .kairos
        .schedule_create(digest_schedule(vec![feed.url("/f")], &["13:00"]))
        .await
        .unwrap();
    w.tick(t("2026-10-20T06:00:00+09:00")).await;
    w.run_until(t("2026-10-20T12:00:00+09:00"), |_| {}).await;
    let at = t("2026-10-20T13:00:00+09:00");
    w.clock.set(at);
    let node = |name: &str| {
        Scheduler::new(
            SchedulerConfig {
                node: name.into(),
                ..SchedulerConfig::default()
            },
            w.store.clone(),
            w.clock.clone(),
        )
        .unwrap()
    };
    let (a, b) = (node("a"), node("b"));
    let (ra, rb) = tokio::join!(a.run_once(at), b.run_once(at));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.catch_up_jobs + rb.catch_up_jobs, 1, "{ra:?} {rb:?}");
    let jobs = w
        .store
        .job_search(JobSearch {
            schedule_id: Some(s.id.clone()),
            period_key: Some("2026-10-20".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let catch_ups = jobs
        .iter()
        .filter(|j| j.dedupe_key.as_deref().unwrap_or("").contains(":catchup:"))
        .count();
    assert_eq!(catch_ups, 1);
}

/// Issue 12, finding 1: feed URLs come from the API like webhook URLs, so without the
/// private allowance a loopback or localhost feed is refused when the job or schedule is
/// saved, naming the feed (the send-time guard is authoritative and stays).
#[tokio::test]
async fn private_feed_urls_are_refused_at_save_without_the_allowance() {
    let w = World::new(t("2026-10-20T00:00:00Z"), no_model()).await;
    let strict = w.kairos.clone().allow_private_targets(false);
    let field = |e: kairos_engine::OpsError| match e.kind() {
        kairos_engine::OpsErrorKind::Invalid { field, reason } => {
            assert!(reason.contains("KAIROS_ALLOW_PRIVATE_TARGETS"), "{reason}");
            field.clone()
        }
        other => panic!("{other:?}"),
    };
    let e = strict
        .job_enqueue(NewJob {
            kind: Some("digest".into()),
            payload: Some(serde_json::json!({
                "name": "ai-news", "period": "2026-10-20",
                "feeds": ["https://example.com/rss", "http://localhost./feed"],
            })),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(field(e), "payload.feeds[1]");
    let sched: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "news", "kind": "digest", "cron": "0 6 * * *",
        "digest": {"name": "ai-news", "feeds": ["http://169.254.169.254/latest"]},
    }))
    .unwrap();
    let e = strict.schedule_create(sched).await.unwrap_err();
    assert_eq!(field(e), "digest.feeds[0]");
}

/// The budget with the node's real attempt bound: the save-time budget counts feed timeout + model
/// timeout + 5 s per attempt, not a fixed 2 minutes. The default policy fits the default
/// 155 s (4 × 2m 35s + waits = 13m 35s); with 10-minute feed and model timeouts a digest with
/// the default policy is refused with the arithmetic, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_budget_counts_the_nodes_feed_and_model_timeouts_s4_7() {
    let w = World::new(t("2026-11-29T00:00:00Z"), no_model()).await;
    let payload = serde_json::json!({
        "name": "ai-news", "feeds": ["https://feeds.example/a.xml"], "summarizer": "extractive",
        "period": "2026-11-29",
    });
    let new = |p: serde_json::Value| NewJob {
        kind: Some("digest".into()),
        payload: Some(p),
        ..Default::default()
    };
    let slow = w
        .kairos
        .clone()
        .with_digest_attempt_timeout(Duration::from_secs(600 + 600 + 5));
    let e = slow.job_enqueue(new(payload.clone())).await.unwrap_err();
    assert!(
        matches!(e.kind(), kairos_engine::OpsErrorKind::Invalid { field, .. } if field == "retry"),
        "{e}"
    );
    assert!(e.message().contains("4 attempts × 20m 5s timeout"), "{e}");
    assert!(e.message().contains("exceeds the deadline of 15m"), "{e}");
    let (_, created) = w
        .kairos
        .job_enqueue(new(payload))
        .await
        .expect("default fits");
    assert!(created);
}
