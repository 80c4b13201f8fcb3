//! The `emotionbench` command: parses the command line, loads settings, starts logging and
//! calls into the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use emotionbench::domain::prompt::Measure;
use emotionbench::llm::setup;
use emotionbench::store::{self, db, instruments, situations};
use emotionbench::{Application, Settings, ops};

mod cli;
use cli::bench;
use cli::work::{cmd_run, cmd_runs, cmd_worker};

#[derive(Parser)]
#[command(name = "emotionbench", version, about = "EmotionBench for people and LLMs from one definition", long_about = None)]
struct Cli {
    /// Config file (TOML); default ./emotionbench.toml when present, or $EMOTIONBENCH_CONFIG.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Database: sqlite://PATH or postgres://USER@HOST/DB (overrides DATABASE_URL).
    #[arg(long, global = true, value_name = "URL")]
    database_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the web server.
    Serve(ServeArgs),
    /// Run the embedded default: a SQLite database with a demo study, an admin account and the server.
    Demo(DemoArgs),
    /// Apply pending database migrations to DATABASE_URL.
    Migrate,
    /// Import situations or instruments from a file.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Questionnaires (instruments).
    #[command(subcommand)]
    Instruments(InstrumentsCommand),
    /// Situation sets and their situations.
    #[command(subcommand)]
    Situations(SituationsCommand),
    /// Create a model run and work it in the foreground (or `run resume ID`).
    Run(RunArgs),
    /// Model runs: list, show, pause, resume, cancel.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Work the trials of every active model run until stopped (SIGINT/SIGTERM).
    Worker(WorkerArgs),
    /// Prompts as sent to models.
    #[command(subcommand)]
    Prompt(PromptCommand),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct RunArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RunAction>,
    /// The study (slug) whose instrument and situations are used.
    #[arg(long)]
    pub(crate) study: Option<String>,
    /// A provider name from the config file's [[providers]].
    #[arg(long)]
    pub(crate) provider: Option<String>,
    /// The model name as the provider knows it.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// eb-code (upstream's exact messages), paper, stability, or a custom template file.
    #[arg(long, default_value = "eb-code")]
    pub(crate) template: String,
    /// Evoked trials per situation.
    #[arg(long, default_value_t = 10)]
    pub(crate) repeats: u32,
    /// Default-measure trials.
    #[arg(long, default_value_t = 50)]
    pub(crate) default_repeats: u32,
    /// all | tested | set:NAME | emotion:Anger[,Fear] | factor:Anger-0[,...] | keys:KEY[,KEY]
    #[arg(long, default_value = "all")]
    pub(crate) situations: String,
    /// Seed of the item orders (random when omitted; stored with the run).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    #[arg(long, default_value_t = 0.0)]
    pub(crate) temperature: f64,
    #[arg(long, default_value_t = 1.0)]
    pub(crate) top_p: f64,
    #[arg(long, default_value_t = 512)]
    pub(crate) max_tokens: u32,
    /// Do not send a per-trial seed to the provider.
    #[arg(long)]
    pub(crate) no_request_seed: bool,
    /// Only create the run (workers pick it up); do not work it here.
    #[arg(long)]
    pub(crate) detach: bool,
    #[command(flatten)]
    pub(crate) work: WorkOpts,
}

#[derive(Subcommand)]
pub(crate) enum RunAction {
    /// Resume a run (paused, interrupted, failed or cancelled) and work it in the foreground.
    Resume {
        id: i64,
        #[command(flatten)]
        work: WorkOpts,
    },
}

#[derive(Args, Clone)]
pub(crate) struct WorkOpts {
    /// Seconds a claimed trial stays leased without renewal (renewed at every attempt).
    #[arg(long, default_value_t = 120)]
    pub(crate) lease_seconds: u64,
}

#[derive(Subcommand)]
pub(crate) enum RunsCommand {
    /// List the runs with their progress.
    List,
    /// One run: parameters, progress, failures, a sample of replies.
    Show {
        id: i64,
        /// Print every trial as JSON lines instead.
        #[arg(long)]
        trials: bool,
    },
    /// Stop claiming new trials (trials in flight finish).
    Pause { id: i64 },
    /// Queue a paused, failed or cancelled run again.
    Resume { id: i64 },
    /// Cancel a run: its pending trials are never sent.
    Cancel { id: i64 },
}

#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// Requests in flight at most (default: the sum of the providers' concurrency).
    #[arg(long)]
    pub(crate) slots: Option<usize>,
    #[command(flatten)]
    pub(crate) work: WorkOpts,
}

#[derive(Subcommand)]
enum PromptCommand {
    /// Print the exact messages of one trial.
    Show {
        #[arg(long)]
        study: String,
        /// default | evoked
        #[arg(long, default_value = "default")]
        measure: String,
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
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The full protocol (50 default + 1,750 evoked trials) against a local fake provider.
    Runner(bench::BenchArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on, e.g. 0.0.0.0:8080 (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
}

#[derive(Args)]
struct DemoArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Where the SQLite database lives; created if missing, reused if present.
    #[arg(long, value_name = "DIR", default_value = "emotionbench-data")]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum ImportCommand {
    /// Situations: EmotionBench situations.json, the wide situations.csv, or a tidy CSV
    /// (key,emotion,factor,text[,factor_index,scenario_index,...]). The format is detected from
    /// the content.
    Situations {
        file: PathBuf,
        /// The situation set to create or update (default: the file name without extension).
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
    },
    /// Instruments in the EmotionBench questionnaires.json format.
    Instruments { file: PathBuf },
}

#[derive(Subcommand)]
enum InstrumentsCommand {
    /// List the stored instruments.
    List,
}

#[derive(Subcommand)]
enum SituationsCommand {
    /// List the situation sets, or with --set the situations of one set.
    List {
        #[arg(long, value_name = "NAME")]
        set: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn load_settings(cli: &Cli) -> anyhow::Result<Settings> {
    let mut s = Settings::load(cli.config.as_deref(), |k| std::env::var(k).ok())?;
    if let Some(url) = &cli.database_url {
        s.database_url = url.clone();
    }
    Ok(s)
}

fn init_tracing(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn open(settings: &Settings) -> anyhow::Result<store::Pool> {
    Ok(db::connect(&settings.database_url, settings.pool_size)?)
}

pub(crate) fn migrated(settings: &Settings) -> anyhow::Result<store::Pool> {
    let pool = open(settings)?;
    let mut conn = pool.get()?;
    db::migrate(&mut conn)?;
    instruments::ensure_builtin(&mut conn)?;
    drop(conn);
    Ok(pool)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let mut settings = load_settings(&cli)?;
    init_tracing(&settings.log);
    match cli.command {
        Command::Serve(args) => {
            if let Some(bind) = args.bind {
                settings.bind = bind;
            }
            let pool = if settings.auto_migrate {
                migrated(&settings)?
            } else {
                open(&settings)?
            };
            serve(settings, pool, |_| {})
        }
        Command::Demo(args) => demo(settings, args),
        Command::Migrate => {
            let pool = open(&settings)?;
            let mut conn = pool.get()?;
            let applied = db::migrate(&mut conn)?;
            instruments::ensure_builtin(&mut conn)?;
            if applied.is_empty() {
                println!("database is up to date ({})", conn.backend());
            } else {
                for m in &applied {
                    println!("applied {m}");
                }
            }
            Ok(())
        }
        Command::Import(ImportCommand::Situations { file, set }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let (format, s) = ops::import_situations(&mut conn, &file, set.as_deref())?;
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
        Command::Import(ImportCommand::Instruments { file }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let outcomes = ops::import_instruments(&mut conn, &file)?;
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
        Command::Instruments(InstrumentsCommand::List) => {
            let pool = migrated(&settings)?;
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
        Command::Situations(SituationsCommand::List { set }) => {
            let pool = migrated(&settings)?;
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
        Command::Run(args) => cmd_run(settings, args),
        Command::Runs(cmd) => cmd_runs(settings, cmd),
        Command::Worker(args) => cmd_worker(settings, args),
        Command::Prompt(PromptCommand::Show {
            study,
            measure,
            situation,
            template,
            seed,
            repeat,
            json,
        }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let measure: Measure = measure.parse().map_err(anyhow::Error::msg)?;
            let messages = setup::prompt_messages(
                &mut conn,
                &setup::PromptRequest {
                    study,
                    measure,
                    situation,
                    template,
                    seed,
                    repeat,
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
        Command::Bench(BenchCommand::Runner(args)) => bench::runner(settings, args),
    }
}

fn serve(settings: Settings, pool: store::Pool, on_ready: impl FnOnce(&str)) -> anyhow::Result<()> {
    let bind = settings.bind.clone();
    let system = actix_web::rt::System::new();
    system.block_on(async move {
        let app = Application::build(settings.clone(), pool)
            .with_context(|| format!("cannot listen on {bind}"))?;
        let base = settings.link_base(app.addr());
        tracing::info!(addr = %app.addr(), "listening");
        on_ready(&base);
        app.run_until_stopped().await?;
        Ok(())
    })
}

fn demo(mut settings: Settings, args: DemoArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let db_path = absolute(&args.data_dir.join("emotionbench.db"));
    settings.database_url = format!("sqlite://{}", db_path.display());
    settings.bind = args.bind;
    let pool = migrated(&settings)?;
    let setup = {
        let mut conn = pool.get()?;
        ops::load_demo(&mut conn)?
    };
    let slug = setup.study_slug.clone();
    serve(settings, pool, move |base| {
        println!("EmotionBench demo");
        println!("  database:         {}", db_path.display());
        if setup.study_created {
            println!("  demo study:       created ({slug})");
        } else {
            println!("  demo study:       reused from the database ({slug})");
        }
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
        println!("  start page:       {base}/");
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
