//! The alignment block of the report (#16): each model's metrics with their bootstrap
//! intervals, beside the human ceiling and the null baselines, as tables (rendered by
//! `export::report` in Markdown and HTML with its own table writers) and as a long CSV.
//!
//! Kept apart from `export::report` so the table and chart work there and the alignment here
//! do not edit one file; `export::report` calls [`tables`], [`notes`] and [`csv`].

use crate::domain::alignment::{Baseline, BaselineKind, Metric, MetricSet, Metrics, with_ci};
use crate::domain::report::Report;
use crate::export::Cells;

/// One row: its label and cells (the field names `report/table.html` reads).
pub struct Row {
    pub label: String,
    pub cells: Vec<String>,
}

/// A numbered table of the alignment block.
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Row>,
}

fn header() -> Vec<String> {
    [
        "",
        "Direction agreement",
        "Δ correlation r",
        "Evoked MAE",
        "Default gap",
        "Wasserstein-1",
        "Jensen–Shannon",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The six metrics as `value [low, high]`, each with its digits.
fn cells(m: &Metrics) -> Vec<String> {
    vec![
        with_ci(&m.direction_agreement, 2),
        with_ci(&m.delta_correlation, 2),
        with_ci(&m.evoked_mae, 1),
        with_ci(&m.default_gap, 1),
        with_ci(&m.wasserstein, 1),
        with_ci(&m.jensen_shannon, 2),
    ]
}

fn baseline_label(b: &Baseline) -> String {
    match b.kind {
        BaselineKind::Uniform => "Uniform responder".to_owned(),
        BaselineKind::Marginal => "Population marginal".to_owned(),
        BaselineKind::Shuffled => format!(
            "Shuffled situation labels ({})",
            b.model.as_deref().unwrap_or("")
        ),
    }
}

fn row(label: String, m: &Metrics) -> Row {
    Row {
        label,
        cells: cells(m),
    }
}

/// The scopes of a metric set: overall, each category, each emotion.
fn scopes(prefix: &str, set: &MetricSet) -> Vec<Row> {
    let mut rows = vec![row(format!("{prefix}Overall"), &set.overall)];
    for s in set.categories.iter().chain(&set.emotions) {
        rows.push(row(format!("{prefix}{}", s.name), &s.metrics));
    }
    rows
}

/// Table A1: every model overall beside the ceiling and the baselines; then one table per
/// model with its categories and emotions, the ceiling's and the baselines' overall rows.
/// Empty without humans.
pub fn tables(report: &Report) -> Vec<Table> {
    if report.alignment.is_empty() {
        return Vec::new();
    }
    let ceiling = report.ceiling.as_ref();
    let mut overall: Vec<Row> = report
        .alignment
        .iter()
        .map(|a| row(a.model.clone(), &a.metrics.overall))
        .collect();
    if let Some(c) = ceiling {
        overall.push(row(
            format!("Human ceiling ({} half splits)", c.splits),
            &c.metrics.overall,
        ));
    }
    for b in &report.baselines {
        overall.push(row(baseline_label(b), &b.metrics.overall));
    }
    let mut out = vec![Table {
        caption: "Table A1. Alignment with the humans, overall: each model, the human ceiling \
                  and the null baselines (value [95 % bootstrap CI])."
            .to_owned(),
        header: header(),
        rows: overall,
    }];
    for (i, a) in report.alignment.iter().enumerate() {
        let mut rows = scopes("", &a.metrics);
        if let Some(c) = ceiling {
            rows.extend(scopes("Human ceiling: ", &c.metrics));
        }
        for b in report
            .baselines
            .iter()
            .filter(|b| b.kind != BaselineKind::Shuffled || b.model.as_ref() == Some(&a.model))
        {
            rows.push(row(baseline_label(b), &b.metrics.overall));
        }
        out.push(Table {
            caption: format!(
                "Table A{}. Alignment of {} per category and emotion, beside the human ceiling \
                 and the null baselines (value [95 % bootstrap CI]).",
                i + 2,
                a.model
            ),
            header: header(),
            rows,
        });
    }
    out
}

/// How the intervals, the ceiling and the baselines were made, and the warnings about thin or
/// missing human cells, as sentences.
pub fn notes(report: &Report) -> Vec<String> {
    if report.alignment.is_empty() {
        return Vec::new();
    }
    let m = &report.alignment_method;
    let mut out = vec![format!(
        "Bootstrap: {} resamples, seed {}: humans resampled within each factor, model trials \
         within each condition (default, each situation); 95 % percentile intervals in brackets. \
         Each factor × category cell is tested at α = {} uncorrected; direction agreement counts \
         only the cells where the humans or the other side change significantly. Human ceiling: \
         the same metrics between two random halves of the humans (split within each factor), \
         the mean over the splits with their 2.5th–97.5th percentiles; halves have half the \
         humans, so a model can exceed it. Baselines: a uniform random responder on the answer \
         scale, the population marginal (a random human's before or after scores) and each \
         model's own trials with shuffled situation labels, measured like a model.",
        m.resamples, m.seed, report.alpha
    )];
    out.extend(m.warnings.iter().cloned());
    out
}

/// The CSV's columns: one row per cohort (model, ceiling, baseline) × scope × metric.
pub const CSV_COLUMNS: [&str; 15] = [
    "study",
    "instrument",
    "mode",
    "alpha",
    "seed",
    "resamples",
    "cohort",
    "kind",
    "baseline",
    "scope_level",
    "scope",
    "metric",
    "value",
    "ci_low",
    "ci_high",
];

/// Text columns (formula-neutralised unless raw): the rest are numbers.
const CSV_TEXT: [bool; 15] = [
    true, true, true, false, false, false, true, true, true, true, true, true, false, false, false,
];

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:?}")).unwrap_or_default()
}

fn metric_list(m: &Metrics) -> [(&'static str, &Metric); 6] {
    [
        ("direction_agreement", &m.direction_agreement),
        ("delta_correlation", &m.delta_correlation),
        ("evoked_mae", &m.evoked_mae),
        ("default_gap", &m.default_gap),
        ("wasserstein", &m.wasserstein),
        ("jensen_shannon", &m.jensen_shannon),
    ]
}

/// The alignment as a long CSV (`emotionbench report --format alignment-csv`).
pub fn csv(report: &Report, cells: Cells) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    let mode = match report.mode {
        crate::domain::report::Mode::Paper => "paper",
        crate::domain::report::Mode::Default => "default",
    };
    let m = &report.alignment_method;
    let mut cohorts: Vec<(String, &str, &str, &MetricSet)> = report
        .alignment
        .iter()
        .map(|a| (a.model.clone(), "model", "", &a.metrics))
        .collect();
    if let Some(c) = &report.ceiling {
        cohorts.push(("human ceiling".to_owned(), "ceiling", "", &c.metrics));
    }
    for b in &report.baselines {
        let kind = match b.kind {
            BaselineKind::Uniform => "uniform",
            BaselineKind::Marginal => "marginal",
            BaselineKind::Shuffled => "shuffled",
        };
        cohorts.push((b.name.clone(), "baseline", kind, &b.metrics));
    }
    for (name, kind, baseline, set) in cohorts {
        let scopes = std::iter::once(("overall", "overall", &set.overall))
            .chain(
                set.categories
                    .iter()
                    .map(|s| ("category", s.name.as_str(), &s.metrics)),
            )
            .chain(
                set.emotions
                    .iter()
                    .map(|s| ("emotion", s.name.as_str(), &s.metrics)),
            );
        for (level, scope, metrics) in scopes {
            for (metric, x) in metric_list(metrics) {
                let record = [
                    report.study.clone(),
                    report.instrument.clone(),
                    mode.to_owned(),
                    report.alpha.to_string(),
                    m.seed.to_string(),
                    m.resamples.to_string(),
                    name.clone(),
                    kind.to_owned(),
                    baseline.to_owned(),
                    level.to_owned(),
                    scope.to_owned(),
                    metric.to_owned(),
                    num(x.value),
                    num(x.ci_low),
                    num(x.ci_high),
                ];
                crate::export::cells::write_record(
                    &mut w,
                    cells,
                    &CSV_TEXT,
                    record.iter().map(String::as_str),
                )?;
            }
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
