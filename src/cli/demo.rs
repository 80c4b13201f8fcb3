//! `demo`: the embedded default, a SQLite database with a demo study, an admin account and the
//! server.

use std::path::{Path, PathBuf};

use anyhow::Context;
use emotionbench::{Settings, app};

use super::{db, serve::serve};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Where the SQLite database lives; created if missing, reused if present.
    #[arg(long, value_name = "DIR", default_value = "emotionbench-data")]
    data_dir: PathBuf,
}

pub fn run(mut settings: Settings, args: DemoArgs) -> anyhow::Result<()> {
    // Owner-only when created here: the directory holds the database and its WAL.
    let mut dir = std::fs::DirBuilder::new();
    dir.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
    dir.create(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let db_path = absolute(&args.data_dir.join("emotionbench.db"));
    settings.database_url = format!("sqlite://{}", db_path.display());
    settings.bind = args.bind;
    // The demo's own database, created here: it is always brought up to date.
    let pool = db::migrated(&settings)?;
    let setup = {
        let mut conn = pool.get()?;
        let setup = app::demo::load_demo(&mut conn)?;
        let valence = app::demo::load_valence_demo(&mut conn)?;
        (setup, valence)
    };
    let (setup, valence_created) = setup;
    let slug = setup.study_slug.clone();
    serve(settings, pool, move |base| {
        println!("EmotionBench demo");
        println!("  database:         {}", db_path.display());
        if setup.study_created {
            println!("  demo study:       created ({slug})");
        } else {
            println!("  demo study:       reused from the database ({slug})");
        }
        let valence = app::demo::DEMO_VALENCE_STUDY;
        println!(
            "  valence study:    {valence} ({}; a draft for model runs, e.g. `emotionbench run \
             --study {valence} ...`; its report has a valence section)",
            if valence_created { "created" } else { "reused" }
        );
        println!("  valence set:      {base}/admin/data/sets/demo-valence");
        match &setup.admin {
            Some((email, password)) => {
                println!("  admin account:    {email}");
                println!("  admin password:   {password}");
                println!("                    (shown once; it is stored only as an Argon2id hash)");
            }
            None => println!("  admin account:    exists already (password not shown again)"),
        }
        println!("  participant link: {base}/s/{slug}");
        println!("  admin link:       {base}/admin");
        println!(
            "  free-text task:   {} (`emotionbench run --study {slug} --instrument {}`, then \
             `emotionbench runs score` and `runs text-report`; docs/free-text.md)",
            emotionbench::domain::demo::DEMO_FREE_TEXT,
            emotionbench::domain::demo::DEMO_FREE_TEXT
        );
        println!("  start page:       {base}/");
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
