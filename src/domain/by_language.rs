//! The report split by language (#20): for each of a study's languages, the humans who took
//! part in it beside the model runs that asked in it, each with the overall change per
//! instrument category and its test — the report's own cells (`domain::change`), computed over
//! that language's observations only. A study in one language has no split.
//!
//! Humans are tested paired (after − before, `d_z`), models two-sample by mode (default
//! against evoked trials, Hedges' g), at the report's α. Nothing is corrected for
//! multiplicity: as in the report, a correction applies to the factor rows, and these are
//! overall rows.

use serde::Serialize;

use super::change::{CategoryResult, decide, human_category, model_category, unit_values};
use super::language::Lang;
use super::observation::{Condition, HumanObservation, Options, Trial};

/// One cohort (the humans, or a model cohort) in one language.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub cohort: String,
    /// Participants (humans) or scored trials (models) in the language.
    pub n: usize,
    /// Model trials in the language that failed (excluded); 0 for humans.
    pub failed: usize,
    /// Per category, the overall change and its test.
    pub categories: Vec<CategoryResult>,
}

/// One language: the humans who took the study in it, and each model cohort with trials
/// asked in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LanguageRow {
    pub language: String,
    /// The study's default language (runs that named none and participants without a
    /// recorded language count as it).
    pub default: bool,
    /// `None` when the report has no humans (its instrument is not theirs).
    pub humans: Option<Side>,
    /// The model cohorts with at least one trial in the language, in the report's order.
    pub models: Vec<Side>,
}

/// The section: the categories, then one row per language.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByLanguage {
    pub categories: Vec<String>,
    pub languages: Vec<LanguageRow>,
}

/// A model cohort's trials, each with the language of the run it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedModel {
    pub name: String,
    pub trials: Vec<(Lang, Trial)>,
}

fn human_side(categories: &[String], humans: &[&HumanObservation], alpha: f64) -> Side {
    let cells = categories
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let (before, after): (Vec<f64>, Vec<f64>) = humans
                .iter()
                .filter_map(|h| Some((*h.before.get(c)?, *h.after.get(c)?)))
                .unzip();
            let mut r = human_category(name, &before, &after);
            decide(&mut r, alpha);
            r
        })
        .collect();
    Side {
        cohort: "humans".to_owned(),
        n: humans.len(),
        failed: 0,
        categories: cells,
    }
}

fn model_side(name: &str, categories: &[String], trials: &[&Trial], options: Options) -> Side {
    let mut defaults: Vec<&[f64]> = Vec::new();
    let mut evoked: Vec<(i64, &[f64])> = Vec::new();
    let mut failed = 0;
    for t in trials {
        match (&t.scores, t.condition) {
            (None, _) => failed += 1,
            (Some(s), Condition::Default) => defaults.push(s.as_slice()),
            (Some(s), Condition::Evoked { situation, .. }) => {
                evoked.push((situation, s.as_slice()))
            }
        }
    }
    let cells = categories
        .iter()
        .enumerate()
        .map(|(c, cat)| {
            let d: Vec<f64> = defaults.iter().filter_map(|s| s.get(c).copied()).collect();
            let e = unit_values(
                evoked.iter().filter_map(|(s, v)| Some((*s, *v.get(c)?))),
                options.unit,
            );
            let mut r = model_category(cat, &d, &e, options);
            decide(&mut r, options.alpha);
            r
        })
        .collect();
    Side {
        cohort: name.to_owned(),
        n: defaults.len() + evoked.len(),
        failed,
        categories: cells,
    }
}

/// The split of a report by language: `languages` are the study's (its default first), then
/// any other a participant or run recorded (a language since removed from the study), in the
/// order met. `humans` is `None` when the report has none; each observation and trial carries
/// its language, the default already put where none was recorded. `None` with fewer than two
/// languages: the split would repeat the report.
pub fn split(
    languages: &[Lang],
    categories: &[String],
    humans: Option<&[(Lang, HumanObservation)]>,
    models: &[TaggedModel],
    options: Options,
) -> Option<ByLanguage> {
    let mut all: Vec<&Lang> = languages.iter().collect();
    let seen = humans
        .unwrap_or_default()
        .iter()
        .map(|(l, _)| l)
        .chain(models.iter().flat_map(|m| m.trials.iter().map(|(l, _)| l)));
    for l in seen {
        if !all.contains(&l) {
            all.push(l);
        }
    }
    if all.len() < 2 {
        return None;
    }
    let rows = all
        .into_iter()
        .map(|lang| {
            let humans = humans.map(|h| {
                let members: Vec<&HumanObservation> = h
                    .iter()
                    .filter(|(l, _)| l == lang)
                    .map(|(_, o)| o)
                    .collect();
                human_side(categories, &members, options.alpha)
            });
            let models = models
                .iter()
                .filter_map(|m| {
                    let trials: Vec<&Trial> = m
                        .trials
                        .iter()
                        .filter(|(l, _)| l == lang)
                        .map(|(_, t)| t)
                        .collect();
                    (!trials.is_empty()).then(|| model_side(&m.name, categories, &trials, options))
                })
                .collect();
            LanguageRow {
                language: lang.to_string(),
                default: languages.first() == Some(lang),
                humans,
                models,
            }
        })
        .collect();
    Some(ByLanguage {
        categories: categories.to_vec(),
        languages: rows,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::domain::stats;

    fn lang(t: &str) -> Lang {
        Lang::parse(t).unwrap()
    }

    fn human(l: &str, before: f64, after: f64) -> (Lang, HumanObservation) {
        (
            lang(l),
            HumanObservation {
                factor: 0,
                before: vec![before, 10.0],
                after: vec![after, 10.0],
            },
        )
    }

    fn trial(l: &str, evoked: Option<i64>, score: Option<f64>) -> (Lang, Trial) {
        (
            lang(l),
            Trial {
                condition: match evoked {
                    Some(situation) => Condition::Evoked {
                        factor: 0,
                        situation,
                    },
                    None => Condition::Default,
                },
                scores: score.map(|s| vec![s, 10.0]),
            },
        )
    }

    fn cats() -> Vec<String> {
        vec!["PA".into(), "NA".into()]
    }

    #[test]
    fn each_language_has_its_own_humans_and_the_runs_asked_in_it() {
        let humans = [
            human("en", 10.0, 14.0),
            human("en", 10.0, 12.0),
            human("en", 11.0, 16.0),
            human("de", 20.0, 19.0),
            human("de", 20.0, 17.0),
        ];
        let model = TaggedModel {
            name: "m".into(),
            trials: vec![
                trial("de", None, Some(10.0)),
                trial("de", None, Some(12.0)),
                trial("de", Some(1), Some(20.0)),
                trial("de", Some(2), Some(22.0)),
                trial("de", Some(2), None),
            ],
        };
        let split = split(
            &[lang("en"), lang("de")],
            &cats(),
            Some(&humans[..]),
            &[model],
            Options::default(),
        )
        .unwrap();
        assert_eq!(split.languages.len(), 2);
        let en = &split.languages[0];
        assert_eq!((en.language.as_str(), en.default), ("en", true));
        let h = en.humans.as_ref().unwrap();
        assert_eq!(h.n, 3);
        // The mean change of the three English participants, paired, at the default α.
        let pa = &h.categories[0];
        assert!((pa.delta.unwrap() - 11.0 / 3.0).abs() < 1e-12, "{pa:?}");
        let t = stats::paired_t(&[10.0, 10.0, 11.0], &[14.0, 12.0, 16.0]).unwrap();
        assert_eq!(pa.t, Some(t.t));
        assert_eq!(pa.test, "paired");
        assert_eq!(h.categories[1].delta, Some(0.0));
        assert!(!h.categories[1].significant);
        // No run asked in English: no model beside the English humans.
        assert!(en.models.is_empty());
        let de = &split.languages[1];
        assert!(!de.default);
        assert_eq!(de.humans.as_ref().unwrap().n, 2);
        assert_eq!(de.humans.as_ref().unwrap().categories[0].delta, Some(-2.0));
        let m = &de.models[0];
        assert_eq!((m.cohort.as_str(), m.n, m.failed), ("m", 4, 1));
        assert_eq!(m.categories[0].delta, Some(21.0 - 11.0));
        assert_eq!(m.categories[0].test, "welch");
        assert!(m.categories[0].p.is_some());
    }

    #[test]
    fn one_language_has_no_split_and_a_recorded_other_language_gets_its_row() {
        let humans = [human("en", 1.0, 2.0)];
        assert_eq!(
            split(
                &[lang("en")],
                &cats(),
                Some(&humans[..]),
                &[],
                Options::default()
            ),
            None
        );
        // A participant in a language the study no longer lists still counts, in their own.
        let humans = [human("en", 1.0, 2.0), human("fr", 1.0, 3.0)];
        let split = split(
            &[lang("en")],
            &cats(),
            Some(&humans[..]),
            &[],
            Options::default(),
        )
        .unwrap();
        let names: Vec<&str> = split
            .languages
            .iter()
            .map(|l| l.language.as_str())
            .collect();
        assert_eq!(names, ["en", "fr"]);
        assert_eq!(split.languages[1].humans.as_ref().unwrap().n, 1);
    }

    #[test]
    fn without_humans_only_the_models_are_split() {
        let model = TaggedModel {
            name: "m".into(),
            trials: vec![trial("en", None, Some(1.0)), trial("de", None, Some(2.0))],
        };
        let split = split(
            &[lang("en"), lang("de")],
            &cats(),
            None,
            &[model],
            Options::default(),
        )
        .unwrap();
        assert!(split.languages.iter().all(|l| l.humans.is_none()));
        assert_eq!(split.languages[0].models[0].n, 1);
        assert_eq!(split.languages[0].models[0].categories[0].delta, None);
    }
}
