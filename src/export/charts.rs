//! The report's charts as SVG (plotters' SVG backend): Δ bars per emotion for each category and
//! the model-vs-human Δ scatter. Kept apart from `export::report` (the tables and text) so the
//! drawing code can grow without crowding the writers.

use plotters::prelude::*;

use crate::domain::report::{Cohort, Kind, Level, Report};
use crate::export::picks::{category_names, emotion_group, emotions};

const COLORS: [RGBColor; 8] = [
    RGBColor(34, 34, 34),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 94, 240),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// A drawing failed (plotters' backend error, as text: its error type is generic over the
/// backend).
#[derive(Debug, thiserror::Error)]
#[error("chart: {0}")]
pub struct ChartError(String);

fn chart_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError(e.to_string())
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let pad = ((hi - lo) * 0.08).max(0.5);
    (lo - pad, hi + pad)
}

/// Grouped bars: Δ of `category` per emotion, one bar per cohort.
pub fn delta_bars(report: &Report, category: usize) -> Result<String, ChartError> {
    let emotions = emotions(report);
    let name = category_names(report)
        .get(category)
        .cloned()
        .unwrap_or_default();
    let values: Vec<Vec<Option<f64>>> = report
        .cohorts
        .iter()
        .map(|c| {
            emotions
                .iter()
                .map(|e| emotion_group(c, e).and_then(|g| g.categories.get(category)?.delta))
                .collect()
        })
        .collect();
    let all: Vec<f64> = values.iter().flatten().flatten().copied().collect();
    let (lo, hi) = padded(
        all.iter().copied().fold(0.0, f64::min),
        all.iter().copied().fold(0.0, f64::max),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let n = emotions.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Δ {name} per emotion (evoked − default)"),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..n, lo..hi)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(format!("Δ {name}"))
            .draw()
            .map_err(chart_err)?;
        let k = values.len().max(1) as f64;
        let width = 0.8 / k;
        for (ci, (cohort, vals)) in report.cohorts.iter().zip(&values).enumerate() {
            let col = color(ci);
            let bars = vals.iter().enumerate().filter_map(|(ei, v)| {
                let v = (*v)?;
                let x0 = ei as f64 + 0.1 + ci as f64 * width;
                Some(Rectangle::new([(x0, 0.0), (x0 + width, v)], col.filled()))
            });
            chart
                .draw_series(bars)
                .map_err(chart_err)?
                .label(cohort.name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], col.filled()));
        }
        chart
            .draw_series(emotions.iter().enumerate().map(|(i, e)| {
                EmptyElement::at((i as f64 + 0.5, lo))
                    + Text::new(
                        e.clone(),
                        (-(e.len() as i32) * 3, 8),
                        ("sans-serif", 12).into_font(),
                    )
            }))
            .map_err(chart_err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (n, 0.0)], BLACK))
            .map_err(chart_err)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(attributes_only(&svg))
}

/// Scatter of each model's Δ against the humans' Δ across factors (all categories; circles
/// for the first category, triangles for the others), with the line y = x.
pub fn delta_scatter(report: &Report) -> Result<Option<String>, ChartError> {
    let Some(humans) = report.humans() else {
        return Ok(None);
    };
    let models: Vec<&Cohort> = report
        .cohorts
        .iter()
        .filter(|c| c.kind == Kind::Model)
        .collect();
    if models.is_empty() {
        return Ok(None);
    }
    let points: Vec<Vec<(usize, f64, f64)>> = models
        .iter()
        .map(|m| {
            humans
                .groups
                .iter()
                .zip(&m.groups)
                .filter(|(h, _)| h.level == Level::Factor)
                .flat_map(|(h, g)| {
                    h.categories
                        .iter()
                        .zip(&g.categories)
                        .enumerate()
                        .filter_map(|(c, (x, y))| Some((c, x.delta?, y.delta?)))
                })
                .collect()
        })
        .collect();
    let all: Vec<f64> = points
        .iter()
        .flatten()
        .flat_map(|(_, x, y)| [*x, *y])
        .collect();
    let (lo, hi) = padded(
        all.iter().copied().fold(0.0, f64::min),
        all.iter().copied().fold(0.0, f64::max),
    );
    let cats = category_names(report);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Model Δ vs human Δ per factor (○ {}, △ {})",
                    cats.first().cloned().unwrap_or_default(),
                    cats.get(1..).map(|c| c.join(", ")).unwrap_or_default()
                ),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, lo..hi)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("human Δ")
            .y_desc("model Δ")
            .draw()
            .map_err(chart_err)?;
        chart
            .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.4)))
            .map_err(chart_err)?;
        for (mi, (m, pts)) in models.iter().zip(&points).enumerate() {
            let col = color(mi + 1);
            chart
                .draw_series(pts.iter().map(|&(c, x, y)| -> DynElement<_, _> {
                    if c == 0 {
                        Circle::new((x, y), 4, col.filled()).into_dyn()
                    } else {
                        TriangleMarker::new((x, y), 5, col.filled()).into_dyn()
                    }
                }))
                .map_err(chart_err)?
                .label(m.name.clone())
                .legend(move |(x, y)| Circle::new((x + 5, y), 4, col.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(Some(attributes_only(&svg)))
}

/// The page CSP forbids inline `style` attributes; plotters writes presentation attributes,
/// but make sure: any `style="…"` is dropped (it only ever carries defaults).
fn attributes_only(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find(" style=\"") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 8..];
        rest = match after.find('"') {
            Some(j) => &after[j + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The charts of a report, as SVG markup.
pub struct Charts {
    pub bars: Vec<String>,
    pub scatter: Option<String>,
}

pub fn charts(report: &Report) -> Result<Charts, ChartError> {
    let n = category_names(report).len();
    Ok(Charts {
        bars: (0..n)
            .map(|c| delta_bars(report, c))
            .collect::<Result<_, _>>()?,
        scatter: delta_scatter(report)?,
    })
}
