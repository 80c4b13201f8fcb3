//! `prompt show`: the exact messages of one trial (read only).

use emotionbench::domain::prompt::Measure;
use emotionbench::{Settings, app};

use super::db;

#[derive(clap::Subcommand)]
pub enum PromptCommand {
    /// Print the exact messages of one trial.
    Show {
        #[arg(long)]
        study: String,
        /// An instrument key instead of the study's (as `run --instrument`).
        #[arg(long, value_name = "KEY")]
        instrument: Option<String>,
        /// default | evoked
        #[arg(long, default_value_t = Measure::Default)]
        measure: Measure,
        /// Situation key (evoked; default: the first of the study's set).
        #[arg(long)]
        situation: Option<String>,
        #[arg(long, default_value = "eb-code")]
        template: String,
        /// The item order of a run with this seed (default: canonical order).
        #[arg(long)]
        seed: Option<u64>,
        /// With --seed: which repeat.
        #[arg(long, default_value_t = 0)]
        repeat: u32,
        /// Print the messages as a JSON array.
        #[arg(long)]
        json: bool,
        /// One of the study's languages (a tag such as de): the situation's text in it
        /// (issue #20; default: the study's default language, the set's own texts).
        #[arg(long, value_name = "TAG")]
        language: Option<String>,
    },
}

pub fn run(settings: &Settings, cmd: PromptCommand) -> anyhow::Result<()> {
    let PromptCommand::Show {
        study,
        instrument,
        measure,
        situation,
        template,
        seed,
        repeat,
        json,
        language,
    } = cmd;
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    let messages = app::runs::prompt_messages(
        &mut conn,
        &app::runs::PromptRequest {
            study,
            instrument,
            measure,
            situation,
            template,
            seed,
            repeat,
            language,
        },
    )?;
    if json {
        println!("{}", serde_json::to_string_pretty(&messages)?);
    } else {
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                println!();
            }
            println!("--- {} ---", m.role);
            println!("{}", m.content);
        }
    }
    Ok(())
}
