//! Errors shared by the pure importers of the domain layer.

use std::fmt;

/// A malformed input file: where the problem is and why.
///
/// `location` names the place precisely enough for a researcher to find it:
/// `"line 14"`, `"record 3 (BDI)"`, `"column Anger-7"`, `"record 2, field \"reverse\""`.
/// The file name is added by the caller (the CLI knows it; the parser does not).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ImportError {
    pub location: String,
    pub reason: String,
}

impl ImportError {
    pub fn new(location: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            location: location.into(),
            reason: reason.into(),
        }
    }

    /// A file that is not the JSON expected, located at serde_json's line and column; `what`
    /// says what was expected ("JSON", "translation", "custom template"). serde_json appends
    /// the position to its message; it goes into the location instead.
    pub(crate) fn json(e: &serde_json::Error, what: &str) -> Self {
        if e.line() == 0 {
            return Self::new("document", e.to_string());
        }
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let reason = message.strip_suffix(&suffix).unwrap_or(&message);
        Self::new(
            format!("line {}, column {}", e.line(), e.column()),
            format!("invalid {what}: {reason}"),
        )
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.reason)
    }
}
