//! The report split by language (#20) as tables: one per language, the humans who took the
//! study in it and the model cohorts whose runs asked in it, each with n and, per category,
//! the overall change Δ and its test.

use crate::domain::by_language::{LanguageRow, Side};
use crate::domain::change::CategoryResult;
use crate::domain::report::Report;
use crate::export::table::{Numbered, TableRow};

/// The sentence above the tables: who counts in which language, and what is tested.
pub fn note(report: &Report) -> Option<String> {
    let split = report.by_language.as_ref()?;
    let default = split
        .languages
        .iter()
        .find(|l| l.default)
        .map_or("", |l| l.language.as_str());
    Some(format!(
        "Each language's humans are the participants who took the study in it; its models are \
         the runs that asked in it (run --language). A run that named no language, and a \
         participant without a recorded one, count as the study's default language, {default}. \
         Δ is the overall change over every situation (after − before, paired, for the humans; \
         evoked − default trials for the models, tested as in the report's tables), \
         significant at p ≤ {}; the effect size is d_z for the humans, Hedges' g for the models.",
        report.alpha
    ))
}

fn test_cell(x: &CategoryResult) -> String {
    match (x.t, x.df) {
        (Some(t), Some(df)) => format!("{} t({df:.1}) = {t:.2}", x.test),
        _ => "none".to_owned(),
    }
}

fn row(side: &Side, categories: usize) -> TableRow {
    let mut cells = vec![side.n.to_string()];
    for c in 0..categories {
        match side.categories.get(c) {
            Some(x) => {
                cells.push(x.cell());
                cells.push(test_cell(x));
                cells.push(x.p.map_or_else(|| "–".to_owned(), |p| format!("{p:.3}")));
                cells.push(
                    x.effect_size
                        .map_or_else(|| "–".to_owned(), |e| format!("{e:.2}")),
                );
            }
            None => cells.extend(["n/a", "none", "–", "–"].map(str::to_owned)),
        }
    }
    TableRow {
        label: side.cohort.clone(),
        cells,
    }
}

fn table(l: &LanguageRow, categories: &[String]) -> Numbered {
    let mut header = vec!["cohort".to_owned(), "n".to_owned()];
    for c in categories {
        header.push(format!("{c} Δ"));
        header.push(format!("{c} test"));
        header.push(format!("{c} p"));
        header.push(format!("{c} effect size"));
    }
    let rows = l
        .humans
        .iter()
        .chain(&l.models)
        .map(|s| row(s, categories.len()))
        .collect();
    let default = if l.default {
        " (the study's default)"
    } else {
        ""
    };
    let models = if l.models.is_empty() {
        "; no model run asked in it"
    } else {
        ""
    };
    Numbered {
        caption: format!("In {}{default}{models}", l.language),
        header,
        rows,
    }
}

/// One table per language, the study's default first.
pub fn tables(report: &Report) -> Vec<Numbered> {
    report
        .by_language
        .iter()
        .flat_map(|s| s.languages.iter().map(|l| table(l, &s.categories)))
        .collect()
}
