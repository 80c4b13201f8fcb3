//! `bench runner`: placeholder until the benchmark lands.

use emotionbench::Settings;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Latency of every fake reply, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    latency_ms: u64,
}

pub fn runner(_settings: Settings, _args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
