//! The overview's throughput charts, drawn on the server as inline SVG (no JavaScript, no
//! chart library): succeeded and dead jobs per minute over the last hour and per 15 minutes
//! over the last day, stacked bars with a tooltip (`<title>`) per bucket.

use crate::AppState;
use crate::admin::views::fmt_t;
use chrono::{DateTime, Duration, Utc};
use kairos_engine::buckets::Plan;
use kairos_store::{FinishedBucket, JobFinishedSeries, QueueSample, QueueSampleList, minute_of};
use std::fmt::Write as _;

/// A chart's size in CSS pixels (it scales down with the page).
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 110.0;

/// One bucket: its start, succeeded and dead jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    /// The bucket's start.
    pub start: DateTime<Utc>,
    /// Jobs that succeeded in it.
    pub succeeded: i64,
    /// Jobs that ended dead in it.
    pub dead: i64,
}

/// The `n` buckets of `width` ending with the one holding `now`, filled from `rows` (empty
/// buckets are zero).
pub fn bars(rows: &[FinishedBucket], now: DateTime<Utc>, width: Duration, n: usize) -> Vec<Bar> {
    let w = width.num_milliseconds().max(1);
    let last = now.timestamp_millis().div_euclid(w) * w;
    let first = last - w * (n as i64 - 1);
    let mut out: Vec<Bar> = (0..n as i64)
        .map(|i| Bar {
            start: DateTime::from_timestamp_millis(first + i * w).unwrap_or_default(),
            succeeded: 0,
            dead: 0,
        })
        .collect();
    for r in rows {
        let i = (r.start.timestamp_millis() - first).div_euclid(w);
        if let Some(b) = usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
            match r.state.as_str() {
                "succeeded" => b.succeeded += r.count,
                "dead" => b.dead += r.count,
                _ => {}
            }
        }
    }
    out
}

/// `bars` as an SVG of stacked bars (succeeded green, dead red on top), scaled to the
/// highest bucket, with `title` for screen readers and a tooltip per bar.
pub fn svg(id: &str, title: &str, bars: &[Bar]) -> String {
    let max = bars
        .iter()
        .map(|b| b.succeeded + b.dead)
        .max()
        .unwrap_or(0)
        .max(1);
    let bw = WIDTH / bars.len().max(1) as f64;
    let plot = HEIGHT - 16.0;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart\" role=\"img\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         preserveAspectRatio=\"none\" xmlns=\"http://www.w3.org/2000/svg\"><title>{title}</title>\
         <line x1=\"0\" y1=\"{plot}\" x2=\"{WIDTH}\" y2=\"{plot}\" stroke=\"#9aa3b5\"/>"
    );
    for (i, b) in bars.iter().enumerate() {
        let x = i as f64 * bw;
        let hs = b.succeeded as f64 / max as f64 * (plot - 4.0);
        let hd = b.dead as f64 / max as f64 * (plot - 4.0);
        let tip = format!(
            "{}: {} succeeded, {} dead",
            fmt_t(b.start),
            b.succeeded,
            b.dead
        );
        let _ = write!(
            s,
            "<g class=\"bar\"><title>{tip}</title>\
             <rect x=\"{x:.2}\" y=\"0\" width=\"{bw:.2}\" height=\"{plot}\" fill=\"transparent\"/>"
        );
        if b.succeeded > 0 {
            let _ = write!(
                s,
                "<rect class=\"ok\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{hs:.2}\" fill=\"#3fa35b\"/>",
                plot - hs,
                (bw - 1.0).max(0.5)
            );
        }
        if b.dead > 0 {
            let _ = write!(
                s,
                "<rect class=\"dead\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{hd:.2}\" fill=\"#d9534f\"/>",
                plot - hs - hd,
                (bw - 1.0).max(0.5)
            );
        }
        s.push_str("</g>");
    }
    let _ = write!(
        s,
        "<text x=\"2\" y=\"{HEIGHT}\" font-size=\"10\" fill=\"#555\">{}</text>\
         <text x=\"{WIDTH}\" y=\"{HEIGHT}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">max {max} per bucket</text></svg>",
        bars.first().map(|b| fmt_t(b.start)).unwrap_or_default()
    );
    s
}

/// One chart of the overview: its SVG and its totals.
#[derive(Debug, serde::Serialize)]
pub struct Chart {
    /// The inline SVG.
    pub svg: String,
    /// Succeeded in the window.
    pub succeeded: i64,
    /// Dead in the window.
    pub dead: i64,
}

/// The minutes the job table is counted for, however they were sampled: the last two, whose
/// samples were taken within seconds of their end (a completion committed after that, from a
/// node whose clock runs behind, would be missing from the sample).
const RECOUNT: i64 = 2;

/// The chart of the `n` buckets of `width` up to `now`.
///
/// A day holds millions of finished jobs on a busy node, and counting them at every page load
/// (with live refresh, every few seconds) kept a database backend busy. The sampler counts each
/// minute's succeeded and dead jobs once, when it records the minute; the chart sums those
/// samples and counts from the job table only the minutes they do not hold (the engine's
/// [`Plan`], as for the monitor's quarter counts): the gaps (no leader sampled them, or the
/// samples predate migration 0036) and the last [`RECOUNT`] minutes.
pub async fn chart(
    state: &AppState,
    id: &str,
    title: &str,
    now: DateTime<Utc>,
    width: Duration,
    n: usize,
) -> Result<Chart, kairos_store::Error> {
    let w = width.num_milliseconds().max(1);
    let first = now.timestamp_millis().div_euclid(w) * w - w * (n as i64 - 1);
    let since = DateTime::from_timestamp_millis(first).unwrap_or_default();
    let store = state.kairos.store();
    let samples = store
        .queue_sample_list(QueueSampleList { since, until: now })
        .await?;
    let (plan, mut rows) = plan(&samples, since, now);
    for (from, until) in plan.spans {
        rows.extend(
            store
                .job_finished_series(JobFinishedSeries {
                    since: from,
                    until,
                    bucket_secs: 60,
                })
                .await?,
        );
    }
    let bars = bars(&rows, now, width, n);
    Ok(Chart {
        succeeded: bars.iter().map(|b| b.succeeded).sum(),
        dead: bars.iter().map(|b| b.dead).sum(),
        svg: svg(id, title, &bars),
    })
}

/// Where the finished jobs of the minutes from `since` (a minute's start) to `now` come from:
/// the plan, and the rows of the samples it sums (succeeded and dead, per minute). A sample
/// taken before migration 0036 holds no finished jobs and counts as a gap.
pub fn plan(
    samples: &[QueueSample],
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> (Plan, Vec<FinishedBucket>) {
    let sampled: Vec<DateTime<Utc>> = samples
        .iter()
        .filter(|s| s.succeeded.is_some() && s.dead.is_some())
        .map(|s| s.minute)
        .collect();
    let recount = (minute_of(now) - Duration::minutes(RECOUNT - 1)).max(since);
    let until = now + Duration::milliseconds(1);
    let plan = Plan::of(&sampled, since, recount, until, Duration::minutes(1));
    let rows = samples
        .iter()
        .filter(|s| plan.buckets.contains(&s.minute))
        .flat_map(|s| {
            [
                ("succeeded", s.succeeded.unwrap_or(0)),
                ("dead", s.dead.unwrap_or(0)),
            ]
            .map(|(state, count)| FinishedBucket {
                start: s.minute,
                state: state.into(),
                count,
            })
        })
        .collect();
    (plan, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
    }

    #[test]
    fn bars_fill_every_bucket_up_to_now_and_place_rows_by_start() {
        let now = t("2026-12-05T10:03:30Z");
        let rows = vec![
            FinishedBucket {
                start: t("2026-12-05T10:03:00Z"),
                state: "succeeded".into(),
                count: 4,
            },
            FinishedBucket {
                start: t("2026-12-05T10:01:00Z"),
                state: "dead".into(),
                count: 2,
            },
            // Before the window: left out.
            FinishedBucket {
                start: t("2026-12-05T09:00:00Z"),
                state: "dead".into(),
                count: 9,
            },
        ];
        let b = bars(&rows, now, Duration::minutes(1), 4);
        assert_eq!(b.len(), 4);
        assert_eq!(b[0].start, t("2026-12-05T10:00:00Z"));
        assert_eq!((b[1].succeeded, b[1].dead), (0, 2));
        assert_eq!((b[3].succeeded, b[3].dead), (4, 0));
        assert_eq!(b.iter().map(|x| x.dead).sum::<i64>(), 2);
        let svg = svg("c", "jobs", &b);
        assert_eq!(svg.matches("class=\"ok\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("class=\"dead\"").count(), 1, "{svg}");
        assert!(
            svg.contains("2026-12-05T10:01:00.000Z: 0 succeeded, 2 dead"),
            "{svg}"
        );
    }

    fn sample(minute: &str, finished: Option<(i64, i64)>) -> QueueSample {
        QueueSample {
            minute: t(minute),
            due: 0,
            available: 0,
            running: 0,
            started: 0,
            lateness_p99_ms: None,
            recorded_at: t(minute) + Duration::seconds(65),
            succeeded: finished.map(|f| f.0),
            dead: finished.map(|f| f.1),
        }
    }

    #[test]
    fn a_chart_counts_the_job_table_only_for_the_gaps_and_the_last_minutes() {
        let since = t("2026-12-05T10:00:00Z");
        let now = t("2026-12-05T10:07:30Z");
        let samples = vec![
            sample("2026-12-05T10:00:00Z", Some((5, 1))),
            // 10:01 has no sample (no leader), 10:02 predates the columns.
            sample("2026-12-05T10:02:00Z", None),
            sample("2026-12-05T10:03:00Z", Some((7, 0))),
            sample("2026-12-05T10:04:00Z", Some((2, 2))),
            sample("2026-12-05T10:05:00Z", Some((1, 0))),
            // 10:06 is sampled but recent: counted again from the job table.
            sample("2026-12-05T10:06:00Z", Some((9, 9))),
        ];
        let (p, rows) = plan(&samples, since, now);
        assert_eq!(
            p.spans,
            vec![
                (t("2026-12-05T10:01:00Z"), t("2026-12-05T10:03:00Z")),
                (t("2026-12-05T10:06:00Z"), now + Duration::milliseconds(1)),
            ]
        );
        assert_eq!(
            p.buckets.iter().copied().collect::<Vec<_>>(),
            ["10:00", "10:03", "10:04", "10:05"]
                .map(|m| t(&format!("2026-12-05T{m}:00Z")))
                .to_vec()
        );
        let b = bars(&rows, now, Duration::minutes(1), 8);
        assert_eq!(b.iter().map(|x| x.succeeded).sum::<i64>(), 15);
        assert_eq!(b.iter().map(|x| x.dead).sum::<i64>(), 3);
    }

    #[test]
    fn many_gaps_are_counted_as_at_most_eight_ranges() {
        let since = t("2026-12-05T10:00:00Z");
        let now = t("2026-12-05T11:00:00Z");
        // Every other minute sampled: 30 gaps.
        let samples: Vec<_> = (0..60)
            .step_by(2)
            .map(|i| sample(&(since + Duration::minutes(i)).to_rfc3339(), Some((1, 0))))
            .collect();
        let (p, rows) = plan(&samples, since, now);
        assert_eq!(p.spans.len(), 8);
        assert_eq!(
            p.spans[0].0,
            t("2026-12-05T10:01:00Z"),
            "from the first gap"
        );
        assert_eq!(p.spans[7].1, now + Duration::milliseconds(1));
        let (from, to) = p.spans[0];
        assert!(
            rows.iter().all(|r| r.start < from || r.start >= to),
            "no sample inside the first range, which the job table counts: {p:?}"
        );
        assert_eq!(rows.len(), 2 * p.buckets.len());
    }

    #[test]
    fn without_samples_the_whole_window_is_counted_from_the_job_table() {
        let since = t("2026-12-05T10:00:00Z");
        let now = t("2026-12-05T10:59:10Z");
        let (p, rows) = plan(&[], since, now);
        assert_eq!(p.spans, vec![(since, now + Duration::milliseconds(1))]);
        assert!(rows.is_empty() && p.buckets.is_empty());
    }
}
