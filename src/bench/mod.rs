//! Benchmarks and load generators (`emotionbench bench …`). Figures live here, not in tests.

pub mod cpu;
pub mod survey;
pub mod tempdb;
