//! The report's methods and provenance block: which software made it and when, where each
//! cohort's observations came from (runs: model, provider, template, sampling parameters, seed,
//! item order, dates, trials done and failed), and which humans were included or excluded, and
//! why. Pure: the app layer reads the rows and passes them in; this module counts and words.

use serde::Serialize;

/// The software that made the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Software {
    pub name: String,
    pub version: String,
    /// The git commit HEAD was at when it was built, or "unknown" (built without git).
    pub commit: String,
}

impl Software {
    /// This build.
    pub fn this_build() -> Software {
        Software {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commit: env!("EMOTIONBENCH_COMMIT").to_owned(),
        }
    }
}

/// One run behind a model cohort.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSource {
    pub run: i64,
    /// "model run" (requests sent by emotionbench) or "imported results".
    pub source: String,
    pub model: String,
    pub provider: String,
    pub template: String,
    /// `None` for imported results: no request was sent, the parameters are not known.
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: i64,
    pub item_order: String,
    /// First and last finished trial (RFC 3339, UTC); for imported results the import time.
    pub first: Option<String>,
    pub last: Option<String>,
    pub trials_done: i64,
    pub trials_failed: i64,
}

/// Where a cohort's observations came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CohortSource {
    pub cohort: String,
    /// "humans", "model runs", "imported results" or "model runs and imported results".
    pub source: String,
    pub runs: Vec<RunSource>,
}

/// One participant as the census sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The survey status as stored (`completed`, `returned`, …).
    pub status: String,
    pub completed: bool,
    pub pilot: bool,
    /// On the report's side of the split (always true without a split).
    pub on_split: bool,
    pub failed_check: bool,
    pub straightline: bool,
    pub fast: bool,
    /// RFC 3339 completion time.
    pub completed_at: Option<String>,
}

/// A number of participants and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    pub reason: String,
    pub participants: usize,
}

/// The humans the report includes and those it leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Humans {
    pub included: usize,
    /// Excluded, by reason (each participant counted once, under the first reason that applies
    /// in this order: pilot, not completed, not on this split, answers that do not score).
    pub excluded: Vec<Count>,
    /// Included although flagged by the survey's quality checks (the report does not drop them).
    pub flagged: Vec<Count>,
    /// First and last completion among the included.
    pub first: Option<String>,
    pub last: Option<String>,
}

/// Counts the study's participants: `included` is how many the report used (completed, not
/// pilot, on the split, and scored), so the remainder of the completed ones are the unscored.
pub fn humans(participants: &[Participant], included: usize) -> Humans {
    let mut pilot = 0;
    let mut not_completed: std::collections::BTreeMap<String, usize> = Default::default();
    let mut off_split = 0;
    let mut eligible = Vec::new();
    for p in participants {
        if p.pilot {
            pilot += 1;
        } else if !p.completed {
            *not_completed.entry(p.status.clone()).or_default() += 1;
        } else if !p.on_split {
            off_split += 1;
        } else {
            eligible.push(p);
        }
    }
    let mut excluded = Vec::new();
    let push = |out: &mut Vec<Count>, reason: String, n: usize| {
        if n > 0 {
            out.push(Count {
                reason,
                participants: n,
            });
        }
    };
    push(&mut excluded, "pilot".to_owned(), pilot);
    for (status, n) in not_completed {
        push(&mut excluded, format!("not completed ({status})"), n);
    }
    push(&mut excluded, "not on this split".to_owned(), off_split);
    push(
        &mut excluded,
        "answers that do not score on the instrument or no situation".to_owned(),
        eligible.len().saturating_sub(included),
    );
    let mut flagged = Vec::new();
    let count = |f: fn(&Participant) -> bool| eligible.iter().filter(|p| f(p)).count();
    push(
        &mut flagged,
        "failed an attention check".to_owned(),
        count(|p| p.failed_check),
    );
    push(
        &mut flagged,
        "straight-lined".to_owned(),
        count(|p| p.straightline),
    );
    push(
        &mut flagged,
        "answered very fast".to_owned(),
        count(|p| p.fast),
    );
    let mut times: Vec<&String> = eligible
        .iter()
        .filter_map(|p| p.completed_at.as_ref())
        .collect();
    times.sort();
    Humans {
        included,
        excluded,
        flagged,
        first: times.first().map(|s| (*s).clone()),
        last: times.last().map(|s| (*s).clone()),
    }
}

/// The whole block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    pub software: Software,
    /// When the report was made (RFC 3339, UTC; `--generated-at` fixes it).
    pub generated_at: String,
    pub cohorts: Vec<CohortSource>,
    /// `None` without a human cohort.
    pub humans: Option<Humans>,
}

/// The words for a cohort's sources.
pub fn cohort_source(runs: &[RunSource]) -> String {
    let api = runs.iter().any(|r| r.source == "model run");
    let import = runs.iter().any(|r| r.source != "model run");
    match (api, import) {
        (true, true) => "model runs and imported results",
        (true, false) => "model runs",
        (false, true) => "imported results",
        (false, false) => "no runs",
    }
    .to_owned()
}

/// One line per fact, for the Markdown and HTML methods block (the JSON has the structure).
pub fn lines(p: &Provenance, scoring: &str) -> Vec<String> {
    let mut out = vec![format!(
        "Software: {} {} (commit {}); generated {}.",
        p.software.name, p.software.version, p.software.commit, p.generated_at
    )];
    out.push(format!("Scoring: {scoring}"));
    if let Some(h) = &p.humans {
        let list = |c: &[Count]| {
            c.iter()
                .map(|c| format!("{} {}", c.reason, c.participants))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(format!(
            "Humans: {} included{}; excluded: {}{}.",
            h.included,
            match (&h.first, &h.last) {
                (Some(a), Some(b)) => format!(" (completed {a} to {b})"),
                _ => String::new(),
            },
            if h.excluded.is_empty() {
                "none".to_owned()
            } else {
                list(&h.excluded)
            },
            if h.flagged.is_empty() {
                String::new()
            } else {
                format!("; included although flagged: {}", list(&h.flagged))
            }
        ));
    }
    let opt = |x: Option<f64>| x.map_or_else(|| "not recorded".to_owned(), |v| v.to_string());
    for c in &p.cohorts {
        let runs: Vec<String> = c
            .runs
            .iter()
            .map(|r| {
                format!(
                    "run {} ({}; model {}, provider {}, template {}, temperature {}, top-p {}, \
                     seed {}, item order {}; {}; {} trials done, {} failed)",
                    r.run,
                    r.source,
                    r.model,
                    r.provider,
                    r.template,
                    opt(r.temperature),
                    opt(r.top_p),
                    r.seed,
                    r.item_order,
                    match (r.source.as_str(), &r.first, &r.last) {
                        ("imported results", Some(t), _) => format!("imported {t}"),
                        (_, Some(a), Some(b)) => format!("trials finished {a} to {b}"),
                        _ => "no trial finished".to_owned(),
                    },
                    r.trials_done,
                    r.trials_failed
                )
            })
            .collect();
        out.push(format!("{}: {}: {}.", c.cohort, c.source, runs.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(status: &str, pilot: bool, on_split: bool, at: Option<&str>) -> Participant {
        Participant {
            status: status.to_owned(),
            completed: status == "completed",
            pilot,
            on_split,
            failed_check: false,
            straightline: false,
            fast: false,
            completed_at: at.map(str::to_owned),
        }
    }

    #[test]
    fn every_participant_is_counted_once_under_the_first_reason() {
        let mut flagged = p("completed", false, true, Some("2026-01-03T00:00:00Z"));
        flagged.failed_check = true;
        let all = vec![
            p("completed", false, true, Some("2026-01-02T00:00:00Z")),
            flagged,
            p("completed", false, true, Some("2026-01-05T00:00:00Z")),
            // A pilot who also did not complete: counted as pilot only.
            p("in_progress", true, true, None),
            p("returned", false, true, None),
            p("returned", false, false, None),
            p("completed", false, false, Some("2026-01-01T00:00:00Z")),
        ];
        // Two of the three eligible scored.
        let h = humans(&all, 2);
        assert_eq!(h.included, 2);
        let got: Vec<(&str, usize)> = h
            .excluded
            .iter()
            .map(|c| (c.reason.as_str(), c.participants))
            .collect();
        assert_eq!(
            got,
            [
                ("pilot", 1),
                ("not completed (returned)", 2),
                ("not on this split", 1),
                (
                    "answers that do not score on the instrument or no situation",
                    1
                ),
            ]
        );
        assert_eq!(h.flagged.len(), 1);
        assert_eq!(h.flagged[0].participants, 1);
        // Dates of the eligible only: the off-split participant's earlier date is not used.
        assert_eq!(h.first.as_deref(), Some("2026-01-02T00:00:00Z"));
        assert_eq!(h.last.as_deref(), Some("2026-01-05T00:00:00Z"));
    }

    #[test]
    fn the_build_names_its_version_and_a_commit() {
        let s = Software::this_build();
        assert_eq!(s.version, env!("CARGO_PKG_VERSION"));
        assert!(!s.commit.is_empty());
    }
}
