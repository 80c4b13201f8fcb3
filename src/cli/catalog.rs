//! `instruments list` and `situations list`: what is stored (read only).

use anyhow::Context;
use emotionbench::Settings;
use emotionbench::store::{instruments, situations};

use super::db;

#[derive(clap::Subcommand)]
pub enum InstrumentsCommand {
    /// List the stored instruments.
    List,
}

#[derive(clap::Subcommand)]
pub enum SituationsCommand {
    /// List the situation sets, or with --set the situations of one set.
    List {
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
    },
}

pub fn instruments(settings: &Settings, cmd: InstrumentsCommand) -> anyhow::Result<()> {
    let InstrumentsCommand::List = cmd;
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    println!(
        "{:<10} {:>5}  {:<6} {:<8} CATEGORIES",
        "KEY", "ITEMS", "RANGE", "SOURCE"
    );
    for i in instruments::list(&mut conn)? {
        println!(
            "{:<10} {:>5}  {:<6} {:<8} {}",
            i.key,
            i.items,
            format!("{}-{}", i.min, i.max),
            if i.builtin { "builtin" } else { "imported" },
            i.categories.join("; ")
        );
    }
    Ok(())
}

pub fn situations(settings: &Settings, cmd: SituationsCommand) -> anyhow::Result<()> {
    let SituationsCommand::List { set } = cmd;
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    match set {
        None => {
            println!(
                "{:<24} {:>8} {:>7} {:>10}  SOURCE",
                "SET", "EMOTIONS", "FACTORS", "SITUATIONS"
            );
            for s in situations::sets(&mut conn)? {
                println!(
                    "{:<24} {:>8} {:>7} {:>10}  {}",
                    s.name, s.emotions, s.factors, s.situations, s.source
                );
            }
        }
        Some(name) => {
            let id = situations::find_set(&mut conn, &name)?
                .with_context(|| format!("no situation set named {name:?}"))?;
            println!("key\temotion\tfactor_index\tfactor\ttext");
            for s in situations::list(&mut conn, id)? {
                let s = s.situation;
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    s.key, s.emotion, s.factor_index, s.factor_name, s.text
                );
            }
        }
    }
    Ok(())
}
