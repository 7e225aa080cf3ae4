//! `--llm-plot FILE.svg`: the LLM scenario's table as two bar charts, one bar
//! group per policy: TTFT p50 and p99 (ms), and the cache hit rate (%).

use super::llm::Run;
use plotters::prelude::*;
use std::path::Path;

/// Writes the charts of `runs` to `path`.
pub fn svg(path: &Path, runs: &[Run]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(340);
    let ttft: Vec<[f64; 2]> = runs.iter().map(|r| [r.ttft_ms.0, r.ttft_ms.1]).collect();
    bars(&top, runs, &ttft, "time to first token, ms (p50, p99)").map_err(|e| err(&e))?;
    let hits: Vec<[f64; 2]> = runs.iter().map(|r| [100.0 * r.hit_rate, 0.0]).collect();
    bars(&bottom, runs, &hits, "prompt blocks served from cache, %").map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>>;

/// One chart: per policy up to two bars (a 0 draws none), labelled below.
fn bars(area: &Area<'_>, runs: &[Run], values: &[[f64; 2]], title: &str) -> DrawResult {
    let top = values.iter().flatten().copied().fold(0.0, f64::max).max(1.0) * 1.1;
    let n = runs.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)?;
    let names: Vec<String> = runs.iter().map(|r| r.policy.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 && i < names.len() {
                names[i].clone()
            } else {
                String::new()
            }
        })
        .draw()?;
    let shades = [BLUE.mix(0.5), RED.mix(0.6)];
    for (i, v) in values.iter().enumerate() {
        for (j, &y) in v.iter().enumerate() {
            if y <= 0.0 {
                continue;
            }
            let x0 = i as f64 + 0.15 + 0.35 * j as f64;
            chart.draw_series([Rectangle::new([(x0, 0.0), (x0 + 0.33, y)], shades[j].filled())])?;
            chart.draw_series([Text::new(
                format!("{y:.1}"),
                (x0, y + top * 0.02),
                ("sans-serif", 12),
            )])?;
        }
    }
    Ok(())
}
