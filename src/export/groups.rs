//! The report's comparison by demographic group (#17) as tables: for each model cohort with
//! persona trials, one table by gender and one by age band, each group's mean change
//! (after − before) for the humans and the model, and model − humans, with both n.

use crate::domain::groups::{GroupBy, GroupComparison};
use crate::domain::report::{Report, signed};
use crate::export::table::{Numbered, TableRow};

/// The sentence above the tables: what is compared and the age bands used.
pub fn note(report: &Report) -> Option<String> {
    let g = report.groups.first()?;
    Some(format!(
        "Persona runs answer once as each participant (their gender, age, country, employment \
         and education), on the situation that person saw. Each group's Δ is the mean change \
         after − before the situation, per category; model − humans compares the two. Ages are \
         the year of taking part minus the year of birth, in the bands {}, then under 18 and \
         unknown.",
        g.age_bands.join(", ")
    ))
}

fn cell(x: Option<f64>) -> String {
    x.map(signed).unwrap_or_else(|| "–".to_owned())
}

fn table(g: &GroupComparison, by: GroupBy) -> Numbered {
    let what = match by {
        GroupBy::Gender => "gender",
        GroupBy::AgeBand => "age band",
    };
    let mut header = vec![what.to_owned(), "n humans".to_owned(), "n model".to_owned()];
    for c in &g.categories {
        header.push(format!("{c} Δ humans"));
        header.push(format!("{c} Δ model"));
        header.push(format!("{c} model − humans"));
    }
    let rows = g
        .rows
        .iter()
        .filter(|r| r.by == by)
        .map(|r| {
            let mut cells = vec![r.humans.n.to_string(), r.model.n.to_string()];
            for c in 0..g.categories.len() {
                cells.push(cell(r.humans.change.get(c).copied().flatten()));
                cells.push(cell(r.model.change.get(c).copied().flatten()));
                cells.push(cell(r.difference.get(c).copied().flatten()));
            }
            TableRow {
                label: r.group.clone(),
                cells,
            }
        })
        .collect();
    Numbered {
        caption: format!("{} as the participants, by {what}", g.cohort),
        header,
        rows,
    }
}

/// Two tables per compared cohort: by gender, then by age band.
pub fn tables(report: &Report) -> Vec<Numbered> {
    report
        .groups
        .iter()
        .flat_map(|g| [table(g, GroupBy::Gender), table(g, GroupBy::AgeBand)])
        .collect()
}
