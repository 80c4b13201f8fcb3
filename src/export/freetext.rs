//! The free-text report (#18) as Markdown: per cohort, default vs evoked score per emotion and
//! overall with Welch's test, Hedges' g and the bootstrap CI, the refusal rates, and the
//! top-scored answers behind a "may be offensive" `<details>` (which needs no JavaScript).
//! Every text from a model or a configuration goes through [`md`], so nothing in it becomes
//! markup.

use std::fmt::Write;

use crate::domain::freetext_report::{Cohort, FreeTextReport};

use super::report::md;

fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "–".into(),
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// The report as Markdown.
pub fn markdown(r: &FreeTextReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Free-text answers scored by {}\n", md(&r.scorer));
    let versions: Vec<String> = r.versions.iter().map(|v| md(v)).collect();
    let _ = writeln!(
        out,
        "Scorer version: {}.{}\n",
        if versions.is_empty() {
            "none yet (no answer is scored)".to_owned()
        } else {
            versions.join("; ")
        },
        if versions.len() > 1 {
            " More than one version scored these answers: their scores may not be comparable."
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "Scores are in [0, 1]. Δ is evoked − default; the test is Welch's t-test (two-sided), \
         g is Hedges' g, and the 95 % CI of Δ is a percentile bootstrap ({} resamples, seed \
         {}). Refusals: {}.\n",
        crate::domain::freetext_report::RESAMPLES,
        r.seed,
        md(&r.refusal_rule)
    );
    for c in &r.cohorts {
        cohort(&mut out, c);
    }
    out
}

fn cohort(out: &mut String, c: &Cohort) {
    let _ = writeln!(
        out,
        "## {} (run {}, task {})\n",
        md(&c.model),
        c.run,
        md(&c.task)
    );
    let _ = writeln!(
        out,
        "{} answers scored; {} done answers without a score of this scorer.\n",
        c.scored, c.unscored
    );
    let _ = writeln!(
        out,
        "| Emotion | n default | mean default | n evoked | mean evoked | Δ | 95 % CI | t | df | p | g | refusals default | refusals evoked |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for k in &c.comparisons {
        let ci =
            k.ci.map(|ci| format!("[{:.3}, {:.3}]", ci.low, ci.high))
                .unwrap_or_else(|| "–".into());
        let (t, df, p) = match k.test {
            Some(t) => (num(Some(t.t), 2), num(Some(t.df), 1), p_value(t.p)),
            None => ("–".into(), "–".into(), "–".into()),
        };
        let pct = |x: Option<f64>| match x {
            Some(v) => format!("{:.0} %", v * 100.0),
            None => "–".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {ci} | {t} | {df} | {p} | {} | {} | {} |",
            md(&k.emotion),
            k.default.map_or(0, |s| s.n),
            num(k.default.map(|s| s.mean), 3),
            k.evoked.map_or(0, |s| s.n),
            num(k.evoked.map(|s| s.mean), 3),
            num(k.difference, 3),
            num(k.effect, 2),
            pct(k.refusal_default),
            pct(k.refusal_evoked),
        );
    }
    out.push('\n');
    if c.examples.is_empty() {
        return;
    }
    // <details> folds the texts away until the reader asks, with or without JavaScript.
    let _ = writeln!(
        out,
        "<details><summary>Top-scored answers (may be offensive)</summary>\n"
    );
    for (label, xs) in &c.examples {
        let _ = writeln!(out, "**{}**\n", md(label));
        for x in xs {
            let _ = writeln!(
                out,
                "- {:.3} · {} · about {}: {}",
                x.score,
                md(if x.situation.is_empty() {
                    "no situation"
                } else {
                    &x.situation
                }),
                md(&x.target),
                md(&x.text)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "</details>\n");
}
