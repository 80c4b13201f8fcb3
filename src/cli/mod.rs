//! The binary's model-run commands (the library does the work; these parse, drive and print).

pub mod bench;
pub mod work;
