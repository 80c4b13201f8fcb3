//! `studies …`: reuse a study's definition — export it as one JSON file, import such a file
//! (here or on another installation), duplicate a study — and open or close one.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use emotionbench::domain::archive::StudyArchive;
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
}

pub fn run(settings: &Settings, cmd: StudiesCommand) -> anyhow::Result<()> {
    // Export only reads: it never migrates (cli::db).
    let pool = match &cmd {
        StudiesCommand::Export { .. } => db::reading(settings)?,
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
    }
    Ok(())
}
