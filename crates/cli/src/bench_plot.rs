//! `kairos bench --plot FILE.svg`: a small hand-written SVG of time series, one panel per
//! quantity stacked vertically, each with its axes, its range and a legend. No plotting
//! crate is in DEPENDENCIES.md; a few polylines need none.

use std::fmt::Write;

/// One line of a panel: its name (legend), colour and points `(x, y)`.
pub(crate) struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
}

/// One panel: a title (with its unit) and the lines drawn in it.
pub(crate) struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 900.0;
const PANEL_HEIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const GAP: f64 = 50.0;

/// `s` safe inside SVG text and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A short label for an axis value: 1234567 → "1.23M", 0.5 → "0.5".
fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The SVG document: `title` above `panels`, x in seconds from 0 to the largest x.
pub(crate) fn render(title: &str, panels: &[Panel]) -> String {
    let height = TOP + panels.len() as f64 * (PANEL_HEIGHT + GAP) + 10.0;
    let x_max = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|p| p.0)
        .fold(1.0_f64, f64::max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">
<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>
<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for (i, panel) in panels.iter().enumerate() {
        let top = TOP + i as f64 * (PANEL_HEIGHT + GAP) + 20.0;
        let bottom = top + PANEL_HEIGHT;
        let y_max = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| y.is_finite())
            .fold(0.0_f64, f64::max);
        let y_max = if y_max > 0.0 { y_max * 1.05 } else { 1.0 };
        let x = |v: f64| LEFT + v / x_max * plot_w;
        let y = |v: f64| bottom - v / y_max * PANEL_HEIGHT;
        let _ = writeln!(
            svg,
            r##"<g class="panel">
<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>
<line x1="{LEFT}" y1="{top:.1}" x2="{LEFT}" y2="{bottom:.1}" stroke="#333"/>
<line x1="{LEFT}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}" stroke="#333"/>
<line x1="{LEFT}" y1="{top:.1}" x2="{:.1}" y2="{top:.1}" stroke="#ddd"/>
<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/>
<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>
<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>
<text x="{:.1}" y="{:.1}" text-anchor="end">0</text>
<text x="{LEFT}" y="{:.1}" text-anchor="middle">0 s</text>
<text x="{:.1}" y="{:.1}" text-anchor="end">{} s</text>"##,
            top - 6.0,
            escape(&panel.title),
            LEFT + plot_w,
            LEFT + plot_w,
            (top + bottom) / 2.0,
            LEFT + plot_w,
            (top + bottom) / 2.0,
            LEFT - 6.0,
            (top + bottom) / 2.0 + 4.0,
            escape(&label(y_max / 2.0)),
            LEFT - 6.0,
            top + 4.0,
            escape(&label(y_max)),
            LEFT - 6.0,
            bottom + 4.0,
            bottom + 16.0,
            LEFT + plot_w,
            bottom + 16.0,
            escape(&label(x_max)),
        );
        for (k, s) in panel.series.iter().enumerate() {
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>
<text x="{:.1}" y="{:.1}" fill="{}" text-anchor="end">{}</text>"#,
                escape(s.color),
                pts.join(" "),
                LEFT + plot_w - 130.0 * k as f64,
                top - 6.0,
                escape(s.color),
                escape(&s.name),
            );
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_plot_escapes_text_and_draws_one_polyline_per_series() {
        let svg = render(
            "a <b> & \"c\"",
            &[Panel {
                title: "jobs/s <per second>".into(),
                series: vec![
                    Series {
                        name: "enqueued".into(),
                        color: "#1f77b4",
                        points: vec![(1.0, 10.0), (2.0, 20.0), (3.0, f64::NAN)],
                    },
                    Series {
                        name: "completed & done".into(),
                        color: "#d62728",
                        points: vec![(1.0, 5.0), (2.0, 25.0)],
                    },
                ],
            }],
        );
        assert!(svg.contains("a &lt;b&gt; &amp; &quot;c&quot;"), "{svg}");
        assert!(svg.contains("jobs/s &lt;per second&gt;"), "{svg}");
        assert!(svg.contains("completed &amp; done"), "{svg}");
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        assert!(!svg.contains("NaN"), "{svg}");
        // The highest point (25 at x = 2, the last x) reaches the top of the panel.
        let top = TOP + 20.0 + PANEL_HEIGHT - 25.0 / (25.0 * 1.05) * PANEL_HEIGHT;
        assert!(
            svg.contains(&format!("{:.1},{top:.1}", WIDTH - RIGHT)),
            "{svg}"
        );
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn bench_plot_labels_are_short() {
        assert_eq!(label(0.0), "0");
        assert_eq!(label(0.25), "0.25");
        assert_eq!(label(25.2), "25.2");
        assert_eq!(label(812.0), "812");
        assert_eq!(label(42_000.0), "42.0k");
        assert_eq!(label(917_000_000.0), "917.00M");
    }
}
