//! `export …` (CSV files and fine-tuning JSONL) and `split` (the train/test split it reads).

use std::path::{Path, PathBuf};

use anyhow::Context;
use emotionbench::app::exports::{self, ExportKind};
use emotionbench::domain::split::Side;
use emotionbench::export::finetune::FinetuneFormat;
use emotionbench::export::{Cells, ExportStats};
use emotionbench::store::DbConnection;
use emotionbench::store::audit::Actor;
use emotionbench::store::cohorts::StatusFilter;

use emotionbench::Settings;

use super::db;

#[derive(clap::Args)]
pub struct ExportArgs {
    what: ExportKind,
    /// The study (slug).
    #[arg(long, value_name = "SLUG")]
    study: String,
    /// Which participants: completed ones (default) or everyone.
    #[arg(long, value_enum, default_value_t = StatusFilter::Completed)]
    status: StatusFilter,
    /// Include pilot participants (made through the study's pilot link; left out by default).
    #[arg(long)]
    include_pilot: bool,
    /// long, wide: only the participants who took the study in this language, one of the
    /// study's (a tag such as de; issue #20). The default language takes in those without a
    /// recorded language too (imported, or from before languages: they saw its texts).
    #[arg(long, value_name = "TAG")]
    language: Option<String>,
    /// finetune: which side of the split.
    #[arg(long, value_enum, default_value_t = Side::Train)]
    split: Side,
    /// finetune: the record layout.
    #[arg(long, value_enum, default_value_t = FinetuneFormat::Openai)]
    format: FinetuneFormat,
    /// Write here instead of standard output (created readable by its owner only).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Text cells exactly as stored. By default a text cell beginning with =, +, -, @, a tab or
    /// a carriage return gets a leading ' so spreadsheets do not run it as a formula; use this
    /// for scripts that need the stored values (never open such a file in a spreadsheet).
    #[arg(long)]
    raw_cells: bool,
}

#[derive(clap::Args)]
pub struct SplitArgs {
    /// The study (slug).
    #[arg(long, value_name = "SLUG")]
    study: String,
    /// How many participants go to test (the paper: 400 of 1,266).
    #[arg(long, value_name = "N")]
    test: usize,
    /// The seed: the same seed gives the same split.
    #[arg(long, value_name = "N")]
    seed: u64,
}

/// An export reads (its audit entry is the only row it adds): it never changes the schema.
pub fn run(settings: &Settings, args: ExportArgs) -> anyhow::Result<()> {
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    if args.what == ExportKind::Finetune {
        if args.language.is_some() {
            anyhow::bail!("--language selects the participants of the long and wide exports");
        }
        return finetune(&mut conn, &args);
    }
    let stats = match &args.output {
        Some(path) => to_file(&mut conn, &args, path)?,
        None => {
            let out = std::io::stdout().lock();
            exports::export(
                &mut conn,
                &args.study,
                args.what,
                filter(&args),
                Cells::raw_if(args.raw_cells),
                &Actor::Cli,
                out,
            )?
        }
    };
    if let Some(path) = &args.output {
        eprintln!(
            "wrote {} rows ({} participants) to {}",
            stats.rows,
            stats.participants,
            path.display()
        );
    }
    Ok(())
}

fn filter(args: &ExportArgs) -> exports::Filter<'_> {
    exports::Filter {
        status: args.status,
        pilots: args.include_pilot,
        language: args.language.as_deref(),
    }
}

/// Written as FILE.partial and renamed when complete: an interrupted export (even kill -9)
/// never leaves a file that looks finished.
fn to_file(conn: &mut DbConnection, args: &ExportArgs, path: &Path) -> anyhow::Result<ExportStats> {
    let mut partial = path.to_path_buf().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = super::create_private(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let stats = exports::export(
        conn,
        &args.study,
        args.what,
        filter(args),
        Cells::raw_if(args.raw_cells),
        &Actor::Cli,
        &mut out,
    )?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), path.display()))?;
    Ok(stats)
}

fn finetune(conn: &mut DbConnection, args: &ExportArgs) -> anyhow::Result<()> {
    // Into a buffer first: a failed export leaves no partial file behind.
    let mut buffer = Vec::new();
    let stats = exports::export_finetune(
        conn,
        &args.study,
        args.split,
        args.format,
        &Actor::Cli,
        &mut buffer,
    )?;
    match &args.output {
        Some(path) => {
            super::write_private(path, &buffer)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "wrote {} records ({} participants) to {}",
                stats.rows,
                stats.participants,
                path.display()
            );
        }
        None => std::io::Write::write_all(&mut std::io::stdout().lock(), &buffer)?,
    }
    Ok(())
}

pub fn split(settings: &Settings, args: SplitArgs) -> anyhow::Result<()> {
    let pool = db::writing(settings)?;
    let r = exports::split_study(&mut *pool.get()?, &args.study, args.test, args.seed)?;
    println!(
        "study {}: {} train, {} test ({} situations, seed {})",
        args.study, r.train, r.test, r.strata, args.seed
    );
    Ok(())
}
