//! `import …`: situations, instruments, the published human data and released model answers.

use std::path::PathBuf;

use emotionbench::store::instruments;
use emotionbench::{Settings, app};

use super::db;

#[derive(clap::Subcommand)]
pub enum ImportCommand {
    /// Situations: EmotionBench situations.json, the wide situations.csv, doc.csv (the 175
    /// tested situations; factor names from EmotionBench's catalogue), or a tidy CSV
    /// (key,emotion,factor,text[,factor_index,scenario_index,...]). The format is detected from
    /// the content.
    Situations {
        file: PathBuf,
        /// The situation set to create or update (default: tested-175 for doc.csv, else the
        /// file name without extension).
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
        /// The file holds the texts of the existing set --set in this language (a language
        /// tag such as de or zh-CN), under the set's keys: a study in that language shows them
        /// (issue #20).
        #[arg(long, value_name = "TAG", requires = "set")]
        language: Option<String>,
    },
    /// Instruments in the EmotionBench questionnaires.json format; with --language, their
    /// item texts and labels in that language instead.
    Instruments {
        file: PathBuf,
        /// The file holds existing instruments' item texts and labels in this language (a tag
        /// such as de or zh-CN): a JSON list of {"name", "items": [{"number", "text"}],
        /// "labels": [{"value", "label"}]} with each instrument's item numbers and labelled
        /// values (issue #20).
        #[arg(long, value_name = "TAG")]
        language: Option<String>,
    },
    /// Free-text tasks (#18): a JSON list of {"key", "prompt" (with TARGET), "system_prompt",
    /// "targets": [...]}, stored as instruments of the free-text kind.
    Freetext { file: PathBuf },
    /// The published human data: upstream `crowd.xlsx` (sheet Raw) or the derived
    /// one-row-per-participant `human_responses.csv`, as completed, imported participants.
    Humans {
        file: PathBuf,
        /// The study (slug). Created closed, with PANAS and --set, when it does not exist.
        #[arg(long, value_name = "SLUG")]
        study: String,
        /// Situation set for a study created now (default: tested-175).
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
    },
    /// Released model answers in the upstream results layout
    /// (`results/PANAS Test/<model>-PANAS-testing.csv`) as an imported, completed run.
    ModelResults {
        file: PathBuf,
        /// The study (slug) whose instrument and situation set the answers belong to.
        #[arg(long, value_name = "SLUG")]
        study: String,
        /// The model's name in reports, e.g. gpt-4.
        #[arg(long, value_name = "NAME")]
        model: String,
        /// The instrument the answers are on (a key from `instruments list`, e.g. BDI for
        /// `gpt-3.5-turbo-BDI-testing.csv`). Default: the study's instrument.
        #[arg(long, value_name = "KEY")]
        instrument: Option<String>,
    },
}

pub fn run(settings: &Settings, cmd: ImportCommand) -> anyhow::Result<()> {
    let pool = db::writing(settings)?;
    let mut conn = pool.get()?;
    match cmd {
        ImportCommand::Situations {
            file,
            set: Some(set),
            language: Some(tag),
        } => {
            let lang = emotionbench::domain::language::Lang::parse(&tag)
                .map_err(|e| anyhow::anyhow!("--language: {e}"))?;
            let (format, done) =
                app::imports::import_situation_texts(&mut conn, &file, &set, &lang)?;
            println!(
                "imported {} as {} into set {set}: {} texts in {lang}",
                file.display(),
                format.as_str(),
                done.texts
            );
            if done.not_in_file > 0 {
                println!(
                    "note: {} situations of the set are not in this file",
                    done.not_in_file
                );
            }
            Ok(())
        }
        ImportCommand::Situations { file, set, .. } => {
            let (format, s) = app::imports::import_situations(&mut conn, &file, set.as_deref())?;
            println!(
                "imported {} as {} into set {}{}",
                file.display(),
                format.as_str(),
                s.set,
                if s.set_created { " (new)" } else { "" }
            );
            println!("emotions:   {}", s.emotions);
            println!("factors:    {}", s.factors);
            println!("situations: {}", s.situations);
            if s.kept_not_in_file > 0 {
                println!(
                    "note: {} situations of the set are not in this file and were kept",
                    s.kept_not_in_file
                );
            }
            Ok(())
        }
        ImportCommand::Freetext { file } => {
            for (key, outcome) in app::freetext::import_tasks(&mut conn, &file)? {
                println!("{key}: {outcome:?}");
            }
            Ok(())
        }
        ImportCommand::Instruments {
            file,
            language: Some(tag),
        } => {
            let lang = emotionbench::domain::language::Lang::parse(&tag)
                .map_err(|e| anyhow::anyhow!("--language: {e}"))?;
            for (key, items) in app::imports::import_instrument_texts(&mut conn, &file, &lang)? {
                println!(
                    "imported {} into {key}: {items} item texts and its labels in {lang}",
                    file.display()
                );
            }
            Ok(())
        }
        ImportCommand::Instruments {
            file,
            language: None,
        } => {
            let outcomes = app::imports::import_instruments(&mut conn, &file)?;
            let count = |o| outcomes.iter().filter(|(_, x)| *x == o).count();
            println!(
                "imported {} instruments from {}: {} created, {} updated, {} unchanged",
                outcomes.len(),
                file.display(),
                count(instruments::Outcome::Created),
                count(instruments::Outcome::Updated),
                count(instruments::Outcome::Unchanged),
            );
            for (key, o) in &outcomes {
                println!(
                    "  {key}: {}",
                    serde_json::to_value(o)?.as_str().unwrap_or("")
                );
            }
            Ok(())
        }
        ImportCommand::Humans { file, study, set } => {
            let r = app::imports::import_humans(&mut conn, &file, &study, set.as_deref())?;
            println!(
                "imported {} into study {}{}",
                file.display(),
                r.study,
                if r.study_created {
                    " (new, closed)"
                } else {
                    ""
                }
            );
            println!(
                "participants: {} in the file, {} created, {} already present",
                r.in_file, r.created, r.already_present
            );
            Ok(())
        }
        ImportCommand::ModelResults {
            file,
            study,
            model,
            instrument,
        } => {
            let r = app::imports::import_model_results(
                &mut conn,
                &file,
                &study,
                &model,
                instrument.as_deref(),
            )?;
            println!(
                "imported {} as run {} of model {} on {} in study {study}{}",
                file.display(),
                r.run_id,
                r.model,
                r.instrument,
                if r.replaced > 0 {
                    " (replacing the earlier import)"
                } else {
                    ""
                }
            );
            println!(
                "default trials: {} parsed, {} failed",
                r.default_done, r.default_failed
            );
            println!(
                "evoked trials:  {} parsed, {} failed",
                r.evoked_done, r.evoked_failed
            );
            Ok(())
        }
    }
}
