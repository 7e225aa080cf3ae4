//! A log-log line plot as SVG text: one polyline with markers per series, a
//! legend, decade gridlines and labels. Written by hand (no plotting crate):
//! the report needs one small chart, and plain SVG diffs as text.

use std::fmt::Write;

/// One series: its legend label, colour, and `(x, y)` points (positive, finite;
/// others are left out, so a benchmark that did not run leaves a gap).
pub struct Series {
    pub label: String,
    pub colour: &'static str,
    pub points: Vec<(f64, f64)>,
}

const W: f64 = 680.0;
const H: f64 = 440.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;

/// A power of ten as a short label, with `unit` names for each power of 1000
/// (`["", " k", " M"]`, or `[" ns", " µs", " ms", " s"]`).
fn decade_label(e: i32, units: &[&str]) -> String {
    let (group, within) = (e.div_euclid(3), e.rem_euclid(3));
    match units.get(group.max(0) as usize) {
        Some(u) if e >= 0 => format!("{}{u}", 10u32.pow(within as u32)),
        _ => format!("1e{e}"),
    }
}

/// The decades `[lo, hi]` (exponents) that hold every value, at least one wide.
fn decades(values: impl Iterator<Item = f64>) -> Option<(i32, i32)> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let (lo, hi) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    Some((lo, hi.max(lo + 1)))
}

/// Gridline values over decades `lo..=hi`: `m × 10^e` for m in 1..10, with
/// the stroke for a decade (`m = 1`) or between.
fn ticks(lo: i32, hi: i32) -> impl Iterator<Item = (f64, &'static str)> {
    (lo..=hi)
        .flat_map(move |e| (1..10).map(move |m| (e, m)))
        .filter(move |&(e, m)| e < hi || m == 1)
        .map(|(e, m)| (m as f64 * 10f64.powi(e), if m == 1 { "#bbb" } else { "#eee" }))
}

fn usable(p: &(f64, f64)) -> bool {
    p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite()
}

/// A marker of `shape` (0 circle, 1 square, 2 triangle) at `(x, y)`.
fn marker(svg: &mut String, shape: usize, x: f64, y: f64, colour: &str) {
    let _ = match shape % 3 {
        0 => writeln!(
            svg,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"/>"##
        ),
        1 => writeln!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{colour}"/>"##,
            x - 4.0,
            y - 4.0
        ),
        _ => writeln!(
            svg,
            r##"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}"/>"##,
            x,
            y - 5.0,
            x - 5.0,
            y + 4.0,
            x + 5.0,
            y + 4.0
        ),
    };
}

/// The chart: `title`, axis titles, x labelled in workers (`k`, `M`) and y
/// in time (`ns`, `µs`, `ms`). Series with no usable point stay in the legend,
/// marked as not measured; with none at all the axes are drawn over 1..10.
pub fn log_log(title: &str, x_title: &str, y_title: &str, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter().filter(|p| usable(p)));
    let (x0, x1) = decades(all().map(|p| p.0)).unwrap_or((0, 1));
    let (y0, y1) = decades(all().map(|p| p.1)).unwrap_or((0, 1));
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| LEFT + (x.log10() - x0 as f64) / (x1 - x0) as f64 * pw;
    let sy = |y: f64| TOP + ph - (y.log10() - y0 as f64) / (y1 - y0) as f64 * ph;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(svg, r##"<rect width="{W}" height="{H}" fill="white"/>"##);
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{}</text>"##,
        W / 2.0,
        escape(title)
    );
    // Gridlines: light at 2..9 × each decade, darker with a label at each decade.
    for (v, stroke) in ticks(x0, x1) {
        let x = sx(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="{stroke}"/>"##,
            TOP + ph
        );
    }
    for (v, stroke) in ticks(y0, y1) {
        let y = sy(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{stroke}"/>"##,
            LEFT + pw
        );
    }
    for e in x0..=x1 {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"##,
            sx(10f64.powi(e)),
            TOP + ph + 18.0,
            decade_label(e, &["", " k", " M", " G"])
        );
    }
    for e in y0..=y1 {
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end" dominant-baseline="middle">{}</text>"##,
            LEFT - 6.0,
            sy(10f64.powi(e)),
            decade_label(e, &[" ns", " µs", " ms", " s"])
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 12.0,
        escape(x_title)
    );
    let _ = writeln!(
        svg,
        r##"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        TOP + ph / 2.0,
        escape(y_title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{}" y="{}" width="320" height="{}" fill="white" fill-opacity="0.85" stroke="#ccc"/>"##,
        LEFT + 6.0,
        TOP + 6.0,
        20.0 * series.len() as f64 + 4.0
    );
    for (i, s) in series.iter().enumerate() {
        let mut pts: Vec<(f64, f64)> = s.points.iter().copied().filter(usable).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let coords: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        if coords.len() > 1 {
            let _ = writeln!(
                svg,
                r##"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"##,
                coords.join(" "),
                s.colour
            );
        }
        pts.iter()
            .for_each(|&(x, y)| marker(&mut svg, i, sx(x), sy(y), s.colour));
        // The legend, top left inside the plot.
        let (lx, ly) = (LEFT + 14.0, TOP + 18.0 + 20.0 * i as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{}" stroke-width="2"/>"##,
            lx + 28.0,
            s.colour
        );
        marker(&mut svg, i, lx + 14.0, ly, s.colour);
        let label = if pts.is_empty() {
            format!("{} (not measured)", s.label)
        } else {
            s.label.clone()
        };
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{ly}" dominant-baseline="middle">{}</text>"##,
            lx + 36.0,
            escape(&label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
