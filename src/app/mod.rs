//! The use cases: one module per area, one function per use case, each with typed input,
//! running its transaction and writing its audit entry. The command line (`src/cli/`) and the
//! web handlers (`admin/`, `survey/`) call these, and nothing below them, for writes.

pub mod accounts;
pub mod cache;
pub mod demo;
pub mod doors;
pub mod error;
pub mod evidence;
pub mod exports;
pub mod freetext;
pub mod imports;
pub mod prolific;
pub mod report;
mod report_groups;
mod report_languages;
pub mod runs;
pub mod studies;
pub mod survey;

pub use error::{Error, Result};
