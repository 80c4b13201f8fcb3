//! The `emotionbench` command: parses the command line, loads settings, starts logging and
//! calls into the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use emotionbench::app;
use emotionbench::domain::prompt::Measure;
use emotionbench::store::{self, db, instruments, situations};
use emotionbench::{Application, Settings};

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
    /// Accounts of researchers and admins.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Data retention.
    #[command(subcommand)]
    Retention(RetentionCommand),
    /// Export a study as CSV (UTF-8, RFC 4180, ISO 8601 UTC), streamed in bounded memory, or
    /// fine-tuning JSONL from its split.
    Export(ExportArgs),
    /// Split the completed participants of a study into train and test for fine-tuning:
    /// stratified by situation, seeded, recorded in the database (replacing an earlier split).
    Split {
        /// The study (slug).
        #[arg(long, value_name = "SLUG")]
        study: String,
        /// How many participants go to test (the paper: 400 of 1,266).
        #[arg(long, value_name = "N")]
        test: usize,
        /// The seed: the same seed gives the same split.
        #[arg(long, value_name = "N")]
        seed: u64,
    },
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
    /// The alignment report of a study: humans and models side by side (paper Table 2 layout).
    Report(ReportArgs),
    /// Benchmarks and load generators (loopback only, bounded).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Args)]
struct ReportArgs {
    /// The study's slug.
    #[arg(long)]
    study: String,
    /// `all` or a comma-separated list of model names.
    #[arg(long, default_value = "all")]
    models: app::report::ModelSelection,
    /// One cohort per run instead of per model (comma-separated run ids, see `emotionbench
    /// runs`). With exactly two runs, e.g. one model under `eb-code` and under `stability`, the
    /// report also compares them: per emotion, each Δ and the difference with its test.
    #[arg(long, value_delimiter = ',', conflicts_with = "models")]
    runs: Vec<i64>,
    /// The instrument the model trials answered (e.g. AGQ); default: the study's. Humans are
    /// included only on their own instrument.
    #[arg(long)]
    instrument: Option<String>,
    /// Only the humans on this side of the study's split (`emotionbench split`): train or test.
    #[arg(long, value_parser = parse_side)]
    split: Option<emotionbench::domain::split::Side>,
    /// `paper`: the upstream procedure (F-test, Student or Welch, ε = 1e-8 on SDs, repeats
    /// pooled); `default`: Welch without ε.
    #[arg(long, default_value = "default")]
    mode: emotionbench::domain::report::Mode,
    /// Significance level.
    #[arg(long, default_value_t = 0.01, value_parser = app::report::parse_alpha)]
    alpha: f64,
    /// Model observations: every `trial`, or the mean of each `situation`'s repeats.
    #[arg(long, default_value = "trial")]
    unit: emotionbench::domain::report::Unit,
    /// Multiple-comparison correction over each cohort's factor table: bh or holm.
    #[arg(long)]
    correction: Option<emotionbench::domain::report::Correction>,
    /// html, md, csv or json.
    #[arg(long, default_value = "md")]
    format: emotionbench::export::report::Format,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The full protocol (50 default + 1,750 evoked trials) against a local fake provider.
    Runner(bench::BenchArgs),
    /// Generate a study in a temporary SQLite database and time the live monitor's queries.
    Monitor {
        /// Participants to generate (completed).
        #[arg(long, default_value_t = 100_000)]
        participants: usize,
        /// Timed loads of the monitor (the median is reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Drive real HTTP participants through the whole survey and report throughput and latency.
    Survey(BenchSurveyArgs),
    /// Generate a study in a temporary SQLite database and time the long export of it.
    Export {
        /// Completed participants to generate (40 long rows each).
        #[arg(long, default_value_t = 25_000)]
        participants: usize,
        /// Write the CSV here (default: discard it).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Generate humans and model runs in a temporary SQLite database and time the full report.
    Report {
        #[arg(long, default_value_t = 1266)]
        participants: usize,
        #[arg(long, default_value_t = 10)]
        models: usize,
        /// Trials per model (50 default-measure, the rest evoked).
        #[arg(long, default_value_t = 1800)]
        trials: usize,
        /// Timed runs (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
    },
    /// Create an open study for load tests on DATABASE_URL (the demo situations, PANAS,
    /// shuffled items, no minimum reading time).
    PrepareStudy {
        #[arg(long, default_value = "bench")]
        slug: String,
        /// Completed participants wanted per situation.
        #[arg(long, default_value_t = 1_000_000)]
        target: i32,
    },
}

#[derive(Args)]
struct BenchSurveyArgs {
    /// Server base URL (loopback only), e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// The study's slug.
    #[arg(long)]
    study: String,
    /// Participants in flight at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Number of participants to run.
    #[arg(long, conflicts_with = "duration")]
    participants: Option<u64>,
    /// Seconds to keep starting participants.
    #[arg(long)]
    duration: Option<u64>,
    /// Mean time on a page before submitting it, in milliseconds; each pause is drawn
    /// uniformly from ½ to 1½ times this (0: submit at once).
    #[arg(long, default_value_t = 0)]
    think_ms: u64,
    /// Start the virtual participants spread evenly over this many milliseconds rather than
    /// all at once.
    #[arg(long, default_value_t = 0)]
    ramp_ms: u64,
    /// Report this server process's CPU time per completed participant.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Afterwards check in this database that every completed participant has exactly its 40
    /// answers stored, none twice.
    #[arg(long, value_name = "DATABASE_URL")]
    verify: Option<String>,
    /// Send a request again, at most this many times, when it fails in transit (connection
    /// error, or 502/503/504 from a proxy or a server without its database). Safe for the
    /// survey's POSTs: a page submit that was already stored is not stored twice (the page
    /// state machine redirects the resend to the current page). Resends are counted.
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create an account. The password is read from a prompt, or from the first line of
    /// standard input when that is not a terminal; never from an argument.
    CreateUser {
        email: String,
        #[arg(long, value_parser = ["admin", "researcher"])]
        role: String,
    },
    /// List the accounts.
    ListUsers,
    /// Set a new password (read like create-user); ends the account's sessions.
    SetPassword { email: String },
    /// Disable an account; ends its sessions.
    DisableUser { email: String },
}

#[derive(Subcommand)]
enum RetentionCommand {
    /// Delete the participant data of every study whose retention date has passed.
    Run,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ExportWhat {
    /// One row per participant x phase x item.
    Long,
    /// One row per participant.
    Wide,
    /// Every column of long and wide: label, type, allowed values, meaning.
    Codebook,
    /// Fine-tuning JSONL from one side of the study's split (see `emotionbench split`).
    Finetune,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SplitArg {
    Train,
    Test,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FinetuneFormatArg {
    /// {"messages":[system, user, assistant]} (OpenAI chat fine-tuning).
    Openai,
    /// The same messages with participant, source_ref, measure and situation.
    Messages,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StatusArg {
    Completed,
    All,
}

#[derive(Args)]
struct ExportArgs {
    what: ExportWhat,
    /// The study (slug).
    #[arg(long, value_name = "SLUG")]
    study: String,
    /// Which participants: completed ones (default) or everyone.
    #[arg(long, value_enum, default_value = "completed")]
    status: StatusArg,
    /// finetune: which side of the split.
    #[arg(long, value_enum, default_value = "train")]
    split: SplitArg,
    /// finetune: the record layout.
    #[arg(long, value_enum, default_value = "openai")]
    format: FinetuneFormatArg,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct RunArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RunAction>,
    /// The study (slug) whose instrument and situations are used.
    #[arg(long)]
    pub(crate) study: Option<String>,
    /// Use this instrument (a key from `instruments list`) instead of the study's; an
    /// emotion-specific scale (AGQ, BDI, …) takes its emotion's situations by default.
    #[arg(long, value_name = "KEY")]
    pub(crate) instrument: Option<String>,
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
        /// An instrument key instead of the study's (as `run --instrument`).
        #[arg(long, value_name = "KEY")]
        instrument: Option<String>,
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

/// mimalloc: the survey's many short-lived allocations cost less than with glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        Command::Import(ImportCommand::Instruments { file }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
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
        Command::Import(ImportCommand::Humans { file, study, set }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
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
        Command::Import(ImportCommand::ModelResults {
            file,
            study,
            model,
            instrument,
        }) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
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
        Command::Split { study, test, seed } => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let r = app::exports::split_study(&mut conn, &study, test, seed)?;
            println!(
                "study {study}: {} train, {} test ({} situations, seed {seed})",
                r.train, r.test, r.strata
            );
            Ok(())
        }
        Command::Export(args) if matches!(args.what, ExportWhat::Finetune) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let side = match args.split {
                SplitArg::Train => emotionbench::domain::split::Side::Train,
                SplitArg::Test => emotionbench::domain::split::Side::Test,
            };
            let format = match args.format {
                FinetuneFormatArg::Openai => emotionbench::export::finetune::FinetuneFormat::Openai,
                FinetuneFormatArg::Messages => {
                    emotionbench::export::finetune::FinetuneFormat::Messages
                }
            };
            let actor = store::audit::Actor::Cli;
            // Into a buffer first: a failed export leaves no partial file behind.
            let mut buffer = Vec::new();
            let stats = app::exports::export_finetune(
                &mut conn,
                &args.study,
                side,
                format,
                &actor,
                &mut buffer,
            )?;
            match &args.output {
                Some(path) => {
                    std::fs::write(path, &buffer)
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
        Command::Export(args) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let kind = match args.what {
                ExportWhat::Long => app::exports::ExportKind::Long,
                ExportWhat::Wide => app::exports::ExportKind::Wide,
                ExportWhat::Codebook => app::exports::ExportKind::Codebook,
                ExportWhat::Finetune => unreachable!("handled above"),
            };
            let filter = match args.status {
                StatusArg::Completed => store::cohorts::StatusFilter::Completed,
                StatusArg::All => store::cohorts::StatusFilter::All,
            };
            let actor = store::audit::Actor::Cli;
            let stats = match &args.output {
                Some(path) => {
                    // Written as FILE.partial and renamed when complete: an interrupted export
                    // (even kill -9) never leaves a file that looks finished.
                    let mut partial = path.clone().into_os_string();
                    partial.push(".partial");
                    let partial = PathBuf::from(partial);
                    let file = std::fs::File::create(&partial)
                        .with_context(|| format!("cannot create {}", partial.display()))?;
                    let mut out = std::io::BufWriter::new(file);
                    let stats = app::exports::export(
                        &mut conn,
                        &args.study,
                        kind,
                        filter,
                        &actor,
                        &mut out,
                    )?;
                    let file = out.into_inner().map_err(|e| e.into_error())?;
                    file.sync_all()?;
                    std::fs::rename(&partial, path).with_context(|| {
                        format!("cannot rename {} to {}", partial.display(), path.display())
                    })?;
                    stats
                }
                None => {
                    let out = std::io::stdout().lock();
                    app::exports::export(&mut conn, &args.study, kind, filter, &actor, out)?
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
        Command::Bench(BenchCommand::Export {
            participants,
            output,
        }) => bench_export(participants, output.as_deref()),
        Command::Bench(BenchCommand::Monitor { participants, runs }) => {
            bench_monitor(participants, runs)
        }
        Command::Bench(BenchCommand::Report {
            participants,
            models,
            trials,
            runs,
        }) => bench_report(participants, models, trials, runs),
        Command::Report(args) => {
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let options = emotionbench::domain::report::Options {
                mode: args.mode,
                alpha: args.alpha,
                unit: args.unit,
                correction: args.correction,
            };
            let request = app::report::ReportRequest {
                models: args.models.clone(),
                runs: args.runs.clone(),
                instrument: args.instrument.clone(),
                split: args.split,
                ..app::report::ReportRequest::new(&args.study, options)
            };
            let report = app::report::report(&mut conn, &request)?;
            let text = emotionbench::export::report::render(&report, args.format)?;
            match &args.output {
                Some(path) => {
                    std::fs::write(path, text)
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
        Command::Admin(cmd) => {
            use emotionbench::auth::password;
            use emotionbench::store::{audit, users};
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            match cmd {
                AdminCommand::CreateUser { email, role } => {
                    anyhow::ensure!(
                        email.contains('@') && email.len() <= 254,
                        "{email:?} is not an email address"
                    );
                    let role: users::Role = role.parse().map_err(anyhow::Error::msg)?;
                    let hash = password::hash(&read_password()?)?;
                    users::create(&mut conn, &email, &hash, role)?;
                    audit::record(
                        &mut conn,
                        &audit::Actor::Cli,
                        "user.create",
                        Some(&email),
                        None,
                    )?;
                    println!("created {} account {email}", role.as_str());
                }
                AdminCommand::ListUsers => {
                    println!("{:<40} {:<11} STATUS", "EMAIL", "ROLE");
                    for u in users::list(&mut conn)? {
                        println!(
                            "{:<40} {:<11} {}",
                            u.email,
                            u.role.as_str(),
                            if u.disabled { "disabled" } else { "active" }
                        );
                    }
                }
                AdminCommand::SetPassword { email } => {
                    let hash = password::hash(&read_password()?)?;
                    users::set_password(&mut conn, &email, &hash)?;
                    audit::record(
                        &mut conn,
                        &audit::Actor::Cli,
                        "user.set-password",
                        Some(&email),
                        None,
                    )?;
                    println!("password changed for {email}; its sessions have ended");
                }
                AdminCommand::DisableUser { email } => {
                    users::disable(&mut conn, &email)?;
                    audit::record(
                        &mut conn,
                        &audit::Actor::Cli,
                        "user.disable",
                        Some(&email),
                        None,
                    )?;
                    println!("disabled {email}; its sessions have ended");
                }
            }
            Ok(())
        }
        Command::Retention(RetentionCommand::Run) => {
            use emotionbench::store::{audit, studies};
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let done = studies::apply_retention(&mut conn)?;
            if done.is_empty() {
                println!("no study is past its retention date");
            }
            for (slug, n) in done {
                audit::record(
                    &mut conn,
                    &audit::Actor::Cli,
                    "retention.delete",
                    Some(&slug),
                    Some(&serde_json::json!({"participants": n})),
                )?;
                println!("{slug}: deleted {n} participants");
            }
            Ok(())
        }
        Command::Bench(BenchCommand::PrepareStudy { slug, target }) => {
            use emotionbench::domain::study::{StudyConfig, StudyStatus};
            use emotionbench::store::studies;
            let pool = migrated(&settings)?;
            let mut conn = pool.get()?;
            let demo = emotionbench::domain::demo::demo_study();
            if situations::find_set(&mut conn, demo.situation_set)?.is_none() {
                situations::import(&mut conn, demo.situation_set, "demo", &demo.situations)?;
            }
            let set = situations::find_set(&mut conn, demo.situation_set)?
                .context("the demo situation set is missing")?;
            let inst = instruments::ensure_builtin(&mut conn)?;
            if studies::find(&mut conn, &slug)?.is_some() {
                println!("study {slug} exists already");
                return Ok(());
            }
            let mut c = StudyConfig::new(&slug, "Load test");
            c.consent_text = "A load test study.".into();
            c.debrief_text = "Thank you.".into();
            c.target_per_situation = target;
            c.min_situation_seconds = 0;
            c.code_completed = Some("BENCHDONE".into());
            studies::create(
                &mut conn,
                &c,
                StudyStatus::Open,
                studies::Sources::new(inst, Some(set)),
                7,
            )?;
            println!("created open study {slug} (target {target} per situation)");
            Ok(())
        }
        Command::Bench(BenchCommand::Survey(a)) => {
            use emotionbench::bench::survey;
            let cfg = survey::Config {
                url: a.url,
                study: a.study.clone(),
                concurrency: a.concurrency,
                participants: a.participants,
                duration: a.duration.map(std::time::Duration::from_secs),
                think: std::time::Duration::from_millis(a.think_ms),
                ramp: std::time::Duration::from_millis(a.ramp_ms),
                server_pid: a.server_pid,
                pid_prefix: format!("bench{}x", std::process::id()),
                retries: a.retries,
            };
            let report = survey::run(&cfg)?;
            let verification = match &a.verify {
                Some(url) => {
                    let pool = db::connect(url, 1)?;
                    let mut conn = pool.get()?;
                    Some(survey::verify(
                        &mut conn,
                        &a.study,
                        &report.completed_pids,
                        40,
                    )?)
                }
                None => None,
            };
            if a.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"report": report, "verify": verification})
                    )?
                );
            } else {
                print_survey_report(&report, verification.as_ref(), a.concurrency);
            }
            let failed = report.errors > 0
                || verification
                    .as_ref()
                    .is_some_and(|v| !v.incomplete.is_empty() || v.duplicates > 0);
            anyhow::ensure!(!failed, "the run had errors or lost/duplicated answers");
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
            instrument,
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

fn print_survey_report(
    r: &emotionbench::bench::survey::Report,
    v: Option<&emotionbench::bench::survey::Verification>,
    concurrency: usize,
) {
    println!(
        "participants: {} started, {} completed, {} errors",
        r.started, r.completed, r.errors
    );
    for e in &r.error_samples {
        println!("  error: {e}");
    }
    if r.retries > 0 {
        println!(
            "resent:       {} requests after a connection error or 502/503/504",
            r.retries
        );
    }
    println!(
        "throughput:   {:.1} completed participants/s, {:.0} requests/s over {:.1} s at concurrency {concurrency}",
        r.completed_per_second, r.requests_per_second, r.wall_seconds
    );
    println!(
        "{:<26} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "latency (ms)", "requests", "p50", "p95", "p99", "max"
    );
    for p in r.pages.iter().chain(r.overall.as_ref()) {
        println!(
            "{:<26} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            p.page, p.requests, p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms
        );
    }
    println!(
        "load generator CPU: {:.2} s ({:.0}% of one core)",
        r.own_cpu_seconds,
        r.own_cpu_share * 100.0
    );
    if let (Some(s), Some(per)) = (r.server_cpu_seconds, r.server_cpu_ms_per_participant) {
        println!("server CPU:   {s:.2} s, {per:.2} ms per completed participant");
    }
    if let Some(v) = v {
        println!(
            "verify:       {} checked, {} with exactly 40 answers, {} incomplete, {} duplicate rows",
            v.checked,
            v.complete,
            v.incomplete.len(),
            v.duplicates
        );
    }
}

/// Reads a new password: twice from the terminal, or one line of piped standard input.
fn read_password() -> anyhow::Result<String> {
    use std::io::IsTerminal;
    let password = if std::io::stdin().is_terminal() {
        let a = rpassword::prompt_password("New password: ")?;
        let b = rpassword::prompt_password("Repeat it: ")?;
        anyhow::ensure!(a == b, "the two passwords differ");
        a
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    anyhow::ensure!(
        password.chars().count() >= 10,
        "the password must have at least 10 characters"
    );
    Ok(password)
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
        app::demo::load_demo(&mut conn)?
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

/// Peak resident memory of this process so far (VmHWM), in KiB, where /proc exists.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn bench_monitor(participants: usize, runs: usize) -> anyhow::Result<()> {
    let bench = BenchDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    println!(
        "generated {participants} participants in {:.1} s (SQLite, temporary)",
        started.elapsed().as_secs_f64()
    );
    let study =
        store::studies::load(&mut conn, "bench")?.context("the generated study is missing")?;
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let t = std::time::Instant::now();
        let m = store::monitor::load(&mut conn, &study)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(
            m.counts.completed as usize == participants,
            "unexpected counts"
        );
    }
    times.sort_by(f64::total_cmp);
    println!(
        "monitor: median {:.1} ms over {} loads (min {:.1}, max {:.1})",
        times[times.len() / 2],
        times.len(),
        times[0],
        times[times.len() - 1]
    );
    Ok(())
}

fn bench_export(participants: usize, output: Option<&Path>) -> anyhow::Result<()> {
    let bench = BenchDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    let study = app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    let generated = started.elapsed();
    let rss_before = peak_rss_kib();
    let started = std::time::Instant::now();
    let stats = match output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            emotionbench::export::write_long(
                &mut conn,
                study,
                store::cohorts::StatusFilter::Completed,
                file,
            )?
        }
        None => emotionbench::export::write_long(
            &mut conn,
            study,
            store::cohorts::StatusFilter::Completed,
            std::io::sink(),
        )?,
    };
    let took = started.elapsed().as_secs_f64();
    let rss_after = peak_rss_kib();
    println!(
        "generated {participants} participants in {:.1} s (SQLite, temporary)",
        generated.as_secs_f64()
    );
    println!(
        "long export: {} rows in {:.2} s = {:.0} rows/s",
        stats.rows,
        took,
        stats.rows as f64 / took.max(1e-9)
    );
    let mib = |k: Option<u64>| {
        k.map_or("unknown".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "peak memory (VmHWM): {} before the export, {} after",
        mib(rss_before),
        mib(rss_after)
    );
    Ok(())
}

fn bench_report(
    participants: usize,
    models: usize,
    trials: usize,
    runs: usize,
) -> anyhow::Result<()> {
    use emotionbench::domain::report::{Mode, Options};
    let bench = BenchDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    app::demo::generate_model_runs(&mut conn, "bench", models, trials, 2)?;
    println!(
        "generated {participants} participants and {models} models x {trials} trials in {:.1} s (SQLite, temporary)",
        started.elapsed().as_secs_f64()
    );
    for mode in [Mode::Paper, Mode::Default] {
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut times = Vec::with_capacity(runs.max(1));
        let mut cohorts = 0;
        for _ in 0..runs.max(1) {
            let t = std::time::Instant::now();
            let report = app::report::report(
                &mut conn,
                &app::report::ReportRequest::new("bench", options),
            )?;
            let text = emotionbench::export::report::render(
                &report,
                emotionbench::export::report::Format::Json,
            )?;
            times.push(t.elapsed().as_secs_f64());
            cohorts = report.cohorts.len();
            std::hint::black_box(text);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "report ({mode:?} mode, {cohorts} cohorts, read + score + statistics + JSON): median {:.3} s over {} runs (min {:.3}, max {:.3})",
            times[times.len() / 2],
            times.len(),
            times[0],
            times[times.len() - 1]
        );
    }
    Ok(())
}

/// A migrated SQLite database in a fresh temporary directory, for the benchmarks that generate
/// their own data; the directory is removed when it is dropped.
struct BenchDb {
    dir: PathBuf,
    pool: Option<db::Pool>,
}

impl BenchDb {
    fn new() -> anyhow::Result<BenchDb> {
        let dir = std::env::temp_dir().join(format!(
            "emotionbench-bench-{}-{}",
            std::process::id(),
            emotionbench::auth::password::random_secret(8)
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let pool = db::connect(&format!("sqlite://{}", dir.join("bench.db").display()), 2)?;
        db::migrate(&mut *pool.get()?)?;
        Ok(BenchDb {
            dir,
            pool: Some(pool),
        })
    }

    fn conn(&self) -> anyhow::Result<db::PooledConnection> {
        let pool = self
            .pool
            .as_ref()
            .context("the benchmark database is closed")?;
        Ok(pool.get()?)
    }
}

impl Drop for BenchDb {
    fn drop(&mut self) {
        // Close the connections before the files go.
        self.pool.take();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn parse_side(s: &str) -> Result<emotionbench::domain::split::Side, String> {
    emotionbench::domain::split::Side::parse(s)
        .ok_or_else(|| format!("unknown split side {s:?}: expected train or test"))
}
