//! The overview's throughput charts, drawn on the server as inline SVG (no JavaScript, no
//! chart library): succeeded and dead jobs per minute over the last hour and per 15 minutes
//! over the last day, stacked bars with a tooltip (`<title>`) per bucket.

use crate::AppState;
use crate::admin::views::fmt_t;
use chrono::{DateTime, Duration, Utc};
use kairos_store::{FinishedBucket, JobFinishedSeries};
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

/// The chart of the `n` buckets of `width` up to `now`.
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
    let rows = state
        .kairos
        .store()
        .job_finished_series(JobFinishedSeries {
            since: DateTime::from_timestamp_millis(first).unwrap_or_default(),
            until: now + Duration::milliseconds(1),
            bucket_secs: width.num_seconds().max(1),
        })
        .await?;
    let bars = bars(&rows, now, width, n);
    Ok(Chart {
        succeeded: bars.iter().map(|b| b.succeeded).sum(),
        dead: bars.iter().map(|b| b.dead).sum(),
        svg: svg(id, title, &bars),
    })
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
}
