//! The one error type of the use cases. A variant either names a problem of the request (the
//! message is for the person who made it) or wraps the lower layer's error as its source.

use std::path::PathBuf;

use crate::auth::password::HashError;
use crate::domain::ImportError;
use crate::export::ExportError;
use crate::store::StoreError;

/// Why a use case did not happen. Nothing of it is stored unless the variant says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A malformed file: the place and the reason.
    #[error("{}: {}: {}", path.display(), error.location, error.reason)]
    Import { path: PathBuf, error: ImportError },
    /// The store refused a file's content (not a source: the message already carries it, and
    /// `{:#}` would print it twice).
    #[error("{}: {error}", path.display())]
    Rejected { path: PathBuf, error: StoreError },
    #[error("there is no study {0:?}")]
    NoStudy(String),
    #[error("no run {0}")]
    NoRun(i64),
    #[error("there is no instrument {0:?}")]
    NoInstrument(String),
    /// The request is not valid (the message says why, for the person who made it).
    #[error("{0}")]
    Invalid(String),
    #[error("study {0:?} has no situation set, so its answers have no emotions or factors")]
    NoSituationSet(String),
    #[error("study {study:?} has no runs of model {model:?} (it has: {have})")]
    UnknownModel {
        study: String,
        model: String,
        have: String,
    },
    #[error("study {study:?} has no run {run}")]
    UnknownRun {
        study: String,
        run: crate::store::RunId,
    },
    #[error("run {run} is on instrument {has}, not {wanted}: compare runs on one instrument")]
    RunInstrument {
        run: crate::store::RunId,
        has: String,
        wanted: String,
    },
    #[error("study {0:?} has no split: run `emotionbench split` first")]
    NoSplit(String),
    /// A Prolific request that did not succeed (the message says what Prolific answered).
    #[error(transparent)]
    Prolific(crate::prolific::ProlificError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Export(#[from] ExportError),
    #[error(transparent)]
    Hash(#[from] HashError),
}

impl From<diesel::result::Error> for Error {
    fn from(e: diesel::result::Error) -> Self {
        Error::Store(e.into())
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid(message.into())
}

/// The result of a use case.
pub type Result<T, E = Error> = std::result::Result<T, E>;
