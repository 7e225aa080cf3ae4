//! `--plot FILE.svg`: every worker's in-flight count over time, one panel per mode.

use super::{Fleet, ModeReport};
use plotters::prelude::*;
use std::path::Path;
use workerpick::DeviceKind;

/// Most points drawn per line; longer runs are thinned evenly.
const MAX_POINTS: usize = 1500;
/// Width of the legend strip right of each chart.
const LEGEND_PX: u32 = 150;

/// Writes the plot of `reports`' runs on `fleet` to `path`.
pub fn svg(path: &Path, reports: &[ModeReport], fleet: &Fleet) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 280 * reports.len().max(1) as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    for (area, r) in root.split_evenly((reports.len().max(1), 1)).iter().zip(reports) {
        let (chart, legend) = area.split_horizontally(area.dim_in_pixel().0 - LEGEND_PX);
        panel(&chart, r).map_err(|e| err(&e))?;
        key(&legend, r, fleet).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>>;

fn cpu(fleet: &Fleet, w: usize) -> &'static str {
    if fleet.devices[w] == DeviceKind::Cpu {
        "  cpu"
    } else {
        ""
    }
}

fn color(w: usize) -> RGBAColor {
    Palette99::pick(w).to_rgba()
}

fn panel(area: &Area<'_>, r: &ModeReport) -> DrawResult {
    let samples = &r.load.samples;
    let stride = samples.len().div_ceil(MAX_POINTS).max(1);
    let t_end = samples.last().map_or(1.0, |s| s.0).max(1.0);
    let top = samples
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .max()
        .unwrap_or(0)
        + 1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{}: requests in flight per worker (serving + queued)", r.mode),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(32)
        .y_label_area_size(40)
        .build_cartesian_2d(0.0..t_end, 0u32..top)?;
    chart
        .configure_mesh()
        .x_desc("ms into the run")
        .y_desc("in flight")
        .draw()?;
    let workers = samples.first().map_or(0, |s| s.1.len());
    for w in 0..workers {
        let points = samples.iter().step_by(stride).map(|(t, loads)| (*t, loads[w]));
        chart.draw_series(LineSeries::new(points, color(w).stroke_width(1)))?;
    }
    if let Some(c) = &r.load.churn {
        for t in [c.removed_ms, c.readded_ms] {
            chart.draw_series(LineSeries::new([(t, 0), (t, top)], BLACK.stroke_width(1)))?;
        }
    }
    Ok(())
}

/// The legend: one line per worker with its speed, and the churn marks.
fn key(area: &Area<'_>, r: &ModeReport, fleet: &Fleet) -> DrawResult {
    let font = ("sans-serif", 13).into_font();
    let mut y = 40;
    let mut line = |style: ShapeStyle, label: String| {
        let drawn = area
            .draw(&PathElement::new([(4, y), (24, y)], style))
            .and_then(|()| area.draw(&Text::new(label, (30, y - 7), font.clone())));
        y += 18;
        drawn
    };
    for (w, speed) in fleet.speeds.iter().enumerate() {
        line(
            color(w).stroke_width(2),
            format!("w{w}  speed {speed}{}", cpu(fleet, w)),
        )?;
    }
    if let Some(c) = &r.load.churn {
        line(BLACK.stroke_width(1), format!("w{} out / back", c.worker))?;
    }
    Ok(())
}
