//! The report's charts as SVG (plotters' SVG backend): Δ bars per emotion for each category and
//! the model-vs-human Δ scatter. Kept apart from `export::report` (the tables and text) so the
//! drawing code can grow without crowding the writers.
//!
//! Made to be read at 100 %: every text is at least 12 px (plotters writes `size / 1.24` as the
//! SVG font size, so sizes go through [`font`]); the legend sits in its own band below the plot
//! (a `<g class="legend">` we write ourselves, so nothing is ever drawn over a bar); bars carry
//! 95 % CI error bars and a `*` when the change is significant; a cell without data is a
//! hatched box marked "n/a", never a bar of height zero. The scatter has the identity line and a
//! least-squares line per model.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::domain::report::{CategoryResult, Cohort, Kind, Level, Report};
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

/// The smallest text of a chart, in CSS px.
pub const MIN_TEXT_PX: f64 = 13.0;

/// A sans-serif font whose SVG `font-size` is `css_px` (plotters divides by 1.24 when it
/// writes the attribute).
fn font(css_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::SansSerif, css_px * 1.24, FontStyle::Normal)
}

/// The 95 % confidence interval of a change from the report's own numbers: the test's
/// statistic is `t = Δ / SE` (paired or two-sample alike), so `SE = |Δ / t|` and the interval
/// is `Δ ± 1.96 · SE`. `None` without a test or when `t = 0` (the SE is not recoverable).
pub fn ci95(delta: Option<f64>, t: Option<f64>) -> Option<(f64, f64)> {
    let (d, t) = (delta?, t?);
    if t == 0.0 || !t.is_finite() {
        return None;
    }
    let half = 1.96 * (d / t).abs();
    half.is_finite().then_some((d - half, d + half))
}

/// The least-squares line `y = a + b·x` through the points; `None` with fewer than two
/// distinct x.
pub fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = my - b * mx;
    (a.is_finite() && b.is_finite()).then_some((a, b))
}

/// The part of the line `y = a + b·x` inside the square `[lo, hi]²`, as its two ends.
fn clip_line((a, b): (f64, f64), lo: f64, hi: f64) -> Option<[(f64, f64); 2]> {
    let y = |x: f64| a + b * x;
    let mut ends = Vec::with_capacity(4);
    for x in [lo, hi] {
        if (lo..=hi).contains(&y(x)) {
            ends.push((x, y(x)));
        }
    }
    if b != 0.0 {
        for yy in [lo, hi] {
            let x = (yy - a) / b;
            if (lo..=hi).contains(&x) {
                ends.push((x, yy));
            }
        }
    }
    ends.sort_by(|p, q| p.0.total_cmp(&q.0));
    match (ends.first(), ends.last()) {
        (Some(&p), Some(&q)) if q.0 > p.0 => Some([p, q]),
        _ => None,
    }
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let pad = ((hi - lo) * 0.1).max(0.5);
    (lo - pad, hi + pad)
}

/// XML-escaped text for the SVG we write ourselves (the legend).
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// How one legend entry is marked.
enum Swatch {
    Box(RGBColor),
    Dot(RGBColor),
    Hatched,
    ErrorBar,
    Line { dashed: bool, color: RGBColor },
    None,
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

const LEGEND_ROW: u32 = 24;

/// The legend's entries flowed into rows of `width` px: (entry, x, row).
fn legend_layout(entries: &[(Swatch, String)], width: u32) -> Vec<(usize, u32, u32)> {
    let mut out = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (12u32, 0u32);
    for (i, (_, label)) in entries.iter().enumerate() {
        // A generous estimate of the width of sans-serif text (0.6 em per character).
        let w = 28 + (label.chars().count() as f64 * MIN_TEXT_PX * 0.6) as u32 + 20;
        if x + w > width && x > 12 {
            x = 12;
            row += 1;
        }
        out.push((i, x, row));
        x += w;
    }
    out
}

fn legend_rows(entries: &[(Swatch, String)], width: u32) -> u32 {
    legend_layout(entries, width)
        .last()
        .map_or(0, |&(_, _, r)| r + 1)
}

/// The legend as a `<g class="legend">` in the band from `top` (below the plot).
fn legend_svg(entries: &[(Swatch, String)], width: u32, top: u32) -> String {
    let mut out = String::from("<g class=\"legend\">\n");
    for (i, x, row) in legend_layout(entries, width) {
        let (swatch, label) = &entries[i];
        let y = top + row * LEGEND_ROW + 6;
        let mark = match swatch {
            Swatch::Box(c) => format!(
                "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"{}\"/>",
                hex(*c)
            ),
            Swatch::Dot(c) => format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>",
                x + 7,
                y + 7,
                hex(*c)
            ),
            Swatch::Hatched => format!(
                "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"#FFFFFF\" \
                 stroke=\"#666666\"/><line x1=\"{x}\" y1=\"{}\" x2=\"{}\" y2=\"{y}\" \
                 stroke=\"#666666\"/><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" \
                 stroke=\"#666666\"/>",
                y + 14,
                x + 14,
                x + 7,
                y + 14,
                x + 14,
                y + 7
            ),
            Swatch::ErrorBar => format!(
                "<line x1=\"{m}\" y1=\"{y}\" x2=\"{m}\" y2=\"{b}\" stroke=\"#000000\"/>\
                 <line x1=\"{l}\" y1=\"{y}\" x2=\"{r}\" y2=\"{y}\" stroke=\"#000000\"/>\
                 <line x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#000000\"/>",
                m = x + 7,
                l = x + 3,
                r = x + 11,
                b = y + 14
            ),
            Swatch::Line { dashed, color } => format!(
                "<line x1=\"{x}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" \
                 stroke-width=\"2\"{}/>",
                y + 7,
                x + 20,
                y + 7,
                hex(*color),
                if *dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                }
            ),
            Swatch::None => String::new(),
        };
        out.push_str(&mark);
        out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-family=\"sans-serif\" font-size=\"{MIN_TEXT_PX}\" \
             fill=\"#000000\">{}</text>\n",
            x + 24,
            y + 12,
            xml(label)
        ));
    }
    out.push_str("</g>\n");
    out
}

/// plotters' SVG with our legend added before the end.
fn with_legend(svg: &str, legend: &str) -> String {
    let svg = attributes_only(svg);
    match svg.rfind("</svg>") {
        Some(i) => format!("{}{legend}{}", &svg[..i], &svg[i..]),
        None => svg,
    }
}

/// One bar of the grouped chart.
struct Bar {
    delta: f64,
    ci: Option<(f64, f64)>,
    significant: bool,
}

fn bar_of(x: &CategoryResult) -> Option<Bar> {
    Some(Bar {
        delta: x.delta?,
        ci: ci95(x.delta, x.t),
        significant: x.significant,
    })
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One bar at `x0` of `width`: the bar, its CI and `*`, or the hatched "n/a" box.
fn draw_bar(
    chart: &mut Chart<'_, '_>,
    bar: Option<&Bar>,
    x0: f64,
    width: f64,
    col: RGBColor,
    (lo, hi): (f64, f64),
) -> Result<(), ChartError> {
    let mid = x0 + width / 2.0;
    let missing_half = (hi - lo) * 0.04;
    match bar {
        Some(b) => {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x0 + width, b.delta)],
                    col.filled(),
                )))
                .map_err(chart_err)?;
            if let Some((l, h)) = b.ci {
                let cap = width * 0.3;
                chart
                    .draw_series([
                        PathElement::new(vec![(mid, l), (mid, h)], BLACK),
                        PathElement::new(vec![(mid - cap, l), (mid + cap, l)], BLACK),
                        PathElement::new(vec![(mid - cap, h), (mid + cap, h)], BLACK),
                    ])
                    .map_err(chart_err)?;
            }
            if b.significant {
                let (l, h) = b.ci.unwrap_or((b.delta, b.delta));
                // Clear of the error bar's cap (a `*` sits high in its box).
                let gap = (hi - lo) * 0.012;
                let (y, v) = if b.delta >= 0.0 {
                    (h + gap, VPos::Bottom)
                } else {
                    (l - 3.0 * gap, VPos::Top)
                };
                chart
                    .draw_series(std::iter::once(Text::new(
                        "*",
                        (mid, y),
                        font(16.0).color(&BLACK).pos(Pos::new(HPos::Center, v)),
                    )))
                    .map_err(chart_err)?;
            }
        }
        None => {
            let (b0, b1) = (-missing_half, missing_half);
            let mut hatch = vec![
                Rectangle::new(
                    [(x0, b0), (x0 + width, b1)],
                    RGBColor(102, 102, 102).stroke_width(1),
                )
                .into_dyn(),
            ];
            for s in 1..4 {
                let f = s as f64 / 4.0;
                hatch.push(
                    PathElement::new(
                        vec![(x0, b0 + (b1 - b0) * f), (x0 + width * f, b0)],
                        RGBColor(102, 102, 102),
                    )
                    .into_dyn(),
                );
                hatch.push(
                    PathElement::new(
                        vec![(x0 + width * f, b1), (x0 + width, b0 + (b1 - b0) * f)],
                        RGBColor(102, 102, 102),
                    )
                    .into_dyn(),
                );
            }
            hatch.push(
                Text::new(
                    "n/a",
                    (mid, b1),
                    font(MIN_TEXT_PX)
                        .transform(FontTransform::Rotate270)
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )
                .into_dyn(),
            );
            chart.draw_series(hatch).map_err(chart_err)?;
        }
    }
    Ok(())
}

const BARS_WIDTH: u32 = 960;
const BARS_PLOT_HEIGHT: u32 = 440;

/// Grouped bars: Δ of `category` per emotion, one bar per cohort, with 95 % CI error bars, `*`
/// for a significant change and a hatched "n/a" box where a cohort has no data.
pub fn delta_bars(report: &Report, category: usize) -> Result<String, ChartError> {
    let emotions = emotions(report);
    let name = category_names(report)
        .get(category)
        .cloned()
        .unwrap_or_default();
    let bars: Vec<Vec<Option<Bar>>> = report
        .cohorts
        .iter()
        .map(|c| {
            emotions
                .iter()
                .map(|e| emotion_group(c, e).and_then(|g| bar_of(g.categories.get(category)?)))
                .collect()
        })
        .collect();
    let ends: Vec<f64> = bars
        .iter()
        .flatten()
        .flatten()
        .flat_map(|b| {
            let (l, h) = b.ci.unwrap_or((b.delta, b.delta));
            [b.delta, l, h]
        })
        .collect();
    let (lo, hi) = padded(
        ends.iter().copied().fold(0.0, f64::min),
        ends.iter().copied().fold(0.0, f64::max),
    );
    let mut entries: Vec<(Swatch, String)> = report
        .cohorts
        .iter()
        .enumerate()
        .map(|(i, c)| (Swatch::Box(color(i)), c.name.clone()))
        .collect();
    entries.push((Swatch::ErrorBar, "95 % CI of Δ".to_owned()));
    entries.push((
        Swatch::None,
        format!("* significant at α = {}", report.alpha),
    ));
    entries.push((Swatch::Hatched, "n/a: no data".to_owned()));
    let band = 12 + legend_rows(&entries, BARS_WIDTH) * LEGEND_ROW;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (BARS_WIDTH, BARS_PLOT_HEIGHT + band))
            .into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let (plot, _) = root.split_vertically(BARS_PLOT_HEIGHT);
        let n = emotions.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!("Δ {name} per emotion (evoked − default)"),
                font(17.0),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..n, lo..hi)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(format!("Δ {name}"))
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(font(MIN_TEXT_PX))
            .axis_desc_style(font(14.0))
            .draw()
            .map_err(chart_err)?;
        let k = bars.len().max(1) as f64;
        let width = 0.8 / k;
        for (ci, row) in bars.iter().enumerate() {
            let col = color(ci);
            for (ei, bar) in row.iter().enumerate() {
                let x0 = ei as f64 + 0.1 + ci as f64 * width;
                draw_bar(&mut chart, bar.as_ref(), x0, width, col, (lo, hi))?;
            }
        }
        chart
            .draw_series(emotions.iter().enumerate().map(|(i, e)| {
                Text::new(
                    e.clone(),
                    (i as f64 + 0.5, lo),
                    font(MIN_TEXT_PX)
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                )
            }))
            .map_err(chart_err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (n, 0.0)], BLACK))
            .map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(with_legend(
        &svg,
        &legend_svg(&entries, BARS_WIDTH, BARS_PLOT_HEIGHT),
    ))
}

/// The Δ pairs (human, model) of each model over the factor cells, with the category index.
type Points = Vec<(usize, f64, f64)>;

fn scatter_points(humans: &Cohort, model: &Cohort) -> Points {
    humans
        .groups
        .iter()
        .zip(&model.groups)
        .filter(|(h, _)| h.level == Level::Factor)
        .flat_map(|(h, g)| {
            h.categories
                .iter()
                .zip(&g.categories)
                .enumerate()
                .filter_map(|(c, (x, y))| Some((c, x.delta?, y.delta?)))
        })
        .collect()
}

const SCATTER_SIZE: u32 = 640;

/// Scatter of each model's Δ against the humans' Δ across factors (all categories; circles
/// for the first category, triangles for the others), with the line y = x and each model's
/// least-squares line (dashed).
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
    let points: Vec<Points> = models.iter().map(|m| scatter_points(humans, m)).collect();
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
    let fits: Vec<Option<(f64, f64)>> = points
        .iter()
        .map(|p| least_squares(&p.iter().map(|&(_, x, y)| (x, y)).collect::<Vec<_>>()))
        .collect();
    let mut entries: Vec<(Swatch, String)> = models
        .iter()
        .zip(&fits)
        .enumerate()
        .map(|(i, (m, fit))| {
            let label = match fit {
                Some((a, b)) => format!("{} (fit y = {a:.1} + {b:.2}·x)", m.name),
                None => format!("{} (no fit)", m.name),
            };
            (Swatch::Dot(color(i + 1)), label)
        })
        .collect();
    entries.push((
        Swatch::None,
        format!(
            "○ {}, △ {}",
            cats.first().cloned().unwrap_or_default(),
            cats.get(1..).map(|c| c.join(", ")).unwrap_or_default()
        ),
    ));
    entries.push((
        Swatch::Line {
            dashed: false,
            color: RGBColor(140, 140, 140),
        },
        "y = x".to_owned(),
    ));
    entries.push((
        Swatch::Line {
            dashed: true,
            color: BLACK,
        },
        "least-squares fit".to_owned(),
    ));
    let band = 12 + legend_rows(&entries, SCATTER_SIZE) * LEGEND_ROW;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SCATTER_SIZE, SCATTER_SIZE + band))
            .into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let (plot, _) = root.split_vertically(SCATTER_SIZE);
        let mut chart = ChartBuilder::on(&plot)
            .caption("Model Δ vs human Δ per factor", font(17.0))
            .margin(12)
            .x_label_area_size(56)
            .y_label_area_size(72)
            .build_cartesian_2d(lo..hi, lo..hi)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("human Δ")
            .y_desc("model Δ")
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(font(MIN_TEXT_PX))
            .axis_desc_style(font(14.0))
            .draw()
            .map_err(chart_err)?;
        chart
            .draw_series(LineSeries::new(
                [(lo, lo), (hi, hi)],
                RGBColor(140, 140, 140).stroke_width(2),
            ))
            .map_err(chart_err)?;
        for (mi, (pts, fit)) in points.iter().zip(&fits).enumerate() {
            let col = color(mi + 1);
            chart
                .draw_series(pts.iter().map(|&(c, x, y)| -> DynElement<_, _> {
                    if c == 0 {
                        Circle::new((x, y), 4, col.filled()).into_dyn()
                    } else {
                        TriangleMarker::new((x, y), 5, col.filled()).into_dyn()
                    }
                }))
                .map_err(chart_err)?;
            if let Some(ends) = fit.and_then(|f| clip_line(f, lo, hi)) {
                chart
                    .draw_series(DashedLineSeries::new(ends, 6, 4, col.stroke_width(2)))
                    .map_err(chart_err)?;
            }
        }
        root.present().map_err(chart_err)?;
    }
    Ok(Some(with_legend(
        &svg,
        &legend_svg(&entries, SCATTER_SIZE, SCATTER_SIZE),
    )))
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

/// One chart with its numbered caption and the name of its download (`bars-0.svg`, …).
pub struct Figure {
    pub caption: String,
    pub name: String,
    pub svg: String,
    /// Where the download link points: a `data:` URI of the SVG (the standalone page, see
    /// [`data_uri`]) or the admin page's SVG route.
    pub href: String,
}

/// The SVG as a `data:` URI (percent-encoded; a standalone page has no server to ask).
pub fn data_uri(svg: &str) -> String {
    let mut out = String::from("data:image/svg+xml;charset=utf-8,");
    for b in svg.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The charts of a report, as SVG markup.
pub struct Charts {
    pub figures: Vec<Figure>,
}

/// The name of every chart a report has, in order (the download route takes one of them).
pub fn names(report: &Report) -> Vec<String> {
    let n = category_names(report).len();
    let mut out: Vec<String> = (0..n).map(|c| format!("bars-{c}")).collect();
    if report.humans().is_some() && report.cohorts.iter().any(|c| c.kind == Kind::Model) {
        out.push("scatter".to_owned());
    }
    out
}

/// One chart by its name (see [`names`]); `None` for a name the report has no chart for.
pub fn chart(report: &Report, name: &str) -> Result<Option<String>, ChartError> {
    if name == "scatter" {
        return delta_scatter(report);
    }
    match name
        .strip_prefix("bars-")
        .and_then(|i| i.parse::<usize>().ok())
    {
        Some(c) if c < category_names(report).len() => delta_bars(report, c).map(Some),
        _ => Ok(None),
    }
}

/// Every chart with its caption; each `href` is its `data:` URI until the caller points it at a
/// route.
pub fn charts(report: &Report) -> Result<Charts, ChartError> {
    let cats = category_names(report);
    let sig = match report.correction {
        Some(_) => "adjusted p ≤ α",
        None => "p ≤ α",
    };
    let mut figures = Vec::with_capacity(cats.len() + 1);
    for (c, name) in cats.iter().enumerate() {
        figures.push(Figure {
            caption: format!(
                "Figure {}. Δ {name} (evoked − default) per emotion and cohort; error bars: 95 % \
                 CI (Δ ± 1.96 SE); * significant ({sig}, α = {}); hatched n/a: no data.",
                c + 1,
                report.alpha
            ),
            name: format!("bars-{c}"),
            svg: delta_bars(report, c)?,
            href: String::new(),
        });
    }
    if let Some(svg) = delta_scatter(report)? {
        figures.push(Figure {
            caption: format!(
                "Figure {}. Each model's Δ against the humans' Δ per factor and category, with \
                 the identity line and each model's least-squares line.",
                figures.len() + 1
            ),
            name: "scatter".to_owned(),
            svg,
            href: String::new(),
        });
    }
    for f in &mut figures {
        f.href = data_uri(&f.svg);
    }
    Ok(Charts { figures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci95_is_delta_plus_minus_1_96_standard_errors_recovered_from_t() {
        // Welch: a = [1, 2, 3, 4], b = [3, 5, 6, 8]: Δ = 3, SE = sqrt(var_a/4 + var_b/4)
        // = sqrt(1.6667/4 + 4.3333/4) = sqrt(1.5) = 1.224744871391589 (numpy), t = 3 / SE.
        let se = 1.5f64.sqrt();
        let (l, h) = ci95(Some(3.0), Some(3.0 / se)).unwrap();
        assert!((l - (3.0 - 1.96 * se)).abs() < 1e-12);
        assert!((h - (3.0 + 1.96 * se)).abs() < 1e-12);
        // A negative change: the interval is still centred on Δ.
        let (l, h) = ci95(Some(-2.0), Some(-4.0)).unwrap();
        assert!((l + 2.98).abs() < 1e-12 && (h + 1.02).abs() < 1e-12);
        assert_eq!(ci95(Some(0.0), Some(0.0)), None);
        assert_eq!(ci95(None, Some(1.0)), None);
        assert_eq!(ci95(Some(1.0), None), None);
    }

    #[test]
    fn least_squares_matches_numpy_polyfit() {
        // numpy.polyfit([1, 2, 3, 4, 5], [2, 4, 5, 4, 5], 1) = [0.6, 2.2].
        let (a, b) =
            least_squares(&[(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 4.0), (5.0, 5.0)]).unwrap();
        assert!((b - 0.6).abs() < 1e-12 && (a - 2.2).abs() < 1e-12);
        assert_eq!(least_squares(&[(1.0, 2.0)]), None);
        assert_eq!(least_squares(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn a_line_is_clipped_to_the_plot_square() {
        // y = 2x in [-1, 1]²: from (-0.5, -1) to (0.5, 1).
        assert_eq!(
            clip_line((0.0, 2.0), -1.0, 1.0),
            Some([(-0.5, -1.0), (0.5, 1.0)])
        );
        // Entirely above the square.
        assert_eq!(clip_line((5.0, 0.0), -1.0, 1.0), None);
    }

    #[test]
    fn legend_text_is_escaped_and_flows_into_rows() {
        let entries: Vec<(Swatch, String)> = (0..12)
            .map(|i| (Swatch::Box(color(i)), format!("<model {i}> & co")))
            .collect();
        let svg = legend_svg(&entries, 640, 100);
        assert!(svg.contains("&lt;model 3&gt; &amp; co"));
        assert!(!svg.contains("<model"));
        assert!(legend_rows(&entries, 640) > 1);
    }
}
