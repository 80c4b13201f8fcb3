//! The report's methods and provenance block: which software made it and when, where each
//! cohort's observations came from (runs: model, provider, template, sampling parameters, seed,
//! item order, dates, trials done and failed), and which humans were included or excluded, and
//! why. Pure: the app layer reads the rows and passes them in; this module counts and words.

use serde::Serialize;

/// The version of the report's layout (Markdown, HTML, JSON, CSV): raised when a change makes
/// the same data render differently, so two reports of one version can be compared.
pub const REPORT_FORMAT: u32 = 1;

/// The software that made the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Software {
    pub name: String,
    pub version: String,
    /// The git commit HEAD was at when it was built, or "unknown" (built without git); `None`
    /// when a build label stands in for it (see [`Software::labelled`]).
    pub commit: Option<String>,
    /// A label given for the build instead of its commit (`--build-label`), so a report made
    /// by any build of this version regenerates byte for byte; `None`: the commit is stated.
    pub build_label: Option<String>,
    /// [`REPORT_FORMAT`].
    pub report_format: u32,
}

impl Software {
    /// This build.
    pub fn this_build() -> Software {
        Software {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commit: Some(env!("EMOTIONBENCH_COMMIT").to_owned()),
            build_label: None,
            report_format: REPORT_FORMAT,
        }
    }

    /// This build, named by `label` instead of its commit when a label is given.
    pub fn labelled(label: Option<&str>) -> Software {
        let mut s = Software::this_build();
        if let Some(label) = label {
            s.commit = None;
            s.build_label = Some(label.to_owned());
        }
        s
    }
}

/// The data a cohort's figures come from, identified by content: the number of rows the
/// report read and the BLAKE2s-256 of them in a canonical text form, sorted, so the same
/// answers give the same digest whatever the import order, backend or row ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Input {
    pub cohort: String,
    /// What a row is: "participants" or "trials".
    pub unit: String,
    pub rows: usize,
    pub blake2s256: String,
}

/// The [`Input`] of `rows` (one canonical line per participant or trial, any order).
pub fn input(cohort: &str, unit: &str, mut rows: Vec<String>) -> Input {
    use blake2::{Blake2s256, Digest};
    use std::fmt::Write;
    rows.sort_unstable();
    let mut hasher = Blake2s256::new();
    for row in &rows {
        hasher.update(row.as_bytes());
        hasher.update(b"\n");
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    Input {
        cohort: cohort.to_owned(),
        unit: unit.to_owned(),
        rows: rows.len(),
        blake2s256: hex,
    }
}

/// Clamps a recorded time (RFC 3339, UTC, seconds) to `epoch` when it is later, as the
/// reproducible-builds `SOURCE_DATE_EPOCH` convention does for timestamps newer than the
/// source ("clamping", https://reproducible-builds.org/docs/source-date-epoch/). Both are in
/// the same fixed format, so they compare as text.
pub fn clamp(time: Option<String>, epoch: Option<&str>) -> Option<String> {
    match (time, epoch) {
        (Some(t), Some(e)) if t.as_str() > e => Some(e.to_owned()),
        (t, _) => t,
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
    /// The language the run asked in (#20), as the methods block states it (`de`, or `en (the
    /// study's default)` for a run that named none in a study of several languages); `None`
    /// in a study of one language, whose runs all ask in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
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
/// pilot, on the split, and scored), `rules` those the study's exclusion rules left out (per
/// rule, a participant under each rule that applies, and how many in all), so the remainder of
/// the completed ones are the unscored.
pub fn humans(
    participants: &[Participant],
    included: usize,
    (rules, by_rules): (&[Count], usize),
) -> Humans {
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
    for r in rules {
        push(&mut excluded, r.reason.clone(), r.participants);
    }
    push(
        &mut excluded,
        "answers that do not score on the instrument or no situation".to_owned(),
        eligible.len().saturating_sub(included + by_rules),
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
    /// Set by `SOURCE_DATE_EPOCH`: every recorded time later than this one is stated as it.
    pub times_clamped_to: Option<String>,
    /// The alignment's seed and bootstrap resamples (also its ceiling splits).
    pub seed: u64,
    pub resamples: usize,
    /// Each cohort's data by content (humans first, then the models in report order).
    pub inputs: Vec<Input>,
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
    let build = match (&p.software.build_label, &p.software.commit) {
        (Some(label), _) => format!("build label {label}, commit not stated"),
        (None, Some(commit)) => format!("commit {commit}"),
        (None, None) => "commit unknown".to_owned(),
    };
    let mut out = vec![format!(
        "Software: {} {} ({build}); report format {}; generated {}.",
        p.software.name, p.software.version, p.software.report_format, p.generated_at
    )];
    if let Some(t) = &p.times_clamped_to {
        out.push(format!(
            "Times: SOURCE_DATE_EPOCH is set; recorded times after {t} are stated as {t}."
        ));
    }
    out.push(format!(
        "Alignment: seed {}, {} bootstrap resamples and as many human-ceiling splits.",
        p.seed, p.resamples
    ));
    if !p.inputs.is_empty() {
        let inputs: Vec<String> = p
            .inputs
            .iter()
            .map(|i| {
                let short = i.blake2s256.get(..16).unwrap_or(&i.blake2s256);
                format!("{}: {} {}, {short}", i.cohort, i.rows, i.unit)
            })
            .collect();
        // 16 of the 64 hex digits: enough to tell data apart on the page and short enough
        // not to widen a phone's page; the JSON has them all.
        out.push(format!(
            "Inputs (rows read and the BLAKE2s-256 of them, sorted, one per line; its first 16 \
             hex digits, all 64 in the JSON): {}.",
            inputs.join("; ")
        ));
    }
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
                    "run {} ({}; model {}, provider {}, template {}, {}temperature {}, top-p {}, \
                     seed {}, item order {}; {}; {} trials done, {} failed)",
                    r.run,
                    r.source,
                    r.model,
                    r.provider,
                    r.template,
                    r.language
                        .as_ref()
                        .map_or_else(String::new, |l| format!("language {l}, ")),
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
        let h = humans(&all, 2, (&[], 0));
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
    fn the_build_names_its_version_and_a_commit_or_the_label_given() {
        let s = Software::this_build();
        assert_eq!(s.version, env!("CARGO_PKG_VERSION"));
        assert!(s.commit.as_deref().is_some_and(|c| !c.is_empty()));
        assert_eq!(Software::labelled(None), s);
        let l = Software::labelled(Some("example"));
        assert_eq!(
            (l.commit, l.build_label.as_deref()),
            (None, Some("example"))
        );
        assert_eq!(l.report_format, REPORT_FORMAT);
    }

    #[test]
    fn an_input_is_named_by_its_rows_content_in_any_order() {
        let a = input("gpt-4", "trials", vec!["b".into(), "a".into()]);
        let b = input("gpt-4", "trials", vec!["a".into(), "b".into()]);
        assert_eq!(a, b);
        assert_eq!(a.rows, 2);
        // BLAKE2s-256 of "a\nb\n" (Python: hashlib.blake2s(b"a\nb\n").hexdigest()).
        assert_eq!(
            a.blake2s256,
            "d3f67d5154c2240368c185c24b55dcfb18fbacc431f4752dcec742b9f9d6694c"
        );
        assert_ne!(a, input("gpt-4", "trials", vec!["a".into(), "c".into()]));
        assert_eq!(input("x", "trials", Vec::new()).rows, 0);
    }

    #[test]
    fn later_times_clamp_to_the_epoch_and_earlier_ones_stay() {
        let e = Some("2026-01-01T00:00:00Z");
        assert_eq!(clamp(Some("2026-05-01T00:00:00Z".into()), e).as_deref(), e);
        assert_eq!(
            clamp(Some("2025-05-01T00:00:00Z".into()), e).as_deref(),
            Some("2025-05-01T00:00:00Z")
        );
        assert_eq!(clamp(None, e), None);
        assert_eq!(
            clamp(Some("2026-05-01T00:00:00Z".into()), None).as_deref(),
            Some("2026-05-01T00:00:00Z")
        );
    }
}
