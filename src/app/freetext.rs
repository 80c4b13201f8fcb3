//! Free-text tasks and their scores (#18): importing tasks, queueing a run's answers for a
//! scorer, and the report's numbers (default vs evoked score per emotion and overall).

use std::collections::HashMap;
use std::path::Path;

use crate::domain::freetext::{self, parse_tasks};
use crate::domain::freetext_report::{self, Cohort, Example, FreeTextReport, Scored};
use crate::domain::prompt::Measure;
use crate::domain::run::TrialStatus;
use crate::store::audit::{self, Actor};
use crate::store::{DbConnection, RunId, instruments, runs, situations, text_scores};

use super::error::{Error, Result, invalid};
use super::imports::Upload;

/// Imports free-text tasks (a JSON list of `{"key", "prompt", "targets"}`) as instruments of
/// the free-text kind, with the audit entry, in one transaction.
pub fn import_tasks(
    conn: &mut DbConnection,
    path: &Path,
) -> Result<Vec<(String, instruments::Outcome)>> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    import_tasks_from(conn, &file, &Actor::Cli)
}

pub fn import_tasks_from(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    actor: &Actor,
) -> Result<Vec<(String, instruments::Outcome)>> {
    let list = parse_tasks(file.text()?).map_err(|e| file.malformed(e))?;
    super::imports::store_instruments(conn, file, actor, &list, ("import.freetext", "tasks"))
}

/// Checks that every run exists and is a free-text run.
fn free_text_runs(conn: &mut DbConnection, ids: &[RunId]) -> Result<Vec<runs::Run>> {
    if ids.is_empty() {
        return Err(invalid("name at least one run (--run ID)"));
    }
    ids.iter()
        .map(|&id| {
            let run = runs::get(conn, id)?.ok_or(Error::NoRun(id.0))?;
            if run.template != freetext::RUN_TEMPLATE {
                return Err(invalid(format!(
                    "run {id} is not a free-text run (its instrument is a rated questionnaire)"
                )));
            }
            Ok(run)
        })
        .collect()
}

/// Queues the done answers of these runs for `scorer` (those not queued yet), with the audit
/// entry; returns how many were queued now.
pub fn queue_scores(
    conn: &mut DbConnection,
    ids: &[RunId],
    scorer: &str,
    actor: &Actor,
) -> Result<usize> {
    free_text_runs(conn, ids)?;
    conn.write_transaction(|conn| {
        let mut queued = 0;
        for &run in ids {
            queued += text_scores::enqueue(conn, run, scorer)?;
        }
        audit::record(
            conn,
            actor,
            "scores.queue",
            Some(scorer),
            Some(&serde_json::json!({
                "runs": ids.iter().map(|r| r.0).collect::<Vec<_>>(),
                "answers": queued,
            })),
        )?;
        Ok(queued)
    })
}

/// Examples shown per emotion.
const EXAMPLES: usize = 3;
/// The bootstrap seed (fixed: the report reproduces).
const SEED: u64 = 18;

/// The report: per run, default vs evoked scores per emotion (in the set's order) and overall.
pub fn report(conn: &mut DbConnection, ids: &[RunId], scorer: &str) -> Result<FreeTextReport> {
    let list = free_text_runs(conn, ids)?;
    let mut versions = Vec::new();
    let mut cohorts = Vec::new();
    for run in list {
        let task = instruments::get(conn, run.instrument_id)?;
        let (emotion_of, emotions) = match run.situation_set_id {
            Some(set) => {
                let all = situations::list(conn, set)?;
                let mut order: Vec<String> = Vec::new();
                for s in &all {
                    if !order.contains(&s.situation.emotion) {
                        order.push(s.situation.emotion.clone());
                    }
                }
                let map: HashMap<String, String> = all
                    .into_iter()
                    .map(|s| (s.situation.key, s.situation.emotion))
                    .collect();
                (map, order)
            }
            None => (HashMap::new(), Vec::new()),
        };
        let rows = text_scores::of_runs(conn, &[run.id], scorer)?;
        let done_trials = runs::trials(conn, run.id)?
            .into_iter()
            .filter(|t| t.status == TrialStatus::Done)
            .count();
        let mut answers = Vec::new();
        for r in rows {
            let (Some(score), Some(text)) = (r.score, r.text) else {
                continue;
            };
            if let Some(v) = &r.scorer_version {
                if !versions.contains(v) {
                    versions.push(v.clone());
                }
            }
            let target = r
                .item_order
                .0
                .first()
                .and_then(|&n| task.item(n))
                .map(|i| i.text.clone())
                .unwrap_or_default();
            answers.push(Scored {
                measure: r.measure,
                emotion: match r.measure {
                    Measure::Default => None,
                    Measure::Evoked => emotion_of.get(&r.situation_key).cloned(),
                },
                situation_key: r.situation_key,
                target,
                refused: freetext::refusal_phrase(&text).is_some(),
                text,
                score,
            });
        }
        let comparisons = freetext_report::compare(&answers, &emotions, SEED);
        let examples = freetext_report::top_scored(&answers, &emotions, EXAMPLES)
            .into_iter()
            .map(|(label, xs)| {
                let xs = xs
                    .into_iter()
                    .map(|a| Example {
                        situation: a.situation_key.clone(),
                        target: a.target.clone(),
                        score: a.score,
                        text: a.text.clone(),
                    })
                    .collect();
                (label, xs)
            })
            .collect();
        cohorts.push(Cohort {
            run: run.id.0,
            model: run.model,
            task: task.key,
            comparisons,
            examples,
            unscored: done_trials.saturating_sub(answers.len()),
            scored: answers.len(),
        });
    }
    Ok(FreeTextReport {
        scorer: scorer.to_owned(),
        versions,
        cohorts,
        refusal_rule: format!(
            "an answer is a refusal when it contains one of {} listed phrases ({}), case-insensitive",
            freetext::REFUSAL_PHRASES.len(),
            freetext::REFUSAL_PHRASES
                .iter()
                .map(|p| format!("\"{p}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        seed: SEED,
    })
}
