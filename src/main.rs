//! The `emotionbench` command: parses the command line and hands each command to its module
//! under `cli/` (options, run, printing).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

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
    Serve(cli::serve::ServeArgs),
    /// Run the embedded default: a SQLite database with a demo study, an admin account and the server.
    Demo(cli::demo::DemoArgs),
    /// Apply pending database migrations to DATABASE_URL.
    Migrate,
    /// Import situations or instruments from a file.
    #[command(subcommand)]
    Import(cli::import::ImportCommand),
    /// Questionnaires (instruments).
    #[command(subcommand)]
    Instruments(cli::catalog::InstrumentsCommand),
    /// Situation sets and their situations.
    #[command(subcommand)]
    Situations(cli::catalog::SituationsCommand),
    /// Studies: export or import a definition, duplicate, open or close.
    #[command(subcommand, alias = "study")]
    Studies(cli::study::StudiesCommand),
    /// Accounts of researchers and admins.
    #[command(subcommand)]
    Admin(cli::admin::AdminCommand),
    /// Data retention.
    #[command(subcommand)]
    Retention(cli::admin::RetentionCommand),
    /// Export a study as CSV (UTF-8, RFC 4180, ISO 8601 UTC), streamed in bounded memory, or
    /// fine-tuning JSONL from its split.
    Export(cli::export::ExportArgs),
    /// Split the completed participants of a study into train and test for fine-tuning:
    /// stratified by situation, seeded, recorded in the database (replacing an earlier split).
    Split(cli::export::SplitArgs),
    /// Create a model run and work it in the foreground (or `run resume ID`).
    Run(cli::runs::RunArgs),
    /// Model runs: list, show, pause, resume, cancel.
    #[command(subcommand)]
    Runs(cli::runs::RunsCommand),
    /// Work the trials of every active model run until stopped (SIGINT/SIGTERM).
    Worker(cli::runs::WorkerArgs),
    /// The response cache of model runs: export or import it as JSON lines.
    #[command(subcommand)]
    Cache(cli::runs::CacheCommand),
    /// Prompts as sent to models.
    #[command(subcommand)]
    Prompt(cli::prompt::PromptCommand),
    /// The alignment report of a study: humans and models side by side (paper Table 2 layout).
    Report(cli::report::ReportArgs),
    /// The repeats per condition a model run needs to detect an effect size (noncentral t).
    Plan(cli::plan::PlanArgs),
    /// Prolific: the draft, submissions, approve, reject, return, reconcile.
    #[command(subcommand)]
    Prolific(cli::prolific::ProlificCommand),
    /// Benchmarks and load generators (loopback only, bounded).
    #[command(subcommand)]
    Bench(cli::bench::BenchCommand),
}

/// mimalloc: the survey's many short-lived allocations cost less than with glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let settings = cli::settings(cli.config.as_deref(), cli.database_url.as_deref())?;
    match cli.command {
        Command::Serve(args) => cli::serve::run(settings, args),
        Command::Demo(args) => cli::demo::run(settings, args),
        Command::Migrate => cli::db::migrate(&settings),
        Command::Import(cmd) => cli::import::run(&settings, cmd),
        Command::Instruments(cmd) => cli::catalog::instruments(&settings, cmd),
        Command::Situations(cmd) => cli::catalog::situations(&settings, cmd),
        Command::Studies(cmd) => cli::study::run(&settings, cmd),
        Command::Admin(cmd) => cli::admin::run(&settings, cmd),
        Command::Retention(cmd) => cli::admin::retention(&settings, cmd),
        Command::Export(args) => cli::export::run(&settings, args),
        Command::Split(args) => cli::export::split(&settings, args),
        Command::Run(args) => cli::runs::run(settings, args),
        Command::Runs(cmd) => cli::runs::runs(&settings, cmd),
        Command::Worker(args) => cli::runs::worker(settings, args),
        Command::Cache(cmd) => cli::runs::cache(&settings, cmd),
        Command::Prompt(cmd) => cli::prompt::run(&settings, cmd),
        Command::Report(args) => cli::report::run(&settings, args),
        Command::Plan(args) => cli::plan::run(args),
        Command::Prolific(cmd) => cli::prolific::run(&settings, cmd),
        Command::Bench(cmd) => cli::bench::run(settings, cmd),
    }
}
