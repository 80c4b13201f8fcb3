//! Operations shared by the command line and (later) the admin pages: read a file, parse it
//! with the pure domain importers, store it in one transaction.

use std::path::{Path, PathBuf};

use diesel::Connection;

use crate::auth::password;
use crate::domain::demo::demo_study;
use crate::domain::instrument::parse_questionnaires_json;
use crate::domain::situation::parse_situations;
use crate::domain::study::{StudyConfig, StudyStatus};
use crate::domain::{ImportError, situation::SituationFormat};
use crate::store::{
    self, DbConnection, StoreError, audit, instruments, situations, studies, users,
};

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A malformed file: the place and the reason. Nothing was stored.
    #[error("{}: {}: {}", path.display(), error.location, error.reason)]
    Import { path: PathBuf, error: ImportError },
    #[error("{}: {source}", path.display())]
    Rejected {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Hash(#[from] password::HashError),
}

fn read(path: &Path) -> Result<String, OpsError> {
    let bytes = std::fs::read(path).map_err(|source| OpsError::Read {
        path: path.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| OpsError::Import {
        path: path.to_owned(),
        error: ImportError::new(
            format!("byte {}", e.utf8_error().valid_up_to()),
            "the file is not UTF-8 text",
        ),
    })
}

/// The default set name: the file's stem (`situations.json` and `situations.csv` are one set).
pub fn default_set_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "situations".into())
}

pub fn import_situations(
    conn: &mut DbConnection,
    path: &Path,
    set: Option<&str>,
) -> Result<(SituationFormat, situations::ImportSummary), OpsError> {
    let text = read(path)?;
    let file = parse_situations(&text).map_err(|error| OpsError::Import {
        path: path.to_owned(),
        error,
    })?;
    let set = set
        .map(str::to_owned)
        .unwrap_or_else(|| default_set_name(path));
    let source = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let summary = conn
        .transaction(|conn| {
            let summary = situations::import(conn, &set, &source, &file.situations)?;
            audit::record(
                conn,
                &audit::Actor::Cli,
                "import.situations",
                Some(&set),
                Some(
                    &serde_json::json!({"file": source, "situations": summary.situations.total()}),
                ),
            )?;
            Ok::<_, StoreError>(summary)
        })
        .map_err(|source| OpsError::Rejected {
            path: path.to_owned(),
            source,
        })?;
    Ok((file.format, summary))
}

pub fn import_instruments(
    conn: &mut DbConnection,
    path: &Path,
) -> Result<Vec<(String, instruments::Outcome)>, OpsError> {
    let text = read(path)?;
    let list = parse_questionnaires_json(&text).map_err(|error| OpsError::Import {
        path: path.to_owned(),
        error,
    })?;
    let source = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    conn.transaction(|conn| {
        let outcomes = instruments::import(conn, &list)?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "import.instruments",
            None,
            Some(&serde_json::json!({"file": source, "instruments": outcomes.len()})),
        )?;
        Ok::<_, StoreError>(outcomes)
    })
    .map_err(|source| OpsError::Rejected {
        path: path.to_owned(),
        source,
    })
}

/// What loading the demo did.
#[derive(Debug, Clone)]
pub struct DemoSetup {
    pub study_slug: String,
    pub study_created: bool,
    /// Set only when the admin account was created now: the password is shown once.
    pub admin: Option<(String, String)>,
}

pub const DEMO_ADMIN_EMAIL: &str = "admin@localhost";

/// Loads the demo study once, and creates an admin with a random password when there is none.
pub fn load_demo(conn: &mut DbConnection) -> Result<DemoSetup, OpsError> {
    let demo = demo_study();
    let study_created = conn.transaction(|conn| {
        if store::studies::find(conn, demo.slug)?.is_some() {
            return Ok::<_, StoreError>(false);
        }
        let instrument = instruments::ensure_builtin(conn)?;
        situations::import(
            conn,
            demo.situation_set,
            "demo (written by the emotionbench team)",
            &demo.situations,
        )?;
        let set = situations::find_set(conn, demo.situation_set)?
            .ok_or_else(|| StoreError::Corrupt("demo set vanished".into()))?;
        let mut config = StudyConfig::new(demo.slug, demo.title);
        config.consent_text = demo.consent_text.to_owned();
        config.debrief_text = demo.debrief_text.to_owned();
        config.target_per_situation = 5;
        config.min_situation_seconds = 5;
        let seed = rand::random::<u32>() as i64;
        studies::create(
            conn,
            &config,
            StudyStatus::Open,
            instrument,
            Some(set),
            seed,
        )?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "study.create",
            Some(demo.slug),
            None,
        )?;
        Ok(true)
    })?;
    let admin = if users::count_admins(conn).map_err(StoreError::from)? == 0 {
        let secret = password::random_secret(20);
        let hash = password::hash(&secret)?;
        conn.transaction(|conn| {
            users::create(conn, DEMO_ADMIN_EMAIL, &hash, users::Role::Admin)?;
            audit::record(
                conn,
                &audit::Actor::Cli,
                "user.create",
                Some(DEMO_ADMIN_EMAIL),
                None,
            )?;
            Ok::<_, StoreError>(())
        })?;
        Some((DEMO_ADMIN_EMAIL.to_owned(), secret))
    } else {
        None
    };
    Ok(DemoSetup {
        study_slug: demo.slug.to_owned(),
        study_created,
        admin,
    })
}
