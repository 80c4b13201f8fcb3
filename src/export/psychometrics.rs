//! The report's psychometrics block (#16, point 4) as numbered tables for Markdown and HTML
//! and as CSV columns: reliability (cohort × measure rows, α and ω per category), the
//! item-position effect (mean answer per displayed position, one column per cohort whose
//! orders vary) and test–retest (ICC(1) per category). The numbers are
//! `domain::reliability`'s; this module only lays them out. Cohort and category names are
//! data: the Markdown writer escapes them and askama escapes them in HTML.

use crate::domain::measure::Measure;
use crate::domain::reliability::Psychometrics;
use crate::domain::report::{Cohort, Report};
use crate::export::table::{Numbered, TableRow};

/// The block: its tables (numbered from the caller's next number) and the sentences that
/// say what is missing and why.
pub struct Block {
    pub tables: Vec<Numbered>,
    pub notes: Vec<String>,
}

fn three(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"))
}

fn with(report: &Report) -> impl Iterator<Item = (&Cohort, &Psychometrics)> {
    report
        .cohorts
        .iter()
        .filter_map(|c| Some((c, c.psychometrics.as_ref()?)))
}

/// The tables, numbered from `first`, and the notes.
pub fn block(report: &Report, first: usize) -> Block {
    let mut tables = Vec::new();
    let mut notes = Vec::new();
    let mut next = first;
    if let Some(t) = reliability_table(report, next, &mut notes) {
        tables.push(t);
        next += 1;
    }
    if let Some(t) = position_table(report, next, &mut notes) {
        tables.push(t);
        next += 1;
    }
    if let Some(t) = retest_table(report, next, &mut notes) {
        tables.push(t);
    }
    Block { tables, notes }
}

fn reliability_table(report: &Report, number: usize, notes: &mut Vec<String>) -> Option<Numbered> {
    let categories: Vec<String> = with(report)
        .flat_map(|(_, p)| p.reliability.iter().map(|r| r.category.clone()))
        .fold(Vec::new(), |mut acc, c| {
            if !acc.contains(&c) {
                acc.push(c);
            }
            acc
        });
    let mut header = vec!["Cohort, measure".to_owned(), "n".to_owned()];
    for c in &categories {
        header.push(format!("{c} α"));
        header.push(format!("{c} ω"));
    }
    let mut rows = Vec::new();
    for (cohort, p) in with(report) {
        for measure in [Measure::Default, Measure::Evoked] {
            let entries: Vec<_> = p
                .reliability
                .iter()
                .filter(|r| r.measure == measure)
                .collect();
            if entries.is_empty() {
                continue;
            }
            let n = entries.iter().map(|e| e.respondents).max().unwrap_or(0);
            let mut cells = vec![n.to_string()];
            for c in &categories {
                let e = entries.iter().find(|e| e.category == *c);
                cells.push(three(e.and_then(|e| e.alpha)));
                cells.push(three(e.and_then(|e| e.omega)));
                if let Some(e) = e {
                    for (what, reason) in [("α", &e.alpha_missing), ("ω", &e.omega_missing)] {
                        if let Some(reason) = reason {
                            notes.push(format!(
                                "{}, {measure}, {c}: no {what}: {reason}.",
                                cohort.name
                            ));
                        }
                    }
                }
            }
            rows.push(TableRow {
                label: format!("{}, {measure}", cohort.name),
                cells,
            });
        }
    }
    (!rows.is_empty()).then(|| Numbered {
        caption: format!(
            "Table {number}. Reliability per cohort and measure (default: humans before, model \
             default trials; evoked: humans after, model evoked trials pooled over situations): \
             Cronbach's α and McDonald's ω (one factor, principal axes) per category, \
             reverse-keyed items reversed, respondents with every answer (n); n/a: not \
             computable (see the notes)."
        ),
        header,
        rows,
    })
}

fn position_table(report: &Report, number: usize, notes: &mut Vec<String>) -> Option<Numbered> {
    let mut shuffled = Vec::new();
    let mut without = Vec::new();
    for (cohort, p) in with(report) {
        if p.item_position.shuffled {
            shuffled.push((cohort, &p.item_position));
        } else {
            without.push((cohort.name.as_str(), p.item_position.note.as_str()));
        }
    }
    notes.extend(grouped(&without, "no item-position effect"));
    let positions = shuffled
        .iter()
        .flat_map(|(_, ip)| ip.positions.iter().map(|p| p.position))
        .max()?;
    let mut header = vec!["Position shown".to_owned()];
    header.extend(shuffled.iter().map(|(c, _)| c.name.clone()));
    let mut rows: Vec<TableRow> = (1..=positions)
        .map(|position| TableRow {
            label: position.to_string(),
            cells: shuffled
                .iter()
                .map(|(_, ip)| {
                    three(
                        ip.positions
                            .iter()
                            .find(|p| p.position == position)
                            .map(|p| p.mean),
                    )
                })
                .collect(),
        })
        .collect();
    rows.push(TableRow {
        label: "Spread (max − min)".to_owned(),
        cells: shuffled.iter().map(|(_, ip)| three(ip.spread)).collect(),
    });
    Some(Numbered {
        caption: format!(
            "Table {number}. Item-position effect: the mean raw answer at each displayed \
             position, over responses whose item orders were shuffled (each item appears at \
             every position alike, so differences between rows are the position's effect)."
        ),
        header,
        rows,
    })
}

fn retest_table(report: &Report, number: usize, notes: &mut Vec<String>) -> Option<Numbered> {
    let mut rows = Vec::new();
    let mut categories: Vec<String> = Vec::new();
    let mut without = Vec::new();
    for (cohort, p) in with(report) {
        let t = &p.test_retest;
        if t.categories.is_empty() || t.prompts == 0 {
            without.push((cohort.name.as_str(), t.note.as_str()));
            continue;
        }
        for c in &t.categories {
            if !categories.contains(&c.category) {
                categories.push(c.category.clone());
            }
            if let Some(reason) = &c.missing {
                notes.push(format!(
                    "{}, {}: no ICC(1): {reason}.",
                    cohort.name, c.category
                ));
            }
        }
        rows.push((cohort, t));
    }
    notes.extend(grouped(&without, "no test–retest"));
    if rows.is_empty() {
        return None;
    }
    let mut header = vec!["Cohort".to_owned(), "Prompts × repeats".to_owned()];
    header.extend(categories.iter().map(|c| format!("{c} ICC(1)")));
    let rows = rows
        .into_iter()
        .map(|(cohort, t)| {
            let mut cells = vec![format!("{} × {}", t.prompts, t.repeats)];
            cells.extend(categories.iter().map(|name| {
                let c = t.categories.iter().find(|c| c.category == *name);
                let value = three(c.and_then(|c| c.icc1));
                match c.and_then(|c| Some((c.ci_low?, c.ci_high?))) {
                    Some((lo, hi)) => format!("{value} ({lo:.3}, {hi:.3})"),
                    None => value,
                }
            }));
            TableRow {
                label: cohort.name.clone(),
                cells,
            }
        })
        .collect();
    Some(Numbered {
        caption: format!(
            "Table {number}. Test–retest over repeats of the same prompt: ICC(1), one-way \
             random effects, single measure (Shrout and Fleiss 1979), with its 95 % CI in \
             parentheses (F distribution), of the report's category scores; prompts with \
             fewer than the common number of scored repeats left out."
        ),
        header,
        rows,
    })
}

/// One note per reason, naming every cohort it applies to ("humans, gpt-4: what: why.").
fn grouped(cohorts: &[(&str, &str)], what: &str) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for &(name, reason) in cohorts {
        match reasons.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(name),
            None => reasons.push((reason, vec![name])),
        }
    }
    reasons
        .into_iter()
        .map(|(reason, names)| format!("{}: {what}: {reason}.", names.join(", ")))
        .collect()
}

/// The CSV's psychometrics columns, appended to every row of a cohort × category.
pub const CSV_COLUMNS: [&str; 5] = [
    "reliability_alpha_default",
    "reliability_omega_default",
    "reliability_alpha_evoked",
    "reliability_omega_evoked",
    "test_retest_icc1",
];

/// The cells of [`CSV_COLUMNS`] for one cohort's category (empty where not computable, as the
/// CSV's other missing numbers).
pub fn csv_cells(cohort: &Cohort, category: &str) -> [String; 5] {
    let num = |x: Option<f64>| x.map(|v| format!("{v:?}")).unwrap_or_default();
    let Some(p) = &cohort.psychometrics else {
        return Default::default();
    };
    let entry = |m: Measure| {
        p.reliability
            .iter()
            .find(|r| r.measure == m && r.category == category)
    };
    let (d, e) = (entry(Measure::Default), entry(Measure::Evoked));
    let icc = p
        .test_retest
        .categories
        .iter()
        .find(|c| c.category == category)
        .and_then(|c| c.icc1);
    [
        num(d.and_then(|r| r.alpha)),
        num(d.and_then(|r| r.omega)),
        num(e.and_then(|r| r.alpha)),
        num(e.and_then(|r| r.omega)),
        num(icc),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::reliability::{Keying, Prompt, Response, psychometrics};
    use crate::domain::report::Kind;

    #[test]
    fn one_note_per_reason_names_every_cohort() {
        let notes = grouped(&[("a", "why"), ("b", "other"), ("c", "why")], "no x");
        assert_eq!(notes, ["a, c: no x: why.", "b: no x: other."]);
    }

    /// The CSV cells are the cohort's numbers for that category, empty where there is none.
    #[test]
    fn csv_cells_carry_the_cohorts_coefficients() {
        let keying = Keying {
            categories: vec![("A".into(), vec![0, 1])],
            reverse: vec![false, false],
            reverse_constant: 6,
        };
        let responses: Vec<Response> = [[1, 2], [2, 2], [3, 4], [4, 5], [5, 5], [2, 1]]
            .iter()
            .enumerate()
            .map(|(i, a)| Response {
                measure: Measure::Evoked,
                answers: a.to_vec(),
                scores: vec![f64::from(a[0] + a[1])],
                shown: None,
                prompt: Some(Prompt {
                    run: 1,
                    situation: Some((i / 2) as i64),
                    repeat: (i % 2) as i32,
                }),
            })
            .collect();
        let p = psychometrics(&keying, &responses);
        let mut cohort = Cohort {
            name: "m".into(),
            kind: Kind::Model,
            observations: 6,
            failed_trials: 0,
            groups: Vec::new(),
            psychometrics: None,
        };
        assert_eq!(csv_cells(&cohort, "A"), <[String; 5]>::default());
        cohort.psychometrics = Some(p.clone());
        let cells = csv_cells(&cohort, "A");
        // No default responses: empty; evoked α, ω and ICC(1) as computed.
        assert_eq!((cells[0].as_str(), cells[1].as_str()), ("", ""));
        let evoked = &p.reliability[1];
        assert_eq!(cells[2], format!("{:?}", evoked.alpha.unwrap()));
        assert_eq!(cells[3], format!("{:?}", evoked.omega.unwrap()));
        let icc = p.test_retest.categories[0].icc1.unwrap();
        assert_eq!(cells[4], format!("{icc:?}"));
        assert_eq!(csv_cells(&cohort, "B")[2], "");
    }
}
