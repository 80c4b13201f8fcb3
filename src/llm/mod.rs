//! Running the protocol on LLMs: provider wire formats and clients with their limits, the
//! worker that executes trials from the database queue, and a fake provider for tests and the
//! benchmark.

pub mod batch;
pub mod client;
pub mod fake;
pub mod fake_batch;
pub mod profiles;
pub mod runner;
pub mod wire;
