//! `report`: the alignment report of a study (read only).

use std::path::PathBuf;

use anyhow::Context;
use emotionbench::Settings;
use emotionbench::app::report::{ModelSelection, ReportRequest, parse_alpha, report};
use emotionbench::domain::report::{Correction, Mode, Options, Unit};
use emotionbench::domain::split::Side;
use emotionbench::export::Cells;
use emotionbench::export::report::{Format, render};

use super::db;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The study's slug.
    #[arg(long)]
    study: String,
    /// `all` or a comma-separated list of model names.
    #[arg(long, default_value = "all")]
    models: ModelSelection,
    /// One cohort per run instead of per model (comma-separated run ids, see `emotionbench
    /// runs`). With exactly two runs, e.g. one model under `eb-code` and under `stability`, the
    /// report also compares them: per emotion, each Δ and the difference with its test.
    #[arg(long, value_delimiter = ',', conflicts_with = "models")]
    runs: Vec<emotionbench::store::RunId>,
    /// The instrument the model trials answered (e.g. AGQ); default: the study's. Humans are
    /// included only on their own instrument.
    #[arg(long)]
    instrument: Option<String>,
    /// Only the humans on this side of the study's split (`emotionbench split`): train or test.
    #[arg(long, value_enum)]
    split: Option<Side>,
    /// `paper`: the upstream procedure (F-test, Student or Welch, ε = 1e-8 on SDs, repeats
    /// pooled); `default`: Welch without ε.
    #[arg(long, value_enum, default_value_t = Mode::Default)]
    mode: Mode,
    /// Significance level.
    #[arg(long, default_value_t = 0.01, value_parser = parse_alpha)]
    alpha: f64,
    /// Model observations: every `trial`, or the mean of each `situation`'s repeats.
    #[arg(long, value_enum, default_value_t = Unit::Trial)]
    unit: Unit,
    /// Multiple-comparison correction over each cohort's factor table: bh or holm.
    #[arg(long, value_enum)]
    correction: Option<Correction>,
    /// Seed of the alignment's bootstrap, human-ceiling splits and null responders (the same
    /// seed gives the same report).
    #[arg(long, default_value_t = emotionbench::domain::observation::DEFAULT_SEED)]
    seed: u64,
    /// Bootstrap resamples (and ceiling splits) for the alignment's 95 % intervals; 0: none.
    #[arg(long, default_value_t = emotionbench::domain::observation::DEFAULT_RESAMPLES)]
    resamples: usize,
    /// html, md, csv, json, or alignment-csv (the alignment block alone: one row per
    /// model, ceiling or baseline × scope × metric with value, ci_low, ci_high).
    #[arg(long, default_value = "md")]
    format: Format,
    /// Write here instead of standard output (created readable by its owner only).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// csv: text cells exactly as stored. By default a text cell (a model, factor or category
    /// name) beginning with =, +, -, @, a tab or a carriage return gets a leading ' so
    /// spreadsheets do not run it as a formula.
    #[arg(long)]
    raw_cells: bool,
    /// The generation time the report states (RFC 3339, e.g. 2026-12-01T12:00:00Z); default:
    /// now. Fixed, the same data give the same report byte for byte.
    #[arg(long, value_parser = parse_generated_at)]
    generated_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Reproducible output (the reproducible-builds.org convention, seconds since 1970 UTC):
    /// the default generation time, and every recorded time later than it (imports, trials,
    /// completions) is stated as it; the methods block says so. Unset: times as recorded.
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS", value_parser = parse_epoch)]
    source_date_epoch: Option<chrono::DateTime<chrono::Utc>>,
    /// Name the build by this label instead of its git commit in the methods block (with
    /// SOURCE_DATE_EPOCH, any build of this version then gives the same bytes).
    #[arg(long, env = "EMOTIONBENCH_BUILD_LABEL", value_name = "LABEL")]
    build_label: Option<String>,
}

fn parse_epoch(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    s.trim()
        .parse::<i64>()
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .ok_or_else(|| format!("{s:?} is not a time in whole seconds since 1970-01-01 UTC"))
}

fn parse_generated_at(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time ({e}), e.g. 2026-12-01T12:00:00Z"))
}

pub fn run(settings: &Settings, args: ReportArgs) -> anyhow::Result<()> {
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    let options = Options {
        mode: args.mode,
        alpha: args.alpha,
        unit: args.unit,
        correction: args.correction,
        seed: args.seed,
        resamples: args.resamples,
    };
    let request = ReportRequest {
        models: args.models.clone(),
        runs: args.runs.clone(),
        instrument: args.instrument.clone(),
        split: args.split,
        generated_at: args.generated_at,
        source_date_epoch: args.source_date_epoch,
        build_label: args.build_label.clone(),
        ..ReportRequest::new(&args.study, options)
    };
    let report = report(&mut conn, &request)?;
    let text = render(&report, args.format, Cells::raw_if(args.raw_cells))?;
    match &args.output {
        Some(path) => {
            super::write_private(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote the report to {}", path.display());
        }
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes())?;
        }
    }
    Ok(())
}
