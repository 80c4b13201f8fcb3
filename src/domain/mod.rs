//! Pure domain logic: no I/O, no diesel, no actix. Everything here is unit-tested.

pub mod assignment;
pub mod demo;
pub mod error;
pub mod humans;
pub mod instrument;
pub mod model_results;
pub mod parse;
pub mod prompt;
pub mod report;
pub mod run;
pub mod situation;
pub mod split;
pub mod stats;
pub mod study;
pub mod survey;

pub use error::ImportError;
