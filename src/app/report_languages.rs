//! The report split by language (#20): each human and each model trial tagged with the
//! language it was taken or asked in, then `domain::by_language`. A participant without a
//! recorded language and a run that named none count as the study's default language.

use std::collections::HashMap;

use super::error::Result;
use super::report_groups::Scored;
use crate::domain::by_language::{ByLanguage, TaggedModel, split};
use crate::domain::language::Lang;
use crate::domain::report::{HumanObservation, ModelInput, Options, Trial};
use crate::store::studies::Study;
use crate::store::{DbConnection, RunId, runs};

/// What the split reads of the report's inputs.
pub struct Observed<'a> {
    /// The humans' observations and, index for index, who each is; `None` without humans.
    pub humans: Option<(&'a [HumanObservation], &'a [Scored])>,
    /// The model cohorts and, trial for trial, the run each trial came from.
    pub models: &'a [ModelInput],
    pub runs_of: &'a [Vec<RunId>],
}

/// The section, `None` for a study in one language. `keep` says which model trials the
/// report's tables count (the valence variants are not among them).
pub fn section(
    conn: &mut DbConnection,
    study: &Study,
    categories: &[String],
    observed: Observed<'_>,
    keep: impl Fn(&Trial) -> bool,
    options: Options,
) -> Result<Option<ByLanguage>> {
    let languages = study.languages();
    let [default, _, ..] = languages else {
        return Ok(None);
    };
    let humans = match observed.humans {
        None => None,
        Some((humans, scored)) => {
            let of: HashMap<_, _> = crate::store::report::participant_languages(conn, study.id)?
                .into_iter()
                .collect();
            Some(
                humans
                    .iter()
                    .zip(scored)
                    .map(|(h, (id, _, _))| {
                        let lang = of.get(id).cloned().flatten();
                        (lang.unwrap_or_else(|| default.clone()), h.clone())
                    })
                    .collect::<Vec<(Lang, HumanObservation)>>(),
            )
        }
    };
    let mut of_run: HashMap<RunId, Lang> = HashMap::new();
    let mut models = Vec::with_capacity(observed.models.len());
    for (m, run_ids) in observed.models.iter().zip(observed.runs_of) {
        let mut trials = Vec::with_capacity(m.trials.len());
        for (t, run) in m.trials.iter().zip(run_ids) {
            if !keep(t) {
                continue;
            }
            let lang = match of_run.get(run) {
                Some(l) => l.clone(),
                None => {
                    let l = runs::get(conn, *run)?
                        .map(|r| r.language())
                        .transpose()?
                        .flatten()
                        .unwrap_or_else(|| default.clone());
                    of_run.insert(*run, l.clone());
                    l
                }
            };
            trials.push((lang, t.clone()));
        }
        models.push(TaggedModel {
            name: m.name.clone(),
            trials,
        });
    }
    Ok(split(
        languages,
        categories,
        humans.as_deref(),
        &models,
        options,
    ))
}
