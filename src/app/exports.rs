//! Exports (CSV and fine-tuning JSONL) and the train/test split they read, each with its
//! audit entry.

use super::error::{Error, Result};
use crate::store::{self, DbConnection, StoreError, audit, studies};

/// The export files: three CSVs of a study, and the fine-tuning JSONL of one side of its split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportKind {
    /// One row per participant x phase x item.
    Long,
    /// One row per participant.
    Wide,
    /// Every column of long and wide: label, type, allowed values, meaning.
    Codebook,
    /// Fine-tuning JSONL from one side of the study's split (see `emotionbench split`).
    Finetune,
}

impl ExportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportKind::Long => "long",
            ExportKind::Wide => "wide",
            ExportKind::Codebook => "codebook",
            ExportKind::Finetune => "finetune",
        }
    }
}

/// Which participants an export asks for: the store's selection by status and pilots, and
/// a language tag (#20, `--language`) that must be one of the study's.
#[derive(Debug, Clone, Copy)]
pub struct Filter<'a> {
    pub status: store::cohorts::StatusFilter,
    pub pilots: bool,
    /// Only those who took the study in this language; the study's default takes in the
    /// participants without a recorded language too (they saw its texts).
    pub language: Option<&'a str>,
}

/// The store's selection for `filter`, the language checked against the study's (a page
/// checks it before streaming, so a refusal is an error page, not a cut-off file).
pub fn selection(
    conn: &mut DbConnection,
    slug: &str,
    filter: Filter<'_>,
) -> Result<store::cohorts::Selection> {
    let language = match filter.language {
        None => None,
        Some(asked) => {
            let study = studies::load(conn, slug)
                .map_err(StoreError::from)?
                .ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
            super::runs::study_language(&study, Some(asked))?.map(|tag| {
                store::cohorts::LanguageFilter {
                    with_unrecorded: study.languages().first() == Some(&tag),
                    tag,
                }
            })
        }
    };
    Ok(store::cohorts::Selection {
        status: filter.status,
        pilots: filter.pilots,
        language,
    })
}

/// Streams one export of the study `slug` into `out` and records it in the audit log. Text
/// cells are formula-neutralised unless `cells` is `Raw` (see `export::cells`); the audit entry
/// says which.
#[allow(clippy::too_many_arguments)]
pub fn export(
    conn: &mut DbConnection,
    slug: &str,
    kind: ExportKind,
    filter: Filter<'_>,
    cells: crate::export::Cells,
    actor: &audit::Actor,
    out: impl std::io::Write,
) -> Result<crate::export::ExportStats> {
    let study = studies::find(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
    let filter = selection(conn, slug, filter)?;
    let language = filter.language.as_ref().map(|l| l.tag.to_string());
    let stats = match kind {
        ExportKind::Long => crate::export::write_long(conn, study.id, filter, cells, out)?,
        ExportKind::Wide => {
            // The evidence needs every completed participant (each is the others' reference),
            // so it is computed once before the rows stream.
            let full = studies::load(conn, slug)
                .map_err(StoreError::from)?
                .ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
            let evidence =
                super::evidence::study_evidence(conn, &full, crate::store::evidence::Scope::All)?;
            crate::export::write_wide(conn, study.id, filter, cells, &evidence, out)?
        }
        ExportKind::Codebook => crate::export::write_codebook(conn, study.id, cells, out)?,
        // Its records come from a split side in a format: `export_finetune` takes both.
        ExportKind::Finetune => {
            return Err(super::error::invalid(
                "the fine-tuning export needs a split side and a format: use export_finetune",
            ));
        }
    };
    audit::record(
        conn,
        actor,
        &format!("export.{}", kind.as_str()),
        Some(slug),
        Some(&serde_json::json!({
            "rows": stats.rows,
            "participants": stats.participants,
            "raw_cells": cells == crate::export::Cells::Raw,
            "language": language,
        })),
    )
    .map_err(StoreError::from)?;
    Ok(stats)
}

/// A recorded split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOutcome {
    pub train: usize,
    pub test: usize,
    pub strata: usize,
}

/// Splits the completed participants of study `slug` into train and test (`test` of them),
/// stratified by situation and seeded (`domain::split`), and records it in `participants.split`
/// and the audit log (with the seed). Running it again with the same seed gives the same split.
pub fn split_study(
    conn: &mut DbConnection,
    slug: &str,
    test: usize,
    seed: u64,
) -> Result<SplitOutcome> {
    use crate::domain::split::{Member, Side, assign};
    conn.write_transaction(|conn| {
        let study = studies::load(conn, slug)?
            .ok_or_else(|| StoreError::Conflict(format!("there is no study {slug:?}")))?;
        let members: Vec<Member> = store::cohorts::completed_strata(conn, study.id)?
            .into_iter()
            .map(|(id, key)| Member {
                id: id.0,
                stratum: key.unwrap_or_default(),
            })
            .collect();
        let strata = members
            .iter()
            .map(|m| m.stratum.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let assignment = assign(&members, test, seed).map_err(StoreError::Conflict)?;
        let assignment: Vec<_> = assignment
            .into_iter()
            .map(|(id, side)| (store::ParticipantId(id), side))
            .collect();
        store::cohorts::record_split(conn, study.id, &assignment)?;
        let test = assignment.iter().filter(|a| a.1 == Side::Test).count();
        let outcome = SplitOutcome {
            train: assignment.len() - test,
            test,
            strata,
        };
        audit::record(
            conn,
            &audit::Actor::Cli,
            "split",
            Some(slug),
            Some(&serde_json::json!({
                "seed": seed,
                "test": outcome.test,
                "train": outcome.train,
                "strata": strata,
                "stratified_by": "situation_key",
            })),
        )?;
        Ok(outcome)
    })
}

/// Writes the fine-tuning JSONL of one side of study `slug`'s split (see `export::finetune`)
/// and records the export in the audit log.
pub fn export_finetune(
    conn: &mut DbConnection,
    slug: &str,
    side: crate::domain::split::Side,
    format: crate::export::finetune::FinetuneFormat,
    actor: &audit::Actor,
    out: impl std::io::Write,
) -> Result<crate::export::ExportStats> {
    let study = studies::load(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
    let stats = crate::export::finetune::write_finetune(
        conn,
        study.id,
        study.instrument_id,
        side,
        format,
        out,
    )?;
    if stats.participants == 0 {
        return Err(Error::Store(StoreError::Conflict(format!(
            "no completed participant of study {slug} is on the {} side of a split (run \
             `emotionbench split --study {slug} --test N --seed S` first)",
            side.as_str()
        ))));
    }
    audit::record(
        conn,
        actor,
        "export.finetune",
        Some(slug),
        Some(&serde_json::json!({
            "split": side.as_str(),
            "records": stats.rows,
            "participants": stats.participants,
        })),
    )
    .map_err(StoreError::from)?;
    Ok(stats)
}
