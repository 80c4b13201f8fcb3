//! The released EmotionBench model answers (`results/PANAS Test/<model>-PANAS-testing.csv`):
//! one column per trial, `General_test-{t}_order-{k}` for the default measure and
//! `{Emotion}-{f}_scenario-{s}_test-{t}_order-{k}` for the evoked one; row 1 holds the prompt
//! or situation text, the next rows the item scores in canonical order. Pure parser.

use super::ImportError;
use super::instrument::Instrument;

pub use super::measure::Measure;

/// One column of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedTrial {
    pub column: String,
    pub measure: Measure,
    /// Empty for the default measure.
    pub situation_key: String,
    pub repeat: u32,
    /// Row 1: the prompt (default) or the situation text (evoked).
    pub text: String,
    /// The cells as found, canonical item order.
    pub cells: Vec<String>,
    /// Scores when every cell is a whole number in range; otherwise why not.
    pub scores: Result<Vec<i32>, String>,
}

/// Splits a column name into measure, situation key and repeat.
pub fn parse_column(name: &str) -> Result<(Measure, String, u32), String> {
    let bad = || {
        format!(
            "column {name:?} is neither General_test-T_order-K nor Emotion-F_scenario-S_test-T_order-K"
        )
    };
    let (rest, order) = name.rsplit_once("_order-").ok_or_else(bad)?;
    let order: u32 = order.parse().map_err(|_| bad())?;
    if order != 0 {
        // order-k > 0 would be a shuffled item order the file does not record.
        return Err(format!(
            "column {name:?}: only order-0 (canonical item order) is supported"
        ));
    }
    let (head, test) = rest.rsplit_once("_test-").ok_or_else(bad)?;
    let repeat: u32 = test.parse().map_err(|_| bad())?;
    if head == "General" {
        return Ok((Measure::Default, String::new(), repeat));
    }
    let (emotion, rest) = head.split_once('-').ok_or_else(bad)?;
    let (f, s) = rest.split_once("_scenario-").ok_or_else(bad)?;
    let f: u32 = f.parse().map_err(|_| bad())?;
    let s: u32 = s.parse().map_err(|_| bad())?;
    if !super::situation::EMOTIONS.contains(&emotion) {
        return Err(format!("column {name:?}: unknown emotion {emotion:?}"));
    }
    Ok((
        Measure::Evoked,
        format!("{emotion}-{f}_scenario-{s}"),
        repeat,
    ))
}

fn scores(cells: &[String], instrument: &Instrument) -> Result<Vec<i32>, String> {
    if cells.iter().all(|c| c.trim().is_empty()) {
        return Err("no answers (empty column)".into());
    }
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let t = c.trim();
            match t.parse::<i32>() {
                Ok(v) if v >= instrument.min && v <= instrument.max => Ok(v),
                Ok(v) => Err(format!(
                    "item {}: {v} is outside {}..={}",
                    i + 1,
                    instrument.min,
                    instrument.max
                )),
                Err(_) => Err(format!("item {}: {t:?} is not a whole number", i + 1)),
            }
        })
        .collect()
}

/// Equal up to case and runs of whitespace.
fn same_text(a: &str, b: &str) -> bool {
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

/// Parses a results file. Structural problems (bad header, wrong number of rows, duplicate
/// columns) are errors; a column whose answers are empty or not numbers becomes a trial with
/// `scores = Err(reason)`, to be kept as a failed parse.
pub fn parse_results_csv(
    text: &str,
    instrument: &Instrument,
) -> Result<Vec<ImportedTrial>, ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, r) in reader.records().enumerate() {
        let r = r.map_err(|e| ImportError::new(format!("line {}", i + 1), e.to_string()))?;
        rows.push(r.iter().map(str::to_owned).collect());
    }
    let n = instrument.items.len();
    let Some(header) = rows.first() else {
        return Err(ImportError::new("line 1", "the file is empty"));
    };
    if rows.len() < n + 2 {
        return Err(ImportError::new(
            format!("line {}", rows.len()),
            format!(
                "expected a header, a text row and {n} item rows ({} lines), found {}",
                n + 2,
                rows.len()
            ),
        ));
    }
    if header.first().map(String::as_str) != Some("question-0") {
        return Err(ImportError::new(
            "line 1",
            "the first column is not question-0: not an EmotionBench results file",
        ));
    }
    // Exactly n item rows: a file for a longer scale must not pass as a shorter one.
    if let Some(extra) = rows[n + 2..]
        .iter()
        .position(|r| r.iter().any(|c| !c.trim().is_empty()))
    {
        return Err(ImportError::new(
            format!("line {}", n + 3 + extra),
            format!(
                "more item rows than the {n} items of instrument {}: the file is for another \
                 instrument (choose it with --instrument)",
                instrument.key
            ),
        ));
    }
    // The order-0 column numbers the item rows; they must be the canonical 1..n, and
    // question-0 must name the instrument's item ("N. text", as upstream writes it).
    for (i, row) in rows[2..n + 2].iter().enumerate() {
        let found = row.first().map_or("", |s| s.as_str());
        let expected = format!("{}. {}", i + 1, instrument.items[i].text);
        if !same_text(found, &expected) {
            return Err(ImportError::new(
                format!("line {}", i + 3),
                format!(
                    "item text {found:?} is not item {} of instrument {} ({expected:?}): the \
                     file is for another instrument (choose it with --instrument)",
                    i + 1,
                    instrument.key
                ),
            ));
        }
        let number = row.get(1).map_or("", |s| s.trim());
        if number != (i + 1).to_string() {
            return Err(ImportError::new(
                format!("line {}", i + 3),
                format!(
                    "item number {number:?} in column order-0, expected {}",
                    i + 1
                ),
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (c, name) in header.iter().enumerate().skip(2) {
        let (measure, situation_key, repeat) =
            parse_column(name).map_err(|e| ImportError::new("line 1", e))?;
        if !seen.insert((measure, situation_key.clone(), repeat)) {
            return Err(ImportError::new(
                "line 1",
                format!("column {name:?} appears twice"),
            ));
        }
        let cell = |r: usize| rows[r].get(c).cloned().unwrap_or_default();
        let cells: Vec<String> = (2..n + 2).map(cell).collect();
        out.push(ImportedTrial {
            column: name.clone(),
            measure,
            situation_key,
            repeat,
            text: cell(1),
            scores: scores(&cells, instrument),
            cells,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn column_names_give_measure_situation_and_repeat() {
        assert_eq!(
            parse_column("General_test-49_order-0").unwrap(),
            (Measure::Default, String::new(), 49)
        );
        assert_eq!(
            parse_column("Embarrassment-3_scenario-4_test-9_order-0").unwrap(),
            (Measure::Evoked, "Embarrassment-3_scenario-4".into(), 9)
        );
        assert!(parse_column("General_test-1_order-2").is_err());
        assert!(parse_column("Happy-0_scenario-0_test-0_order-0").is_err());
        assert!(parse_column("order-0").is_err());
    }

    #[test]
    fn empty_and_garbled_columns_become_failed_trials() {
        let p = Instrument::panas();
        let mut lines = vec![
            "question-0,order-0,General_test-0_order-0,Anger-0_scenario-0_test-0_order-0,Anger-0_scenario-0_test-1_order-0".to_owned(),
            "prompt,prompt, ,situation,situation".to_owned(),
        ];
        for i in 1..=20 {
            let bad = if i == 5 { "x" } else { "3" };
            let text = &p.items[i - 1].text;
            lines.push(format!("{i}. {text},{i},2,,{bad}"));
        }
        let t = parse_results_csv(&lines.join("\n"), &p).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].scores, Ok(vec![2; 20]));
        assert_eq!(t[0].measure, Measure::Default);
        assert!(t[1].scores.as_ref().unwrap_err().contains("empty"));
        assert!(t[2].scores.as_ref().unwrap_err().contains("item 5"));
        assert_eq!(t[2].situation_key, "Anger-0_scenario-0");
        assert_eq!(t[2].repeat, 1);
    }

    /// A PANAS-shaped file (20 items, 1..=5) for another instrument's checks.
    fn panas_file(items: usize, text: impl Fn(usize) -> String, value: &str) -> String {
        let mut lines = vec![
            "question-0,order-0,General_test-0_order-0".to_owned(),
            "prompt,prompt, ".to_owned(),
        ];
        for i in 1..=items {
            lines.push(format!("\"{i}. {}\",{i},{value}", text(i)));
        }
        lines.join("\n")
    }

    #[test]
    fn a_file_for_another_instrument_is_rejected() {
        let p = Instrument::panas();
        let text = |i: usize| p.items[i - 1].text.clone();
        // The right texts with odd case and spacing pass.
        let ok = panas_file(20, |i| format!("  {}", text(i).to_uppercase()), "3");
        assert_eq!(parse_results_csv(&ok, &p).unwrap().len(), 1);
        // More item rows than the instrument has (a longer scale).
        let long = panas_file(29, |i| if i <= 20 { text(i) } else { "x".into() }, "3");
        let e = parse_results_csv(&long, &p).unwrap_err();
        assert_eq!(e.location, "line 23");
        assert!(e.reason.contains("more item rows"), "{}", e.reason);
        // Same length, other items.
        let other = panas_file(20, |i| format!("statement {i}"), "3");
        let e = parse_results_csv(&other, &p).unwrap_err();
        assert_eq!(e.location, "line 3");
        assert!(e.reason.contains("another instrument"), "{}", e.reason);
        // Out-of-range values fail the trial, with the range in the reason.
        let high = panas_file(20, text, "7");
        let t = parse_results_csv(&high, &p).unwrap();
        assert!(
            t[0].scores.as_ref().unwrap_err().contains("outside 1..=5"),
            "{:?}",
            t[0].scores
        );
    }

    #[test]
    fn a_short_file_is_rejected_with_its_place() {
        let p = Instrument::panas();
        let e = parse_results_csv("question-0,order-0\nx,y\n", &p).unwrap_err();
        assert_eq!(e.location, "line 2");
    }
}

/// Properties of the results importer over generated files: every column reads back as the
/// trial it was written from (answers, or a failed parse), and no input panics.
#[cfg(test)]
mod import_properties {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::domain::situation::EMOTIONS;
    use proptest::prelude::*;

    /// One written column: (emotion, factor, scenario) or the default measure, the repeat,
    /// and its cells: answers in range, all empty, or one garbled cell.
    #[derive(Debug, Clone)]
    struct Column {
        situation: Option<(usize, u32, u32)>,
        repeat: u32,
        answers: Vec<i32>,
        kind: u8,
    }

    fn column() -> impl Strategy<Value = Column> {
        (
            proptest::option::of((0..EMOTIONS.len(), 0..4u32, 0..6u32)),
            0..50u32,
            proptest::collection::vec(1..=5i32, 20),
            0..3u8,
        )
            .prop_map(|(situation, repeat, answers, kind)| Column {
                situation,
                repeat,
                answers,
                kind,
            })
    }

    fn name(c: &Column) -> String {
        match c.situation {
            None => format!("General_test-{}_order-0", c.repeat),
            Some((e, f, s)) => {
                format!("{}-{f}_scenario-{s}_test-{}_order-0", EMOTIONS[e], c.repeat)
            }
        }
    }

    fn cells(c: &Column) -> Vec<String> {
        match c.kind {
            0 => c.answers.iter().map(i32::to_string).collect(),
            1 => vec![String::new(); c.answers.len()],
            _ => {
                let mut v: Vec<String> = c.answers.iter().map(i32::to_string).collect();
                v[usize::try_from(c.repeat).unwrap() % 20] = "n/a".into();
                v
            }
        }
    }

    fn file(columns: &[Column], p: &Instrument) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["question-0".to_owned(), "order-0".to_owned()];
        header.extend(columns.iter().map(name));
        w.write_record(&header).unwrap();
        let mut text = vec!["Prompt, \"quoted\"".to_owned(), "prompt".to_owned()];
        text.extend(columns.iter().map(|c| format!("situation of {}", name(c))));
        w.write_record(&text).unwrap();
        let all: Vec<Vec<String>> = columns.iter().map(cells).collect();
        for (i, item) in p.items.iter().enumerate() {
            let mut row = vec![format!("{}. {}", i + 1, item.text), (i + 1).to_string()];
            row.extend(all.iter().map(|c| c[i].clone()));
            w.write_record(&row).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn every_column_reads_back_as_its_trial(columns in proptest::collection::vec(column(), 1..12)) {
            let p = Instrument::panas();
            let f = file(&columns, &p);
            let mut names: Vec<String> = columns.iter().map(name).collect();
            names.sort();
            names.dedup();
            let parsed = parse_results_csv(&f, &p);
            if names.len() < columns.len() {
                // A repeated column is refused, with its name.
                let err = parsed.unwrap_err().to_string();
                prop_assert!(err.contains("appears twice"), "{}", err);
                return Ok(());
            }
            let trials = parsed.unwrap();
            prop_assert_eq!(trials.len(), columns.len());
            for (t, c) in trials.iter().zip(&columns) {
                prop_assert_eq!(&t.column, &name(c));
                prop_assert_eq!(t.repeat, c.repeat);
                match c.situation {
                    None => prop_assert_eq!((t.measure, t.situation_key.as_str()), (Measure::Default, "")),
                    Some((e, f, s)) => {
                        prop_assert_eq!(t.measure, Measure::Evoked);
                        prop_assert_eq!(&t.situation_key, &format!("{}-{f}_scenario-{s}", EMOTIONS[e]));
                    }
                }
                prop_assert_eq!(&t.text, &format!("situation of {}", name(c)));
                prop_assert_eq!(&t.cells, &cells(c));
                match c.kind {
                    0 => prop_assert_eq!(t.scores.as_ref().unwrap(), &c.answers),
                    _ => prop_assert!(t.scores.is_err()),
                }
            }
        }

        #[test]
        fn a_mutated_file_is_parsed_or_refused_without_panicking(
            columns in proptest::collection::vec(column(), 1..6),
            at in any::<proptest::sample::Index>(),
            junk in "[\\x00-\\x7f\"\\n,0-9]{0,8}",
            cut in any::<bool>(),
        ) {
            let p = Instrument::panas();
            let f = file(&columns, &p);
            let bounds: Vec<usize> = f.char_indices().map(|(i, _)| i).chain([f.len()]).collect();
            let i = bounds[at.index(bounds.len())];
            let mutated = if cut { f[..i].to_owned() } else { format!("{}{junk}{}", &f[..i], &f[i..]) };
            if let Ok(trials) = parse_results_csv(&mutated, &p) {
                for t in trials {
                    if let Ok(scores) = t.scores {
                        prop_assert_eq!(scores.len(), 20);
                        prop_assert!(scores.iter().all(|v| (1..=5).contains(v)));
                    }
                }
            }
        }

        #[test]
        fn arbitrary_text_is_parsed_or_refused_without_panicking(s in "\\PC{0,300}") {
            let _ = parse_results_csv(&s, &Instrument::panas());
        }
    }
}
