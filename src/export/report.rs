//! The alignment report as files: Markdown in the layout of the paper's Table 2, tidy CSV, JSON,
//! and a self-contained HTML page with SVG charts (also embedded in the admin page).

use crate::domain::report::{Cohort, Kind, Level, Report, signed};
use crate::export::Cells;
use crate::export::charts::{Charts, charts};
use crate::export::picks::{category_names, emotion_group, emotions, overall};
use askama::Template;

/// Output formats of `emotionbench report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
    Csv,
    Json,
    /// The alignment block alone as a long CSV (`export::alignment::csv`).
    AlignmentCsv,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(Format::Html),
            "md" | "markdown" => Ok(Format::Md),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "alignment-csv" => Ok(Format::AlignmentCsv),
            _ => Err(format!(
                "unknown format {s:?}: expected html, md, csv, json or alignment-csv"
            )),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Chart(#[from] crate::export::charts::ChartError),
    #[error("template: {0}")]
    Template(#[from] askama::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("csv: {0}")]
    Csv(#[from] csv::Error),
    #[error("csv: {0}")]
    CsvInto(String),
}

/// Renders the report in `format`; `cells` says how the CSV's text cells are written
/// (formula-neutralised by default, see `export::cells`; the other formats ignore it).
pub fn render(report: &Report, format: Format, cells: Cells) -> Result<String, RenderError> {
    match format {
        Format::Md => Ok(markdown(report)),
        Format::Csv => csv_text(report, cells),
        Format::Json => Ok(serde_json::to_string_pretty(report)? + "\n"),
        Format::Html => html(report),
        Format::AlignmentCsv => Ok(crate::export::alignment::csv(report, cells)?),
    }
}

/// The first letters of a category name: "Positive Affect" → "P" as in the paper (then "PA"
/// style initials when two categories would share a letter).
pub fn short_names(categories: &[String]) -> Vec<String> {
    let first: Vec<String> = categories
        .iter()
        .map(|c| c.chars().next().map(String::from).unwrap_or_default())
        .collect();
    let unique = first.iter().collect::<std::collections::HashSet<_>>().len() == first.len();
    if unique {
        return first;
    }
    categories
        .iter()
        .map(|c| {
            c.split_whitespace()
                .filter_map(|w| w.chars().next())
                .collect()
        })
        .collect()
}

// The table types live in export::table, which export::psychometrics also builds on.
pub use super::table::{Numbered, TableRow};

/// Header and rows of the Table-2 layout: Default, every emotion, Overall; per cohort one
/// column per category.
pub fn table2(report: &Report) -> (Vec<String>, Vec<TableRow>) {
    let cats = category_names(report);
    let short = short_names(&cats);
    let mut header = vec!["Emotions".to_owned()];
    for c in &report.cohorts {
        for s in &short {
            header.push(format!("{} {s}", c.name));
        }
    }
    let row = |label: &str, pick: &dyn Fn(&Cohort) -> Vec<String>| TableRow {
        label: label.to_owned(),
        cells: report.cohorts.iter().flat_map(pick).collect(),
    };
    let blank = |n: usize| vec!["n/a".to_owned(); n];
    let n = cats.len();
    let mut rows = vec![row("Default", &|c| match overall(c) {
        Some(g) => g.categories.iter().map(|x| x.default_cell()).collect(),
        None => blank(n),
    })];
    for e in emotions(report) {
        rows.push(row(&e, &|c| match emotion_group(c, &e) {
            Some(g) => g.categories.iter().map(|x| x.cell()).collect(),
            None => blank(n),
        }));
    }
    rows.push(row("Overall", &|c| match overall(c) {
        Some(g) => g.categories.iter().map(|x| x.cell()).collect(),
        None => blank(n),
    }));
    (header, rows)
}

fn p_text(p: Option<f64>) -> String {
    p.map_or_else(
        || "n/a".to_owned(),
        |p| {
            if p < 0.001 {
                "< 0.001".to_owned()
            } else {
                format!("{p:.3}")
            }
        },
    )
}

fn fixed(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
}

fn mean_sd(mean: Option<f64>, sd: Option<f64>) -> String {
    match (mean, sd) {
        (Some(m), Some(s)) => format!("{m:.1} ± {s:.1}"),
        (Some(m), None) => format!("{m:.1}"),
        _ => "n/a".to_owned(),
    }
}

/// The factor table of every cohort (the paper's appendix, with the statistics): one table per
/// cohort, a row per factor × category with n, mean ± SD of both measures, Δ, the test, p (and
/// the adjusted p when a correction is on) and the effect size. Numbered from `first`.
pub fn factor_tables(report: &Report, first: usize) -> Vec<Numbered> {
    let corrected = report.correction.is_some();
    let mut header: Vec<String> = [
        "Factor",
        "Emotion",
        "Category",
        "n default",
        "n evoked",
        "Default mean ± SD",
        "Evoked mean ± SD",
        "Δ",
        "t",
        "df",
        "p",
    ]
    .map(str::to_owned)
    .to_vec();
    if corrected {
        header.push("p adjusted".to_owned());
    }
    header.extend(["Effect size".to_owned(), "Change".to_owned()]);
    report
        .cohorts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (test, effect) = match c.kind {
                Kind::Humans => ("paired t-test", "d_z"),
                Kind::Model => ("two-sample t-test (default vs evoked trials)", "Hedges' g"),
            };
            let rows = c
                .groups
                .iter()
                .filter(|g| g.level == Level::Factor)
                .flat_map(|g| {
                    g.categories.iter().map(move |x| {
                        let mut cells = vec![
                            g.emotion.clone().unwrap_or_default(),
                            x.name.clone(),
                            x.n_default.to_string(),
                            x.n_evoked.to_string(),
                            mean_sd(x.default_mean, x.default_sd),
                            mean_sd(x.evoked_mean, x.evoked_sd),
                            x.delta.map_or_else(|| "n/a".to_owned(), signed),
                            fixed(x.t, 2),
                            fixed(x.df, 1),
                            p_text(x.p),
                        ];
                        if corrected {
                            cells.push(p_text(x.p_adjusted));
                        }
                        cells.push(fixed(x.effect_size, 2));
                        cells.push(x.cell());
                        TableRow {
                            label: g.factor.clone().unwrap_or_default(),
                            cells,
                        }
                    })
                })
                .collect();
            Numbered {
                caption: format!(
                    "Table {}. Factor table of {}: per factor and category, {test}; effect size \
                     {effect}; α = {}{}.",
                    first + i,
                    c.name,
                    report.alpha,
                    report
                        .correction
                        .map(|k| format!(", p adjusted ({})", serde_plain(&k)))
                        .unwrap_or_default()
                ),
                header: header.clone(),
                rows,
            }
        })
        .collect()
}

/// Every table of the report with its caption: Table 1 the paper's Table-2 layout, then a
/// factor table per cohort, then the prompt-variant comparison (with its title).
pub struct Tables {
    pub main: Numbered,
    pub factors: Vec<Numbered>,
    /// Reliability, item position and test–retest (`export::psychometrics`), numbered last.
    pub psychometrics: crate::export::psychometrics::Block,
    pub comparison: Option<(String, Numbered)>,
    /// The valence control (#18), numbered after the psychometrics; `None` without variants.
    pub valence: Option<crate::export::valence::Block>,
}

pub fn tables(report: &Report) -> Tables {
    let (header, rows) = table2(report);
    let main = Numbered {
        caption: "Table 1. Change per emotion and category (Δ = evoked − default; ↑/↓ a \
                  significant change, − not significant; Default row: mean ± SD)."
            .to_owned(),
        header,
        rows,
    };
    // Numbered in the order they appear: the comparison (when there is one) before the factor
    // tables.
    let comparison = comparison_table(report).map(|(title, header, rows)| {
        (
            title.clone(),
            Numbered {
                caption: format!(
                    "Table 2. {title}: each Δ, the difference of the two and its \
                     Welch–Satterthwaite test."
                ),
                header,
                rows,
            },
        )
    });
    let factors = factor_tables(report, 2 + usize::from(comparison.is_some()));
    let psychometrics = crate::export::psychometrics::block(
        report,
        2 + usize::from(comparison.is_some()) + factors.len(),
    );
    let valence = crate::export::valence::block(
        report,
        2 + usize::from(comparison.is_some()) + factors.len() + psychometrics.tables.len(),
    );
    Tables {
        main,
        factors,
        comparison,
        psychometrics,
        valence,
    }
}

/// Markdown: the Table-2 layout, then the alignment summary and the failed trials. Every text
/// that comes from data (model and run names, the study's instrument, emotions, factors,
/// categories, and the summaries that quote them) goes through [`md`]: a model named
/// `<script>` or `a|b` must neither run in a Markdown viewer nor break the table.
pub fn markdown(report: &Report) -> String {
    let tables = tables(report);
    let mut out = format!(
        "# EmotionBench report: {} ({})\n\nmode {}, unit {}, α = {}{}. Cells: ↑/↓ significant \
         change (Δ = evoked − default), − not significant; Default row: mean ± SD.\n\n",
        md(&report.study),
        md(&report.instrument),
        serde_plain(&report.mode),
        serde_plain(&report.unit),
        report.alpha,
        report
            .correction
            .map(|c| format!(", {} correction over the factor table", serde_plain(&c)))
            .unwrap_or_default(),
    );
    out.push_str(&format!(
        "Scoring: {}\n\nHumans: {}.\n\n",
        md(&report.scoring),
        md(&report.humans_from)
    ));
    let methods = methods(report);
    if !methods.is_empty() {
        out.push_str("## Methods and provenance\n\n");
        for m in &methods {
            out.push_str(&format!("- {}\n", md(m)));
        }
        out.push('\n');
    }
    markdown_numbered(&mut out, &tables.main);
    let n: Vec<String> = report
        .cohorts
        .iter()
        .map(|c| match c.kind {
            Kind::Humans => format!("{}: {} participants", md(&c.name), c.observations),
            Kind::Model => format!(
                "{}: {} trials ({} failed, excluded)",
                md(&c.name),
                c.observations,
                c.failed_trials
            ),
        })
        .collect();
    out.push_str(&format!("\nN: {}.\n", n.join("; ")));
    if !report.alignment.is_empty() {
        out.push_str("\n## Alignment with the humans\n\n");
        for a in &report.alignment {
            out.push_str(&format!("- {}\n", md(&a.summary)));
        }
        markdown_alignment(&mut out, report);
    }
    if let Some((title, t)) = &tables.comparison {
        out.push_str(&format!("\n## {}\n\n", md(title)));
        markdown_numbered(&mut out, t);
    }
    if let Some(note) = crate::export::groups::note(report) {
        out.push_str(&format!("\n## By demographic group\n\n{}\n", md(&note)));
        for t in crate::export::groups::tables(report) {
            out.push('\n');
            markdown_numbered(&mut out, &t);
        }
    }
    if let Some(note) = crate::export::by_language::note(report) {
        out.push_str(&format!("\n## By language\n\n{}\n", md(&note)));
        for t in crate::export::by_language::tables(report) {
            out.push('\n');
            markdown_numbered(&mut out, &t);
        }
    }
    out.push_str("\n## Per factor\n");
    for t in &tables.factors {
        out.push('\n');
        markdown_numbered(&mut out, t);
    }
    markdown_psychometrics(&mut out, &tables.psychometrics);
    if let Some(v) = &tables.valence {
        markdown_valence(&mut out, v);
    }
    out
}

/// The valence section: the pairs, the table, one sentence per row, the caveat.
fn markdown_valence(out: &mut String, v: &crate::export::valence::Block) {
    out.push_str("\n## Valence control\n\nPairs (original → variant):\n\n");
    for p in &v.pairs {
        out.push_str(&format!("- {}\n", md(p)));
    }
    out.push('\n');
    markdown_numbered(out, &v.table);
    out.push('\n');
    for s in &v.verdicts {
        out.push_str(&format!("- {}\n", md(s)));
    }
    out.push_str(&format!("\n{}\n", md(&v.caveat)));
}

/// The psychometrics block: its tables, then what could not be computed and why.
fn markdown_psychometrics(out: &mut String, block: &crate::export::psychometrics::Block) {
    out.push_str("\n## Psychometrics\n");
    for t in &block.tables {
        out.push('\n');
        markdown_numbered(out, t);
    }
    if !block.notes.is_empty() {
        out.push('\n');
    }
    for n in &block.notes {
        out.push_str(&format!("- {}\n", md(n)));
    }
}

/// The methods and provenance block as lines (empty for a report built without the store).
pub fn methods(report: &Report) -> Vec<String> {
    report
        .provenance
        .as_ref()
        .map(|p| crate::domain::provenance::lines(p, &report.scoring))
        .unwrap_or_default()
}

/// A caption line, then the table.
/// The alignment block (`export::alignment`): how it was computed, its warnings, its tables.
fn markdown_alignment(out: &mut String, report: &Report) {
    for n in crate::export::alignment::notes(report) {
        out.push_str(&format!("\n{}\n", md(&n)));
    }
    for t in crate::export::alignment::tables(report) {
        let rows: Vec<TableRow> = t
            .rows
            .into_iter()
            .map(|r| TableRow {
                label: r.label,
                cells: r.cells,
            })
            .collect();
        out.push_str(&format!("\n{}\n\n", md(&t.caption)));
        markdown_table(out, &t.header, &rows);
    }
}

fn markdown_numbered(out: &mut String, t: &Numbered) {
    out.push_str(&format!("{}\n\n", md(&t.caption)));
    markdown_table(out, &t.header, &t.rows);
}

/// Every cell is escaped: the computed ones (`↓ (-5.1)`, `< 0.001`) read the same after it.
fn markdown_table(out: &mut String, header: &[String], rows: &[TableRow]) {
    let line = |cells: &mut dyn Iterator<Item = &String>| {
        cells.map(|c| md(c)).collect::<Vec<_>>().join(" | ")
    };
    out.push_str(&format!("| {} |\n", line(&mut header.iter())));
    out.push_str(&format!(
        "|{}\n",
        header.iter().map(|_| " :---: |").collect::<String>()
    ));
    for r in rows {
        out.push_str(&format!(
            "| {} |\n",
            line(&mut std::iter::once(&r.label).chain(&r.cells))
        ));
    }
}

/// Text as inert Markdown: HTML's `<`, `>` and `&` become entities (no tag or entity can be
/// written); the punctuation that makes links, code, emphasis, headings or table cells
/// (backslash, backtick, `*`, `_`, `[`, `]`, `|`, `~`, `#`) is backslash-escaped; line breaks
/// become spaces (a newline would end a table row). CommonMark and GitHub render the result as
/// the original text.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The prompt-variant comparison as a table: title, header, one row per group × category.
pub fn comparison_table(report: &Report) -> Option<(String, Vec<String>, Vec<TableRow>)> {
    let c = report.comparison.as_ref()?;
    let title = format!("Prompt variants: {} vs {}", c.a, c.b);
    let header = [
        "Emotions",
        "Category",
        "Δ a",
        "Δ b",
        "Δb − Δa",
        "t",
        "df",
        "p",
        "",
    ]
    .map(str::to_owned)
    .to_vec();
    let fixed = |x: Option<f64>, digits: usize| {
        x.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
    };
    let rows = c
        .rows
        .iter()
        .map(|r| TableRow {
            label: r.emotion.clone().unwrap_or_else(|| "Overall".to_owned()),
            cells: vec![
                r.category.clone(),
                r.delta_a.map_or_else(|| "n/a".to_owned(), signed),
                r.delta_b.map_or_else(|| "n/a".to_owned(), signed),
                r.difference.map_or_else(|| "n/a".to_owned(), signed),
                fixed(r.t, 2),
                fixed(r.df, 1),
                r.p.map_or_else(
                    || "n/a".to_owned(),
                    |p| {
                        if p < 0.001 {
                            "< 0.001".to_owned()
                        } else {
                            format!("{p:.3}")
                        }
                    },
                ),
                if r.significant { "significant" } else { "−" }.to_owned(),
            ],
        })
        .collect();
    Some((title, header, rows))
}

/// A serde enum as its plain string.
fn serde_plain<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The CSV columns: one row per cohort × group × category.
pub const CSV_COLUMNS: [&str; 22] = [
    "study",
    "instrument",
    "mode",
    "unit",
    "alpha",
    "cohort",
    "kind",
    "level",
    "emotion",
    "factor",
    "category",
    "n_default",
    "n_evoked",
    "default_mean",
    "default_sd",
    "evoked_mean",
    "evoked_sd",
    "delta",
    "t",
    "df",
    "p",
    "p_adjusted",
];

const CSV_TAIL: [&str; 5] = ["significant", "direction", "effect_size", "test", "cell"];

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:?}")).unwrap_or_default()
}

/// The CSV's text columns (names of cohorts, emotions, factors, categories, and labels): the
/// others are numbers and booleans, which are never neutralised.
const CSV_TEXT: [&str; 14] = [
    "study",
    "instrument",
    "mode",
    "unit",
    "cohort",
    "kind",
    "level",
    "emotion",
    "factor",
    "category",
    "direction",
    "test",
    "cell",
    "language",
];

/// The last column: the language of a row of the split by language (#20, level `overall`),
/// empty on the report's own rows.
const CSV_LANGUAGE: &str = "language";

/// The cells of one cohort's category in one group, up to `cell`.
fn category_record(
    report: &Report,
    (cohort, kind): (&str, &Kind),
    (level, emotion, factor): (&Level, Option<&str>, Option<&str>),
    x: &crate::domain::change::CategoryResult,
) -> [String; 27] {
    [
        report.study.clone(),
        report.instrument.clone(),
        serde_plain(&report.mode),
        serde_plain(&report.unit),
        report.alpha.to_string(),
        cohort.to_owned(),
        serde_plain(kind),
        serde_plain(level),
        emotion.unwrap_or_default().to_owned(),
        factor.unwrap_or_default().to_owned(),
        x.name.clone(),
        x.n_default.to_string(),
        x.n_evoked.to_string(),
        num(x.default_mean),
        num(x.default_sd),
        num(x.evoked_mean),
        num(x.evoked_sd),
        num(x.delta),
        num(x.t),
        num(x.df),
        num(x.p),
        num(x.p_adjusted),
        x.significant.to_string(),
        serde_plain(&x.direction),
        num(x.effect_size),
        x.test.to_owned(),
        x.cell(),
    ]
}

fn csv_text(report: &Report, cells: Cells) -> Result<String, RenderError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = CSV_COLUMNS.to_vec();
    header.extend(CSV_TAIL);
    header.extend(crate::export::psychometrics::CSV_COLUMNS);
    header.push(CSV_LANGUAGE);
    w.write_record(&header)?;
    let text: Vec<bool> = header.iter().map(|h| CSV_TEXT.contains(h)).collect();
    for c in &report.cohorts {
        for g in &c.groups {
            for x in &g.categories {
                let record = category_record(
                    report,
                    (c.name.as_str(), &c.kind),
                    (&g.level, g.emotion.as_deref(), g.factor.as_deref()),
                    x,
                );
                let psychometrics = crate::export::psychometrics::csv_cells(c, &x.name);
                crate::export::cells::write_record(
                    &mut w,
                    cells,
                    &text,
                    record
                        .iter()
                        .chain(psychometrics.iter())
                        .map(String::as_str)
                        .chain([""]),
                )?;
            }
        }
    }
    // The split by language: each language's overall rows, without the psychometrics.
    for l in report.by_language.iter().flat_map(|s| &s.languages) {
        let sides = l
            .humans
            .iter()
            .map(|s| (s, Kind::Humans))
            .chain(l.models.iter().map(|s| (s, Kind::Model)));
        for (side, kind) in sides {
            for x in &side.categories {
                let record = category_record(
                    report,
                    (side.cohort.as_str(), &kind),
                    (&Level::Overall, None, None),
                    x,
                );
                let empty = <[String; 5]>::default();
                crate::export::cells::write_record(
                    &mut w,
                    cells,
                    &text,
                    record
                        .iter()
                        .chain(empty.iter())
                        .map(String::as_str)
                        .chain([l.language.as_str()]),
                )?;
            }
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| RenderError::CsvInto(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| RenderError::CsvInto(e.to_string()))
}

/// What the report templates show (shared by the standalone page and the admin page).
pub struct View {
    pub tables: Tables,
    /// The methods and provenance block, one line per fact.
    pub methods: Vec<String>,
    pub charts: Charts,
    pub summaries: Vec<String>,
    /// The alignment block's notes and tables (`export::alignment`).
    pub alignment_notes: Vec<String>,
    pub alignment: Vec<crate::export::alignment::Table>,
    /// Persona runs by gender and age band (`export::groups`): the note and the tables.
    pub groups_note: Option<String>,
    pub groups: Vec<Numbered>,
    /// The split by language (`export::by_language`): the note and one table per language.
    pub languages_note: Option<String>,
    pub languages: Vec<Numbered>,
    pub counts: Vec<String>,
    pub mode: String,
    pub unit: String,
    pub alpha: f64,
    pub correction: String,
    pub study: String,
    pub instrument: String,
    pub scoring: String,
    pub humans_from: String,
}

pub fn view(report: &Report) -> Result<View, RenderError> {
    Ok(View {
        tables: tables(report),
        methods: methods(report),
        charts: charts(report)?,
        summaries: report.alignment.iter().map(|a| a.summary.clone()).collect(),
        alignment_notes: crate::export::alignment::notes(report),
        alignment: crate::export::alignment::tables(report),
        groups_note: crate::export::groups::note(report),
        groups: crate::export::groups::tables(report),
        languages_note: crate::export::by_language::note(report),
        languages: crate::export::by_language::tables(report),
        counts: report
            .cohorts
            .iter()
            .map(|c| match c.kind {
                Kind::Humans => format!("{}: {} participants", c.name, c.observations),
                Kind::Model => format!(
                    "{}: {} trials, {} failed (excluded)",
                    c.name, c.observations, c.failed_trials
                ),
            })
            .collect(),
        mode: serde_plain(&report.mode),
        unit: serde_plain(&report.unit),
        alpha: report.alpha,
        correction: report
            .correction
            .map(|c| serde_plain(&c))
            .unwrap_or_else(|| "none".to_owned()),
        study: report.study.clone(),
        instrument: report.instrument.clone(),
        scoring: report.scoring.clone(),
        humans_from: report.humans_from.clone(),
    })
}

#[derive(Template)]
#[template(path = "report/standalone.html")]
struct Standalone {
    view: View,
    css: &'static str,
}

fn html(report: &Report) -> Result<String, RenderError> {
    Ok(Standalone {
        view: view(report)?,
        css: include_str!("../../assets/app.css"),
    }
    .render()?)
}
