//! `studies …`: reuse a study's definition — export it as one JSON file, import such a file
//! (here or on another installation), duplicate a study — and open or close one.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use emotionbench::domain::archive::StudyArchive;
use emotionbench::domain::evidence::ExclusionRules;
use emotionbench::domain::study::StudyStatus;
use emotionbench::store::audit::Actor;
use emotionbench::{Settings, app};

use super::db;

#[derive(clap::Subcommand)]
pub enum StudiesCommand {
    /// Write the study's definition (settings, consent and debrief texts, completion codes,
    /// the instrument with its items, the situation set with its texts; no participants) as
    /// versioned JSON to standard output.
    Export { slug: String },
    /// Create a draft study from a definition written by `studies export` (or the web
    /// download). Its instrument and situation set are reused when identical ones exist here,
    /// created when none of that name exists, and refused when one of that name differs.
    Import {
        file: PathBuf,
        /// The new study's slug (default: the file's).
        #[arg(long, value_name = "SLUG")]
        slug: Option<String>,
        /// Import the situation set under this name (default: the file's).
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
    },
    /// Create a draft copy of a study: settings and texts, no participants.
    Duplicate {
        slug: String,
        new_slug: String,
        /// The copy's title (default: the original's with " (copy)").
        #[arg(long)]
        title: Option<String>,
    },
    /// Open a study (refused, with what is missing, unless its launch checklist is complete),
    /// close it, or return it to draft.
    SetStatus {
        slug: String,
        #[arg(value_enum)]
        status: StudyStatus,
    },
    /// The evidence against bots and LLM agents about the study's completed participants: how
    /// many carry each signal (and the share), how many the exclusion rules exclude.
    Evidence { slug: String },
    /// Show the study's exclusion rules, or set them (`--set honeypot,model_like`; `--set
    /// none` clears them). Audited; a change after the study opened is named in the report.
    Exclusions {
        slug: String,
        /// Comma-separated signal names (see `studies evidence`), or `none`.
        #[arg(long, value_name = "SIGNALS")]
        set: Option<String>,
    },
}

pub fn run(settings: &Settings, cmd: StudiesCommand) -> anyhow::Result<()> {
    // Export only reads: it never migrates (cli::db).
    let pool = match &cmd {
        StudiesCommand::Export { .. }
        | StudiesCommand::Evidence { .. }
        | StudiesCommand::Exclusions { set: None, .. } => db::reading(settings)?,
        _ => db::writing(settings)?,
    };
    let mut conn = pool.get()?;
    match cmd {
        StudiesCommand::Export { slug } => {
            let archive = app::studies::export_definition(&mut conn, &slug)?;
            let mut out = std::io::stdout().lock();
            out.write_all(archive.to_json()?.as_bytes())?;
            out.flush()?;
        }
        StudiesCommand::Import { file, slug, set } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("{}: cannot read it as UTF-8 text", file.display()))?;
            let archive = StudyArchive::parse(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let done = app::studies::import_definition(
                &mut conn,
                &archive,
                slug.as_deref(),
                set.as_deref(),
                &Actor::Cli,
            )?;
            println!("imported study {} as a draft", done.slug);
            println!(
                "instrument {}: {}",
                done.instrument.0,
                done.instrument.1.as_str()
            );
            if let Some((name, reused)) = &done.set {
                println!("situation set {name}: {}", reused.as_str());
            }
            for other in &done.excluded_studies_not_here {
                println!("excluded study {other}: not on this installation, left out");
            }
        }
        StudiesCommand::Duplicate {
            slug,
            new_slug,
            title,
        } => {
            let title = match title {
                Some(t) => t,
                None => {
                    let from = emotionbench::store::studies::load(&mut conn, &slug)?
                        .with_context(|| format!("there is no study {slug:?}"))?;
                    format!("{} (copy)", from.title)
                }
            };
            let made = app::studies::duplicate(&mut conn, &slug, &new_slug, &title, &Actor::Cli)?;
            println!("created draft study {made} from {slug}");
        }
        StudiesCommand::SetStatus { slug, status } => {
            let study = emotionbench::store::studies::load(&mut conn, &slug)?
                .with_context(|| format!("there is no study {slug:?}"))?;
            app::studies::set_status(&mut conn, study.id, &slug, status, &Actor::Cli)?;
            println!("study {slug} is {status}");
        }
        StudiesCommand::Evidence { slug } => print_evidence(&mut conn, &slug)?,
        StudiesCommand::Exclusions { slug, set } => {
            let stored = match set {
                Some(list) => {
                    let rules = ExclusionRules::parse_list(&list).map_err(anyhow::Error::msg)?;
                    app::evidence::set_rules(&mut conn, &slug, &rules, &Actor::Cli)?
                }
                None => {
                    let study = emotionbench::store::studies::load(&mut conn, &slug)?
                        .with_context(|| format!("there is no study {slug:?}"))?;
                    emotionbench::store::evidence::rules(&mut conn, study.id)?
                }
            };
            println!(
                "exclusion rules of {slug}: {}{}",
                stored.rules.describe(),
                if stored.changed_after_opening {
                    " (changed after the study opened)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// `studies evidence`: one line per signal with its count and share of the assessed.
fn print_evidence(conn: &mut emotionbench::store::DbConnection, slug: &str) -> anyhow::Result<()> {
    let study = emotionbench::store::studies::load(conn, slug)?
        .with_context(|| format!("there is no study {slug:?}"))?;
    let evidence =
        app::evidence::study_evidence(conn, &study, emotionbench::store::evidence::Scope::All)?;
    let n = evidence.people.len();
    let share = |k: usize| {
        if n == 0 {
            0.0
        } else {
            100.0 * k as f64 / n as f64
        }
    };
    println!("{n} completed participants assessed in study {slug}");
    if evidence.models.is_empty() {
        println!("model runs compared with: none");
    } else {
        println!("model runs compared with: {}", evidence.models.join(", "));
    }
    for (signal, k) in evidence.signal_counts() {
        println!("{:<14} {k:>7} {:>6.2} %", signal.as_str(), share(k));
    }
    let (per, total) = evidence.exclusions();
    println!("exclusion rules: {}", evidence.rules.describe());
    for (signal, k) in per {
        println!("excluded by {:<14} {k:>7}", signal.as_str());
    }
    println!("excluded in all {total:>7} {:>6.2} %", share(total));
    Ok(())
}
