//! The report's valence section (#18) as a table, its sentences and its caveat: each
//! cohort's Δ after the situations and after their variants of another valence, paired by
//! situation (`domain::valence`).

use crate::domain::report::{Report, signed};
use crate::export::table::{Numbered, TableRow};

/// The section: its numbered table, one sentence per row, the pairs and the caveat.
pub struct Block {
    pub table: Numbered,
    pub verdicts: Vec<String>,
    /// `original → variant (valence)`, one per pair.
    pub pairs: Vec<String>,
    pub caveat: String,
}

fn fixed(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
}

fn p_cell(p: Option<f64>) -> String {
    match p {
        None => "n/a".to_owned(),
        Some(p) if p < 0.001 => "< 0.001".to_owned(),
        Some(p) => format!("{p:.3}"),
    }
}

/// `None` when the report has no valence comparison (a set without variants).
pub fn block(report: &Report, number: usize) -> Option<Block> {
    let v = report.valence.as_ref()?;
    let header = [
        "Cohort",
        "Valences",
        "Category",
        "Situations",
        "Δ original",
        "Δ variant",
        "Δo − Δv",
        "95% CI",
        "t",
        "df",
        "p",
        "d_z",
        "",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows = v
        .rows
        .iter()
        .map(|r| TableRow {
            label: r.cohort.clone(),
            cells: vec![
                format!("{} vs {}", r.original_valence, r.variant_valence),
                r.category.clone(),
                r.pairs.to_string(),
                r.delta_original.map_or_else(|| "n/a".to_owned(), signed),
                r.delta_variant.map_or_else(|| "n/a".to_owned(), signed),
                r.difference.map_or_else(|| "n/a".to_owned(), signed),
                match (r.ci_low, r.ci_high) {
                    (Some(l), Some(h)) => format!("{} to {}", signed(l), signed(h)),
                    _ => "n/a".to_owned(),
                },
                fixed(r.t, 2),
                fixed(r.df, 0),
                p_cell(r.p),
                fixed(r.dz, 2),
                if r.significant { "*" } else { "" }.to_owned(),
            ],
        })
        .collect();
    Some(Block {
        table: Numbered {
            caption: format!(
                "Table {number}. Valence control: Δ after the situations and after their \
                 variants of another valence, paired by situation (Δo − Δv, its 95% t \
                 interval, paired t-test, d_z; * p < α = {})",
                report.alpha
            ),
            header,
            rows,
        },
        verdicts: v
            .rows
            .iter()
            .map(|r| format!("{}: {}", r.cohort, r.verdict))
            .collect(),
        pairs: v
            .pairs
            .iter()
            .map(|p| {
                format!(
                    "{} ({}) → {} ({})",
                    p.original_key, p.original_valence, p.variant_key, p.variant_valence
                )
            })
            .collect(),
        caveat: v.caveat.clone(),
    })
}
