//! The binary's commands: one module per command group, each with its clap options, its `run`
//! and its printing. They call the library (`app` for writes) and never `main.rs`.

pub mod admin;
pub mod bench;
pub mod bench_runner;
pub mod catalog;
pub mod db;
pub mod demo;
pub mod export;
pub mod freetext;
pub mod import;
pub mod plan;
pub mod prolific;
pub mod prompt;
pub mod report;
pub mod runs;
pub mod serve;
pub mod signals;
pub mod study;

use std::path::Path;

use emotionbench::Settings;

/// The settings (defaults < config file < environment < `--database-url`), and logging
/// started with their filter.
pub fn settings(config: Option<&Path>, database_url: Option<&str>) -> anyhow::Result<Settings> {
    let mut s = Settings::load(config, |k| std::env::var(k).ok())?;
    if let Some(url) = database_url {
        s.database_url = url.to_owned();
    }
    init_tracing(&s.log);
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

/// Creates (or truncates) an output file readable by its owner only: exports and reports hold
/// participants' data, and a umask of 022 would make them world-readable. An existing file is
/// narrowed to 0600 as well, since its old readers should not see the new contents.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
    )?;
    Ok(file)
}

/// Writes `bytes` to a new owner-only file (see [`create_private`]).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = create_private(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
