//! The seed-004 scenario ("Done when" of the daily-digest issue): a daily AI-news digest at
//! 06:00 Asia/Tokyo, replayed over the seed's 20 days (2026-10-01 … 10-20) on a manual clock,
//! against local HTTP servers for two feeds and the Gemini API.
//!
//! - On the seed's 8 missing days (10/4, 6, 8, 14–17, 20) the model answers 503 "high demand"
//!   several times in a row: twice (10/4, 6, 8: the retries at 15 s and 45 s rescue the
//!   morning), three times with `Retry-After: 60` (10/20: the wait honours it), four times
//!   (10/14–17: the morning run ends `dead`; the 13:00 catch-up rebuilds the day).
//! - On 10/10 the model hangs past the (short, configured) timeout once: a retryable failure.
//! - On 10/12 the feed servers answer 500 all morning until noon: the morning run ends
//!   `dead`, the 13:00 catch-up builds the day.
//!
//! Every day ends with its artifact; the runs that could not succeed are `dead` with their
//! reason and no failed call is logged as a success. The report of
//! each day's runs is printed (`cargo test --test digest_scenario -- --nocapture`).

mod digest_kit;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Asia::Tokyo;
use digest_kit::*;
use kairos_core::JobState;
use kairos_engine::ops::NewSchedule;
use kairos_store::{ArtifactKey, JobSearch};
use kairos_testkit::{Reply, TestReceiver};
use std::collections::BTreeMap;

/// 06:00 JST of 2026-10-`day` (21:00Z the day before).
fn six_am(day: u32) -> DateTime<Utc> {
    t(&format!("2026-10-{day:02}T06:00:00+09:00"))
}

fn day_feed(day: u32, feed: &str) -> Reply {
    let items: Vec<_> = (1..=3)
        .map(|i| {
            (
                format!("{feed} story {i} of Oct {day}"),
                format!("https://news.example/{feed}/{day}/{i}"),
                format!("&lt;p&gt;What happened in {feed} #{i} on Oct {day}. More detail follows.&lt;/p&gt;"),
                t(&format!("2026-10-{day:02}T0{i}:00:00+09:00"))
                    .with_timezone(&Tokyo)
                    .to_rfc2822(),
            )
        })
        .collect();
    Reply::status(200)
        .with_header("content-type", "application/rss+xml")
        .with_body(rss(&format!("{feed} AI"), &items))
}

/// What the model does on each day: the number of 503s before it answers, a `Retry-After`
/// on the first one, and a hang on the first call.
struct ModelDay {
    overloaded: usize,
    retry_after: Option<u32>,
    hang: bool,
}

fn model_day(day: u32) -> ModelDay {
    let m = |overloaded, retry_after, hang| ModelDay {
        overloaded,
        retry_after,
        hang,
    };
    match day {
        4 | 6 | 8 => m(2, None, false),
        14..=17 => m(4, None, false),
        20 => m(3, Some(60), false),
        10 => m(0, None, true),
        _ => m(0, None, false),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_seed_days_all_end_with_their_digest_s4_1_to_s4_5() {
    let feed_a = TestReceiver::start().await;
    let feed_b = TestReceiver::start().await;
    let gemini = TestReceiver::start().await;
    let hooks = TestReceiver::start().await;
    // A 300 ms model timeout stands in for the 2 minutes of production.
    let cfg = digest_config(
        &gemini.url(""),
        "http://127.0.0.1:9",
        std::time::Duration::from_millis(300),
    );
    let w = World::new(t("2026-09-30T12:00:00Z"), cfg).await;

    let req: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "ai-news-daily",
        "kind": "digest",
        "digest": {
            "name": "ai-news",
            "feeds": [feed_a.url("/rss.xml"), feed_b.url("/feed")],
            "summarizer": "gemini",
        },
        "cron": "0 6 * * *",
        "timezone": "Asia/Tokyo",
        "period": "day",
        "catch_up": ["13:00"],
        "webhook": {"url": hooks.url("/digest-created"), "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    }))
    .expect("the contract's schedule body");
    let s = w.kairos.schedule_create(req).await.expect("schedule");

    let mut report = Vec::new();
    for day in 1..=20u32 {
        let period = format!("2026-10-{day:02}");
        let start = six_am(day);
        let noon = t(&format!("{period}T12:00:00+09:00"));
        feed_a.set_default(day_feed(day, "labA"));
        feed_b.set_default(day_feed(day, "labB"));
        let feeds_down_until_noon = day == 12;
        if feeds_down_until_noon {
            feed_a.set_default(Reply::status(500).with_body("upstream error"));
            feed_b.set_default(Reply::status(500).with_body("upstream error"));
        }
        let md = model_day(day);
        gemini.set_default(gemini_ok(&format!(
            "# AI news {period}\n\nToday in AI: labA and labB shipped things."
        )));
        let mut plan = Vec::new();
        if md.hang {
            plan.push(gemini_ok("too late").with_delay(std::time::Duration::from_millis(1500)));
        }
        for i in 0..md.overloaded {
            let mut r = gemini_503();
            if i == 0
                && let Some(s) = md.retry_after
            {
                r = r.with_header("retry-after", s.to_string());
            }
            plan.push(r);
        }
        gemini.respond_with(plan);

        w.tick(start).await;
        let mut switched = false;
        w.run_until(six_am(day) + Duration::days(1), |at| {
            if feeds_down_until_noon && !switched && at >= noon {
                feed_a.set_default(day_feed(day, "labA"));
                feed_b.set_default(day_feed(day, "labB"));
                switched = true;
            }
        })
        .await;
        report.push(day_report(&w, &s.id, &period).await);
    }

    println!("\nseed-004 replay: ai-news at 06:00 Asia/Tokyo, catch-up 13:00\n");
    for r in &report {
        println!("{}", r.text);
    }

    // Every one of the 20 days ends with its artifact.
    for day in 1..=20u32 {
        let period = format!("2026-10-{day:02}");
        let a = w
            .store
            .artifact_get(ArtifactKey {
                name: "ai-news".into(),
                period_key: period.clone(),
            })
            .await
            .unwrap();
        let a = a.unwrap_or_else(|| panic!("{period} has no digest"));
        assert!(a.content.contains(&period), "{period}: {}", a.content);
        assert_eq!(
            a.data["items"].as_array().map(Vec::len),
            Some(6),
            "{period}"
        );
    }
    let by_day: BTreeMap<u32, &DayReport> = report.iter().map(|r| (r.day, r)).collect();
    for (day, r) in &by_day {
        let catch_up_days = [12, 14, 15, 16, 17];
        assert_eq!(
            r.catch_up_used,
            catch_up_days.contains(day),
            "day {day}: catch-up used or not\n{}",
            r.text
        );
        // Exactly one attempt per day succeeded: the one that built the artifact. No failed
        // call was logged as a success.
        assert_eq!(r.succeeded_attempts, 1, "day {day}\n{}", r.text);
        let expected_attempts = match day {
            4 | 6 | 8 => 3,
            20 => 4,
            10 => 2,
            12 | 14..=17 => 4 + 1,
            _ => 1,
        };
        assert_eq!(r.attempts, expected_attempts, "day {day}\n{}", r.text);
    }
    // The mornings that could not succeed are dead, with their reason, their attempts failed.
    for day in [12u32, 14, 15, 16, 17] {
        let period = format!("2026-10-{day:02}");
        let jobs = w
            .store
            .job_search(JobSearch {
                schedule_id: Some(s.id.clone()),
                period_key: Some(period.clone()),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        let morning = jobs
            .iter()
            .find(|j| !j.dedupe_key.as_deref().unwrap_or("").contains(":catchup:"))
            .expect("morning job");
        assert_eq!(morning.state, JobState::Dead, "{period}");
        let reason = morning.last_error.clone().unwrap_or_default();
        let attempts = w.store.attempt_list(&morning.id).await.unwrap();
        assert_eq!(attempts.len(), 4, "{period}");
        for a in &attempts {
            assert_eq!(a.outcome, "failed", "{period}: {a:?}");
            assert_eq!(
                a.error_class.map(|c| c.as_str()),
                Some("transient"),
                "{period}"
            );
        }
        if day == 12 {
            assert!(reason.contains("every feed failed"), "{reason}");
            assert!(attempts.iter().all(|a| a.status_code == Some(500)));
        } else {
            assert!(reason.contains("HTTP 503"), "{reason}");
            assert!(attempts.iter().all(|a| a.status_code == Some(503)));
            assert!(
                attempts.iter().all(|a| a
                    .response
                    .as_deref()
                    .unwrap_or("")
                    .contains("high demand")),
                "{period}: the provider's reason is kept"
            );
        }
        let catch_up = jobs
            .iter()
            .find(|j| {
                j.dedupe_key
                    .as_deref()
                    .unwrap_or("")
                    .ends_with(":catchup:13:00")
            })
            .expect("catch-up job");
        assert_eq!(catch_up.state, JobState::Succeeded, "{period}");
        assert_eq!(
            catch_up
                .run_at
                .with_timezone(&Tokyo)
                .format("%H:%M")
                .to_string(),
            "13:00"
        );
    }
    // The waits follow S4-3 (15 s, 45 s, 135 s plus at most 10 % jitter, after the delay,
    // never before), and Retry-After is honoured (60 s on 10/20).
    let waits = |day: u32| by_day[&day].waits.clone();
    for day in [4, 6, 8] {
        let w = waits(day);
        assert_eq!(w.len(), 2);
        assert!((15.0..=16.5).contains(&w[0]), "day {day}: {w:?}");
        assert!((45.0..=49.5).contains(&w[1]), "day {day}: {w:?}");
    }
    let w20 = waits(20);
    assert!((60.0..=66.0).contains(&w20[0]), "Retry-After 60: {w20:?}");
    assert!((45.0..=49.5).contains(&w20[1]), "{w20:?}");
    assert!((135.0..=148.5).contains(&w20[2]), "{w20:?}");
    // The hang became a retryable failure.
    let hang = &by_day[&10].first_error;
    assert!(hang.contains("timed out"), "{hang}");

    // digest.created: one webhook per day, delivered.
    assert!(hooks.wait_for(20, std::time::Duration::from_secs(5)).await);
    let mut periods: Vec<String> = hooks
        .received()
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["data"]["type"], "digest.created");
            v["data"]["period"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    periods.sort();
    periods.dedup();
    assert_eq!(periods.len(), 20);
    // The API key never reached a payload or an attempt.
    for j in w
        .store
        .job_search(JobSearch {
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
    {
        assert!(!j.payload.to_string().contains(GEMINI_KEY));
        for a in w.store.attempt_list(&j.id).await.unwrap() {
            let all = format!("{:?}", a);
            assert!(!all.contains(GEMINI_KEY), "{all}");
        }
    }
    assert!(
        gemini
            .received()
            .iter()
            .all(|r| r.header("x-goog-api-key") == Some(GEMINI_KEY)
                && r.path == "/v1beta/models/gemini-2.5-flash:generateContent")
    );
}

struct DayReport {
    day: u32,
    text: String,
    attempts: usize,
    succeeded_attempts: usize,
    catch_up_used: bool,
    waits: Vec<f64>,
    first_error: String,
}

async fn day_report(w: &World, schedule_id: &str, period: &str) -> DayReport {
    let mut jobs = w
        .store
        .job_search(JobSearch {
            schedule_id: Some(schedule_id.into()),
            period_key: Some(period.into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    let day: u32 = period[8..].parse().unwrap_or(0);
    let mut r = DayReport {
        day,
        text: period.to_string(),
        attempts: 0,
        succeeded_attempts: 0,
        catch_up_used: false,
        waits: vec![],
        first_error: String::new(),
    };
    for j in &jobs {
        let catch_up = j.dedupe_key.as_deref().unwrap_or("").contains(":catchup:");
        r.catch_up_used |= catch_up;
        let attempts = w.store.attempt_list(&j.id).await.unwrap();
        r.text.push_str(&format!(
            "\n  {} run → {}{}",
            if catch_up { "13:00 catch-up" } else { "06:00" },
            j.state,
            j.last_error
                .as_deref()
                .map(|e| format!(" ({})", e.chars().take(90).collect::<String>()))
                .unwrap_or_default()
        ));
        let mut prev: Option<DateTime<Utc>> = None;
        for a in &attempts {
            r.attempts += 1;
            if a.outcome == "succeeded" {
                r.succeeded_attempts += 1;
            }
            if r.first_error.is_empty()
                && let Some(e) = &a.error
            {
                r.first_error = e.clone();
            }
            let wait = prev.map(|p| (a.started_at - p).num_milliseconds() as f64 / 1000.0);
            if !catch_up && let Some(s) = wait {
                r.waits.push(s);
            }
            prev = Some(a.started_at);
            r.text.push_str(&format!(
                "\n    attempt {} at {}{}: {}{}",
                a.attempt,
                a.started_at.with_timezone(&Tokyo).format("%H:%M:%S"),
                wait.map(|s| format!(" (waited {s:.1}s)"))
                    .unwrap_or_default(),
                a.outcome,
                match (&a.status_code, &a.error) {
                    (Some(c), Some(e)) =>
                        format!(" HTTP {c} — {}", e.chars().take(70).collect::<String>()),
                    (None, Some(e)) => format!(" — {}", e.chars().take(70).collect::<String>()),
                    _ => String::new(),
                }
            ));
        }
    }
    r.text.push_str(&format!(
        "\n  catch-up used: {}",
        if r.catch_up_used { "yes" } else { "no" }
    ));
    r
}
