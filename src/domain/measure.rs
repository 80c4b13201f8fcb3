//! The one measure of the benchmark: a trial, a response or a report column is taken either
//! at baseline (`default`) or after imagining a situation (`evoked`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which emotion measure a trial takes: the baseline, or after imagining a situation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    Default,
    Evoked,
}

impl Measure {
    /// As stored (`model_trials.measure`, `responses.phase`) and written in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Default => "default",
            Measure::Evoked => "evoked",
        }
    }

    /// A stored value, exactly as [`Measure::as_str`] writes it.
    pub fn parse(s: &str) -> Option<Measure> {
        [Measure::Default, Measure::Evoked]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Measure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Measure::parse(&t).ok_or_else(|| {
            format!(
                "unknown measure {s:?}: expected \"{}\" or \"{}\"",
                Measure::Default.as_str(),
                Measure::Evoked.as_str()
            )
        })
    }
}
