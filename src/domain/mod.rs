//! Pure domain logic: no I/O, no diesel, no actix. Everything here is unit-tested.

pub mod account;
pub mod alignment;
pub mod archive;
pub mod assignment;
pub mod bootstrap;
pub mod by_language;
pub mod cache;
pub mod change;
pub mod demo;
pub mod distance;
pub mod distribution;
pub mod door;
pub mod error;
pub mod evidence;
pub mod freetext;
pub mod freetext_report;
pub mod groups;
pub mod humans;
pub mod instrument;
pub mod instrument_text;
pub mod language;
pub mod measure;
pub mod model_results;
pub mod observation;
pub mod parse;
pub mod power;
pub mod prolific;
pub mod prolific_token;
pub mod prompt;
pub mod protocol;
pub mod provenance;
pub mod psychometrics;
pub mod rate;
pub mod reliability;
pub mod report;
pub mod run;
pub mod situation;
pub mod split;
pub mod stats;
pub mod study;
pub mod survey;
pub mod valence;

pub use error::ImportError;

/// Test support shared by the domain's unit tests.
#[cfg(test)]
pub(crate) mod testdata {
    use std::path::PathBuf;

    /// The upstream EmotionBench data: `$EMOTIONBENCH_UPSTREAM_DATA`, or `shared/emotionbench`
    /// beside the checkout (never committed to this repository).
    pub fn dir() -> PathBuf {
        std::env::var_os("EMOTIONBENCH_UPSTREAM_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/emotionbench")
            })
    }

    /// One upstream file, or `None` with a skip message; under `CI=true` its absence fails.
    pub fn upstream(relative: &str) -> Option<String> {
        let path = dir().join(relative);
        match std::fs::read_to_string(&path) {
            Ok(content) => Some(content),
            Err(err) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "EmotionBench data missing on CI: {}: {err}",
                    path.display()
                );
                eprintln!("SKIPPED: {} not available ({err})", path.display());
                None
            }
        }
    }
}
