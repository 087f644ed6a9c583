//! The overview's queue charts (issue 36): queue depth (jobs due) and lateness p99 over the
//! last hour (per minute) and the last day (per 15 minutes), drawn on the server as inline
//! SVG from the sampler's per-minute samples (`kairos_engine::sampler`). A bucket of several
//! minutes shows the highest sample in it (a peak is what an operator looks for); a bucket
//! without a sample (no node led, or the node was down) is left empty and says so.

use crate::AppState;
use crate::admin::views::fmt_t;
use chrono::{DateTime, Duration, Utc};
use kairos_store::{QueueSample, QueueSampleList};
use std::fmt::Write as _;

/// A chart's size in CSS pixels (it scales down with the page), as the throughput charts.
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 110.0;

/// One bucket of a series: its start and its highest value, `None` without a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The bucket's start.
    pub start: DateTime<Utc>,
    /// The highest sampled value in it.
    pub value: Option<i64>,
}

/// The `n` buckets of `width` ending with the one holding `now`, each with the highest
/// `value` of the samples in it (a sample whose value is `None` does not count).
pub fn series(
    samples: &[QueueSample],
    now: DateTime<Utc>,
    width: Duration,
    n: usize,
    value: impl Fn(&QueueSample) -> Option<i64>,
) -> Vec<Point> {
    let w = width.num_milliseconds().max(1);
    let last = now.timestamp_millis().div_euclid(w) * w;
    let first = last - w * (n as i64 - 1);
    let mut out: Vec<Point> = (0..n as i64)
        .map(|i| Point {
            start: DateTime::from_timestamp_millis(first + i * w).unwrap_or_default(),
            value: None,
        })
        .collect();
    for s in samples {
        let i = (s.minute.timestamp_millis() - first).div_euclid(w);
        if let (Some(p), Some(v)) = (
            usize::try_from(i).ok().and_then(|i| out.get_mut(i)),
            value(s),
        ) {
            p.value = Some(p.value.map_or(v, |x| x.max(v)));
        }
    }
    out
}

/// `points` as an SVG of bars in `color`, scaled to the highest, with `title` for screen
/// readers and a tooltip per bucket (`unit` after each value).
pub fn svg(id: &str, title: &str, points: &[Point], unit: &str, color: &str) -> String {
    let max = points
        .iter()
        .filter_map(|p| p.value)
        .max()
        .unwrap_or(0)
        .max(1);
    let bw = WIDTH / points.len().max(1) as f64;
    let plot = HEIGHT - 16.0;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart\" role=\"img\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         preserveAspectRatio=\"none\" xmlns=\"http://www.w3.org/2000/svg\"><title>{title}</title>\
         <line x1=\"0\" y1=\"{plot}\" x2=\"{WIDTH}\" y2=\"{plot}\" stroke=\"#9aa3b5\"/>"
    );
    for (i, p) in points.iter().enumerate() {
        let x = i as f64 * bw;
        let tip = match p.value {
            Some(v) => format!("{}: {v}{unit}", fmt_t(p.start)),
            None => format!("{}: no sample", fmt_t(p.start)),
        };
        let _ = write!(
            s,
            "<g class=\"point\"><title>{tip}</title>\
             <rect x=\"{x:.2}\" y=\"0\" width=\"{bw:.2}\" height=\"{plot}\" fill=\"transparent\"/>"
        );
        if let Some(v) = p.value.filter(|v| *v > 0) {
            let h = v as f64 / max as f64 * (plot - 4.0);
            let _ = write!(
                s,
                "<rect class=\"value\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\" fill=\"{color}\"/>",
                plot - h,
                (bw - 1.0).max(0.5)
            );
        }
        s.push_str("</g>");
    }
    let scale = if points.iter().any(|p| p.value.is_some()) {
        format!("max {max}{unit}")
    } else {
        "no samples".to_string()
    };
    let _ = write!(
        s,
        "<text x=\"2\" y=\"{HEIGHT}\" font-size=\"10\" fill=\"#555\">{}</text>\
         <text x=\"{WIDTH}\" y=\"{HEIGHT}\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">{scale}</text></svg>",
        points.first().map(|p| fmt_t(p.start)).unwrap_or_default()
    );
    s
}

/// The overview's four queue charts and the latest sample.
#[derive(Debug)]
pub struct QueueCharts {
    /// Jobs due, per minute over the last hour.
    pub depth_hour: String,
    /// Jobs due, highest per 15 minutes over the last day.
    pub depth_day: String,
    /// Lateness p99 (ms), per minute over the last hour.
    pub late_hour: String,
    /// Lateness p99 (ms), highest per 15 minutes over the last day.
    pub late_day: String,
    /// The newest sample of the last day, if any.
    pub latest: Option<QueueSample>,
}

/// Read the last day's samples up to `now` and draw the four charts.
pub async fn charts(
    state: &AppState,
    now: DateTime<Utc>,
) -> Result<QueueCharts, kairos_store::Error> {
    let quarter = Duration::minutes(15);
    let w = quarter.num_milliseconds();
    let first = now.timestamp_millis().div_euclid(w) * w - w * 95;
    let samples = state
        .kairos
        .store()
        .queue_sample_list(QueueSampleList {
            since: DateTime::from_timestamp_millis(first).unwrap_or_default(),
            until: now + Duration::milliseconds(1),
        })
        .await?;
    let minute = Duration::minutes(1);
    let due = |s: &QueueSample| Some(s.due);
    let late = |s: &QueueSample| s.lateness_p99_ms;
    const DEPTH: &str = "#4a6fd1";
    const LATE: &str = "#c77a1e";
    Ok(QueueCharts {
        depth_hour: svg(
            "chart-depth-hour",
            "Jobs due, per minute, last hour",
            &series(&samples, now, minute, 60, due),
            " due",
            DEPTH,
        ),
        depth_day: svg(
            "chart-depth-day",
            "Jobs due, highest per 15 minutes, last day",
            &series(&samples, now, quarter, 96, due),
            " due",
            DEPTH,
        ),
        late_hour: svg(
            "chart-late-hour",
            "Lateness p99 of the jobs started, per minute, last hour",
            &series(&samples, now, minute, 60, late),
            " ms",
            LATE,
        ),
        late_day: svg(
            "chart-late-day",
            "Lateness p99 of the jobs started, highest per 15 minutes, last day",
            &series(&samples, now, quarter, 96, late),
            " ms",
            LATE,
        ),
        latest: samples.last().cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
    }

    fn sample(minute: &str, due: i64, late: Option<i64>) -> QueueSample {
        QueueSample {
            minute: t(minute),
            due,
            available: due,
            running: 0,
            started: 0,
            lateness_p99_ms: late,
            recorded_at: t(minute),
            succeeded: None,
            dead: None,
        }
    }

    fn svg_of(points: &[Point]) -> String {
        svg("e", "empty", points, " due", "#000")
    }

    #[test]
    fn series_keeps_the_highest_sample_per_bucket_and_leaves_gaps_empty() {
        let now = t("2026-12-05T10:29:30Z");
        let samples = vec![
            sample("2026-12-05T10:00:00Z", 3, Some(40)),
            sample("2026-12-05T10:07:00Z", 9, None),
            sample("2026-12-05T10:20:00Z", 1, Some(900)),
            // Before the window: left out.
            sample("2026-12-05T08:00:00Z", 99, Some(99)),
        ];
        let q = Duration::minutes(15);
        let due = series(&samples, now, q, 2, |s| Some(s.due));
        assert_eq!(due[0].start, t("2026-12-05T10:00:00Z"));
        assert_eq!(due[0].value, Some(9), "the peak of the bucket");
        assert_eq!(due[1].value, Some(1));
        let late = series(&samples, now, q, 2, |s| s.lateness_p99_ms);
        assert_eq!(
            late[0].value,
            Some(40),
            "a sample without lateness does not count"
        );
        let minutes = series(&samples, now, Duration::minutes(1), 30, |s| Some(s.due));
        assert_eq!(minutes.iter().filter(|p| p.value.is_none()).count(), 27);
        let svg = svg("c", "due", &minutes, " due", "#000");
        assert_eq!(svg.matches("class=\"value\"").count(), 3, "{svg}");
        assert!(svg.contains("2026-12-05T10:07:00.000Z: 9 due"), "{svg}");
        assert!(svg.contains("2026-12-05T10:01:00.000Z: no sample"), "{svg}");
        assert!(svg.contains(">max 9 due</text>"), "{svg}");
        let empty = series(&[], now, Duration::minutes(1), 3, |s| Some(s.due));
        assert!(svg_of(&empty).contains(">no samples</text>"));
    }
}
