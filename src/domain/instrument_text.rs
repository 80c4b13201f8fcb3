//! An instrument's item texts and scale labels in another language (issue #20): the file a
//! researcher imports, its check against the instrument, and the instrument as shown in that
//! language.
//!
//! A translation is complete or refused: every item number of the instrument with a text, every
//! labelled value with a label, nothing else. Answers are stored by item number and value, so a
//! translation that numbered items differently would silently attach answers to other
//! questions; refusing it is the only safe reading.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::ImportError;
use super::instrument::{Instrument, ScaleLabel};

/// One item's text in the translation's language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemText {
    pub number: u32,
    pub text: String,
}

/// An instrument's texts in one language, as stored: the items in the instrument's order, the
/// labels in its order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Translation {
    pub items: Vec<ItemText>,
    pub labels: Vec<ScaleLabel>,
}

/// One record of a translation file: `{"name": KEY, "items": [{"number", "text"}], "labels":
/// [{"value", "label"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslationRecord {
    pub name: String,
    pub items: Vec<ItemText>,
    #[serde(default)]
    pub labels: Vec<ScaleLabel>,
}

/// Parses a translation file: a JSON array of records (or one record). Syntax and shape errors
/// name the line and column; two records for one instrument are refused.
pub fn parse_file(text: &str) -> Result<Vec<TranslationRecord>, ImportError> {
    // Editors on Windows like to prepend a BOM, which serde_json rejects.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum File {
        Many(Vec<TranslationRecord>),
        One(TranslationRecord),
    }
    // Deserialised as a list first so that a shape error inside a list names its place rather
    // than the untagged enum's generic message.
    let records = if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<TranslationRecord>>(text)
            .map_err(|e| ImportError::json(&e, "translation"))?
    } else {
        match serde_json::from_str::<File>(text) {
            Ok(File::Many(v)) => v,
            Ok(File::One(r)) => vec![r],
            Err(_) => {
                vec![
                    serde_json::from_str::<TranslationRecord>(text)
                        .map_err(|e| ImportError::json(&e, "translation"))?,
                ]
            }
        }
    };
    if records.is_empty() {
        return Err(ImportError::new(
            "top level",
            "the file holds no translations",
        ));
    }
    for (i, r) in records.iter().enumerate() {
        if let Some(first) = records[..i]
            .iter()
            .position(|o| o.name.trim() == r.name.trim())
        {
            return Err(ImportError::new(
                format!("record {} ({}), field \"name\"", i + 1, r.name.trim()),
                format!(
                    "a second translation of {} (record {} is one)",
                    r.name.trim(),
                    first + 1
                ),
            ));
        }
    }
    Ok(records)
}

/// Checks record number `number` of a file against `inst`: the same item numbers (each once,
/// each with a text), the same labelled values (each once, each with a label). Returns the
/// translation in the instrument's order.
pub fn check(
    inst: &Instrument,
    number: usize,
    record: &TranslationRecord,
) -> Result<Translation, ImportError> {
    let at = |field: String| format!("record {number} ({}), {field}", inst.key);
    let mut seen = HashSet::new();
    for (i, item) in record.items.iter().enumerate() {
        let field = |f: &str| at(format!("field \"items\"[{}].{f}", i + 1));
        if inst.item(item.number).is_none() {
            return Err(ImportError::new(
                field("number"),
                format!(
                    "{} has no item {} (its items are 1..={})",
                    inst.key,
                    item.number,
                    inst.items.len()
                ),
            ));
        }
        if !seen.insert(item.number) {
            return Err(ImportError::new(
                field("number"),
                format!("item {} is translated twice", item.number),
            ));
        }
        if item.text.trim().is_empty() {
            return Err(ImportError::new(
                field("text"),
                format!("item {} has an empty text", item.number),
            ));
        }
    }
    let untranslated: Vec<String> = inst
        .items
        .iter()
        .filter(|i| !seen.contains(&i.number))
        .map(|i| i.number.to_string())
        .collect();
    if !untranslated.is_empty() {
        return Err(ImportError::new(
            at("field \"items\"".into()),
            format!("no text for item(s) {}", untranslated.join(", ")),
        ));
    }
    let mut values = HashSet::new();
    for (i, l) in record.labels.iter().enumerate() {
        let field = |f: &str| at(format!("field \"labels\"[{}].{f}", i + 1));
        if inst.label_for(l.value).is_none() {
            let own: Vec<String> = inst.labels.iter().map(|l| l.value.to_string()).collect();
            return Err(ImportError::new(
                field("value"),
                format!(
                    "{} has no label for {} (its labelled values: {})",
                    inst.key,
                    l.value,
                    if own.is_empty() {
                        "none".to_owned()
                    } else {
                        own.join(", ")
                    }
                ),
            ));
        }
        if !values.insert(l.value) {
            return Err(ImportError::new(
                field("value"),
                format!("the value {} is labelled twice", l.value),
            ));
        }
        if l.label.trim().is_empty() {
            return Err(ImportError::new(
                field("label"),
                format!("the value {} has an empty label", l.value),
            ));
        }
    }
    let unlabelled: Vec<String> = inst
        .labels
        .iter()
        .filter(|l| !values.contains(&l.value))
        .map(|l| l.value.to_string())
        .collect();
    if !unlabelled.is_empty() {
        return Err(ImportError::new(
            at("field \"labels\"".into()),
            format!("no label for value(s) {}", unlabelled.join(", ")),
        ));
    }
    let text_of = |n: u32| {
        record
            .items
            .iter()
            .find(|i| i.number == n)
            .map(|i| i.text.trim().to_owned())
    };
    let label_of = |v: i32| {
        record
            .labels
            .iter()
            .find(|l| l.value == v)
            .map(|l| l.label.trim().to_owned())
    };
    Ok(Translation {
        items: inst
            .items
            .iter()
            .filter_map(|i| {
                text_of(i.number).map(|text| ItemText {
                    number: i.number,
                    text,
                })
            })
            .collect(),
        labels: inst
            .labels
            .iter()
            .filter_map(|l| {
                label_of(l.value).map(|label| ScaleLabel {
                    value: l.value,
                    label,
                })
            })
            .collect(),
    })
}

impl Translation {
    /// Whether this translation still fits `inst` (the same item numbers and labelled values):
    /// a stored translation is checked on reading, since the instrument may have been
    /// re-imported since.
    pub fn fits(&self, inst: &Instrument) -> bool {
        self.items.len() == inst.items.len()
            && self
                .items
                .iter()
                .zip(&inst.items)
                .all(|(t, i)| t.number == i.number)
            && self.labels.len() == inst.labels.len()
            && self
                .labels
                .iter()
                .zip(&inst.labels)
                .all(|(t, l)| t.value == l.value)
    }

    /// `inst` with this translation's item texts and labels; everything else (numbers, reverse
    /// keys, scoring, prompts) as the instrument's own.
    pub fn apply(&self, inst: &Instrument) -> Instrument {
        let mut out = inst.clone();
        for item in &mut out.items {
            if let Some(t) = self.items.iter().find(|t| t.number == item.number) {
                item.text.clone_from(&t.text);
            }
        }
        for label in &mut out.labels {
            if let Some(t) = self.labels.iter().find(|t| t.value == label.value) {
                label.label.clone_from(&t.label);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(items: &[(u32, &str)], labels: &[(i32, &str)]) -> TranslationRecord {
        TranslationRecord {
            name: "PANAS".into(),
            items: items
                .iter()
                .map(|(n, t)| ItemText {
                    number: *n,
                    text: (*t).into(),
                })
                .collect(),
            labels: labels
                .iter()
                .map(|(v, l)| ScaleLabel {
                    value: *v,
                    label: (*l).into(),
                })
                .collect(),
        }
    }

    fn whole() -> TranslationRecord {
        let items: Vec<(u32, String)> = (1..=20).map(|n| (n, format!("Punkt {n}"))).collect();
        let items: Vec<(u32, &str)> = items.iter().map(|(n, t)| (*n, t.as_str())).collect();
        record(&items, &[(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")])
    }

    #[test]
    fn a_complete_translation_is_kept_in_the_instruments_order_and_applied() {
        let panas = Instrument::panas();
        let mut r = whole();
        r.items.reverse();
        let t = check(&panas, 1, &r).unwrap();
        assert_eq!(t.items[0].number, 1);
        assert!(t.fits(&panas));
        let shown = t.apply(&panas);
        assert_eq!(shown.items[0].text, "Punkt 1");
        assert_eq!(shown.labels[4].label, "e");
        assert_eq!(shown.items[0].reverse, panas.items[0].reverse);
        assert_eq!(shown.categories, panas.categories);
    }

    #[test]
    fn an_item_the_instrument_lacks_is_refused_naming_the_field() {
        let mut r = whole();
        r.items[3].number = 21;
        let e = check(&Instrument::panas(), 2, &r).unwrap_err();
        assert_eq!(e.location, "record 2 (PANAS), field \"items\"[4].number");
        assert!(
            e.reason.contains("no item 21 (its items are 1..=20)"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_item_a_twice_translated_item_and_an_empty_text_are_refused() {
        let panas = Instrument::panas();
        let mut r = whole();
        r.items.pop();
        let e = check(&panas, 1, &r).unwrap_err();
        assert!(e.reason.contains("no text for item(s) 20"), "{e}");
        let mut r = whole();
        r.items[19].number = 1;
        assert!(
            check(&panas, 1, &r)
                .unwrap_err()
                .reason
                .contains("translated twice")
        );
        let mut r = whole();
        r.items[0].text = "  ".into();
        assert!(
            check(&panas, 1, &r)
                .unwrap_err()
                .reason
                .contains("empty text")
        );
    }

    #[test]
    fn labels_must_have_the_instruments_values() {
        let panas = Instrument::panas();
        let mut r = whole();
        r.labels[0].value = 0;
        let e = check(&panas, 1, &r).unwrap_err();
        assert_eq!(e.location, "record 1 (PANAS), field \"labels\"[1].value");
        assert!(
            e.reason
                .contains("no label for 0 (its labelled values: 1, 2, 3, 4, 5)"),
            "{e}"
        );
        let mut r = whole();
        r.labels.pop();
        assert!(
            check(&panas, 1, &r)
                .unwrap_err()
                .reason
                .contains("no label for value(s) 5")
        );
    }

    #[test]
    fn a_translation_no_longer_fits_an_instrument_with_other_items() {
        let panas = Instrument::panas();
        let t = check(&panas, 1, &whole()).unwrap();
        let mut shorter = panas.clone();
        shorter.items.pop();
        assert!(!t.fits(&shorter));
    }

    #[test]
    fn the_file_is_a_list_or_one_record_and_errors_name_the_line() {
        let one = r#"{"name": "PANAS", "items": [{"number": 1, "text": "x"}]}"#;
        assert_eq!(parse_file(one).unwrap().len(), 1);
        let many = format!("[{one}, {}]", one.replace("PANAS", "Other"));
        assert_eq!(parse_file(&many).unwrap().len(), 2);
        let twice = format!("[{one}, {one}]");
        assert!(
            parse_file(&twice)
                .unwrap_err()
                .reason
                .contains("a second translation")
        );
        let bad = "[\n{\"name\": \"PANAS\", \"items\": [{\"number\": \"one\", \"text\": \"x\"}]}]";
        let e = parse_file(bad).unwrap_err();
        assert!(e.location.starts_with("line 2"), "{e}");
        assert!(parse_file("[]").is_err());
    }
}
