//! Free-text tasks (#18, the paper's Section 5.1 "Beyond Questionnaires"): after the situation,
//! the model (or a participant) writes freely about a target, e.g. a group or a topic; the text
//! is scored afterwards (`scorer`), and the report compares default and evoked answers.
//!
//! A free-text task is an [`Instrument`] of mode [`ScoreMode::FreeText`]: its items are the
//! targets (item `n` is target `n`), its `prompt` the open prompt with the placeholder
//! `TARGET`, and it has no categories. Runs plan one trial per measure × situation × target ×
//! repeat; the trial's `item_order` is the one target it asks about, and its repeat index
//! counts over targets and repeats (`target_index * repeats + repeat`), so trials stay unique
//! per run × measure × situation × repeat as every other run's do.

use serde::Deserialize;

use super::ImportError;
use super::instrument::{Instrument, Item, ScoreMode, Scoring};
use super::measure::Measure;
use super::prompt::{ChatMessage, PromptError};
use super::run::PlannedTrial;

pub use super::instrument::FREE_TEXT_TARGET as TARGET;

/// The template column of a free-text run: its prompts are the task's own ([`messages`]).
pub const RUN_TEMPLATE: &str = "free-text";

/// One task of a free-text task file (JSON: a list of these).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    key: String,
    prompt: String,
    #[serde(default)]
    system_prompt: String,
    targets: Vec<String>,
}

/// A free-text task as an instrument row.
pub fn task(key: &str, prompt: &str, system_prompt: &str, targets: &[&str]) -> Instrument {
    Instrument {
        key: key.to_owned(),
        // The rating range is unused; 0..1 keeps the stored row within the columns' rules.
        min: 0,
        max: 1,
        labels: Vec::new(),
        items: (1u32..)
            .zip(targets)
            .map(|(number, t)| Item {
                number,
                text: (*t).to_owned(),
                reverse: false,
                options: Vec::new(),
            })
            .collect(),
        categories: Vec::new(),
        scoring: Scoring {
            mode: ScoreMode::FreeText,
            multiplier: 1,
            reverse_constant: 1,
        },
        paper_raw_sum: false,
        prompt: prompt.to_owned(),
        system_prompt: system_prompt.to_owned(),
    }
}

/// Reads a free-text task file: a JSON list of `{"key", "prompt", "system_prompt"?,
/// "targets"}`; errors name the record.
pub fn parse_tasks(text: &str) -> Result<Vec<Instrument>, ImportError> {
    let files: Vec<TaskFile> = serde_json::from_str(text).map_err(|e| {
        ImportError::new(
            format!("line {}", e.line()),
            format!("not a list of free-text tasks: {e}"),
        )
    })?;
    if files.is_empty() {
        return Err(ImportError::new("file", "no free-text tasks"));
    }
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let targets: Vec<&str> = f.targets.iter().map(String::as_str).collect();
            let t = task(f.key.trim(), &f.prompt, &f.system_prompt, &targets);
            t.validate().map_err(|reason| {
                ImportError::new(format!("record {} ({})", i + 1, f.key), reason)
            })?;
            Ok(t)
        })
        .collect()
}

/// The trials of a free-text run: per target, `default_repeats` default trials and `repeats`
/// per situation; `item_order` is `[target]`.
pub fn plan(
    situation_keys: &[&str],
    repeats: u32,
    default_repeats: u32,
    targets: u32,
) -> Vec<PlannedTrial> {
    let mut out = Vec::new();
    let trial = |measure, situation: Option<usize>, key: &str, repeat, target| PlannedTrial {
        measure,
        situation,
        situation_key: key.to_owned(),
        repeat,
        item_order: vec![target],
        before_order: None,
        persona: None,
    };
    for target in 1..=targets {
        for r in 0..default_repeats {
            let repeat = (target - 1) * default_repeats + r;
            out.push(trial(Measure::Default, None, "", repeat, target));
        }
    }
    for (index, key) in situation_keys.iter().enumerate() {
        for target in 1..=targets {
            for r in 0..repeats {
                let repeat = (target - 1) * repeats + r;
                out.push(trial(Measure::Evoked, Some(index), key, repeat, target));
            }
        }
    }
    out
}

/// The messages of one free-text trial: the task's system prompt, then (evoked) the situation
/// as the paper's template words it and the open prompt about the target.
pub fn messages(
    task: &Instrument,
    measure: Measure,
    situation: Option<&str>,
    order: &[u32],
) -> Result<Vec<ChatMessage>, PromptError> {
    let [number] = order else {
        return Err(PromptError::BadOrder);
    };
    let target = task.item(*number).ok_or(PromptError::BadOrder)?;
    let mut user = String::new();
    if measure == Measure::Evoked {
        match situation {
            Some(text) if !text.trim().is_empty() => {
                user.push_str("Imagine you are the protagonist in the situation: ");
                user.push_str(text);
                user.push('\n');
            }
            _ => return Err(PromptError::MissingSituation),
        }
    }
    user.push_str(&task.prompt.replace(TARGET, &target.text));
    let mut out = Vec::with_capacity(2);
    if !task.system_prompt.trim().is_empty() {
        out.push(ChatMessage::new("system", task.system_prompt.clone()));
    }
    out.push(ChatMessage::new("user", user));
    Ok(out)
}

/// The answer of a free-text reply: its text, trimmed; `None` when there is none (an empty
/// reply is asked again, as an unreadable rating is).
pub fn answer(reply: &str) -> Option<&str> {
    let t = reply.trim();
    (!t.is_empty()).then_some(t)
}

/// The name of the situation page's free-text field (#18, human participants).
pub const HUMAN_FIELD: &str = "free_text";

/// The prompt a participant sees on the situation page: the task's open prompt about its
/// first target (a study asks one question of people, not one per target); `None` for a task
/// without targets, which `validate` never lets in.
pub fn human_prompt(task: &Instrument) -> Option<String> {
    let first = task.items.first()?;
    Some(task.prompt.replace(TARGET, &first.text))
}

/// Why a participant's free text cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanTextError {
    /// The study requires an answer and none was given.
    Missing,
    /// Longer than the study's limit: how long it was, in characters.
    TooLong { chars: usize, max: u32 },
    /// The field came twice: a form no page of ours sends.
    Twice,
}

/// A participant's free-text answer as stored: line breaks made `\n` (browsers send a
/// textarea's as CRLF, yet count each as one character against `maxlength`, so a text at the
/// limit must not count longer here), spaces around it trimmed, and its length in characters
/// (not bytes) checked against `max_chars`. `Ok(None)`: no answer, which only an optional field
/// accepts. Never shortened: a text over the limit is refused, to be shown again as typed.
pub fn human_answer(
    values: &[&str],
    required: bool,
    max_chars: u32,
) -> Result<Option<String>, HumanTextError> {
    let raw = match values {
        [] => "",
        [one] => one,
        _ => return Err(HumanTextError::Twice),
    };
    let text = raw.replace("\r\n", "\n").replace('\r', "\n");
    let text = text.trim();
    let chars = text.chars().count();
    if chars > max_chars as usize {
        return Err(HumanTextError::TooLong {
            chars,
            max: max_chars,
        });
    }
    match (text.is_empty(), required) {
        (true, true) => Err(HumanTextError::Missing),
        (true, false) => Ok(None),
        (false, _) => Ok(Some(text.to_owned())),
    }
}

/// The refusal detector's phrase list: a reply that contains one of these (case-insensitive)
/// is counted as a refusal. Transparent on purpose: the report names the rule, and a reader
/// can check any answer against it.
pub const REFUSAL_PHRASES: &[&str] = &[
    "i can't",
    "i cannot",
    "i can not",
    "i won't",
    "i will not",
    "i'm not able to",
    "i am not able to",
    "i'm unable to",
    "i am unable to",
    "i'm sorry, but",
    "i am sorry, but",
    "as an ai",
    "as a language model",
    "i must decline",
    "i do not feel comfortable",
    "i don't feel comfortable",
    "it is not appropriate",
    "it's not appropriate",
    "i apologize, but",
];

/// The first refusal phrase the text contains, if any.
pub fn refusal_phrase(text: &str) -> Option<&'static str> {
    // Curly apostrophes are what many models write.
    let lower = text.to_lowercase().replace('\u{2019}', "'");
    REFUSAL_PHRASES.iter().copied().find(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Instrument {
        task(
            "SAY",
            "Say something about TARGET.",
            "You are a person.",
            &["cats", "my neighbours"],
        )
    }

    #[test]
    fn a_task_is_a_valid_free_text_instrument_and_bad_ones_say_why() {
        let t = groups();
        assert!(t.is_free_text());
        assert_eq!(t.validate(), Ok(()));
        let mut no_target = groups();
        no_target.prompt = "Say something.".into();
        assert!(no_target.validate().unwrap_err().contains("TARGET"));
        let mut empty = groups();
        empty.items.clear();
        assert!(
            empty
                .validate()
                .unwrap_err()
                .contains("at least one target")
        );
        let mut blank = groups();
        blank.items[1].text = " ".into();
        assert_eq!(blank.validate(), Err("target 2 is empty".into()));
    }

    #[test]
    fn task_files_parse_and_a_bad_record_is_named() {
        let ts = parse_tasks(
            r#"[{"key": "SAY", "prompt": "About TARGET:", "targets": ["a", "b", "c"]}]"#,
        )
        .unwrap();
        assert_eq!(ts[0].items.len(), 3);
        assert_eq!(ts[0].items[2].text, "c");
        let e = parse_tasks(r#"[{"key": "X", "prompt": "no placeholder", "targets": ["a"]}]"#)
            .unwrap_err();
        assert_eq!(e.location, "record 1 (X)");
        let e = parse_tasks(r#"[{"key": "X", "prompt": "TARGET", "targets": ["a"], "z": 1}]"#)
            .unwrap_err();
        assert!(e.reason.contains("unknown field"), "{e}");
        assert!(parse_tasks("[]").is_err());
    }

    #[test]
    fn the_plan_has_every_target_and_repeat_once_per_measure_and_situation() {
        let plan = plan(&["a", "b"], 2, 3, 2);
        // default: 2 targets × 3; evoked: 2 situations × 2 targets × 2.
        assert_eq!(plan.len(), 6 + 8);
        let mut seen = std::collections::HashSet::new();
        for t in &plan {
            assert!(seen.insert((t.measure, t.situation_key.clone(), t.repeat)));
            assert_eq!(t.item_order.len(), 1);
        }
        let b_target_2: Vec<u32> = plan
            .iter()
            .filter(|t| t.situation_key == "b" && t.item_order == [2])
            .map(|t| t.repeat)
            .collect();
        assert_eq!(b_target_2, [2, 3]);
    }

    #[test]
    fn messages_put_the_situation_before_the_prompt_about_the_target() {
        let t = groups();
        let m = messages(&t, Measure::Evoked, Some("Your cat left."), &[2]).unwrap();
        assert_eq!(m[0].content, "You are a person.");
        assert_eq!(
            m[1].content,
            "Imagine you are the protagonist in the situation: Your cat left.\n\
             Say something about my neighbours."
        );
        let d = messages(&t, Measure::Default, None, &[1]).unwrap();
        assert_eq!(d[1].content, "Say something about cats.");
        assert_eq!(
            messages(&t, Measure::Evoked, None, &[1]),
            Err(PromptError::MissingSituation)
        );
        assert_eq!(
            messages(&t, Measure::Default, None, &[3]),
            Err(PromptError::BadOrder)
        );
        assert_eq!(
            messages(&t, Measure::Default, None, &[1, 2]),
            Err(PromptError::BadOrder)
        );
    }

    #[test]
    fn people_see_the_prompt_about_the_first_target() {
        assert_eq!(
            human_prompt(&groups()).as_deref(),
            Some("Say something about cats.")
        );
        let mut none = groups();
        none.items.clear();
        assert_eq!(human_prompt(&none), None);
    }

    #[test]
    fn human_answers_count_characters_keep_line_breaks_and_are_never_cut() {
        // Five characters of 2, 3 and 4 bytes: within a limit of 5, over one of 4.
        let t = "é€😀ßx";
        assert_eq!(human_answer(&[t], false, 5), Ok(Some(t.to_owned())));
        assert_eq!(
            human_answer(&[t], false, 4),
            Err(HumanTextError::TooLong { chars: 5, max: 4 })
        );
        // A browser's CRLF counts once, as its maxlength counted it.
        assert_eq!(
            human_answer(&["ab\r\ncd"], false, 5),
            Ok(Some("ab\ncd".to_owned()))
        );
        assert_eq!(human_answer(&["  hi \r\n"], true, 2), Ok(Some("hi".into())));
        assert_eq!(human_answer(&[], false, 10), Ok(None));
        assert_eq!(human_answer(&["  \n "], false, 10), Ok(None));
        assert_eq!(human_answer(&[" "], true, 10), Err(HumanTextError::Missing));
        assert_eq!(human_answer(&[], true, 10), Err(HumanTextError::Missing));
        assert_eq!(
            human_answer(&["a", "b"], false, 10),
            Err(HumanTextError::Twice)
        );
        // A formula is text like any other here; the export neutralises it.
        let f = "=HYPERLINK(\"http://x\")";
        assert_eq!(human_answer(&[f], false, 100), Ok(Some(f.to_owned())));
    }

    #[test]
    fn refusals_are_found_by_the_listed_phrases_only() {
        assert_eq!(
            refusal_phrase("I\u{2019}m sorry, but I can\u{2019}t help with that."),
            Some("i can't")
        );
        assert_eq!(
            refusal_phrase("As an AI, I have no views."),
            Some("as an ai")
        );
        assert_eq!(refusal_phrase("Cats are lovely."), None);
        assert_eq!(answer("  \n "), None);
        assert_eq!(answer(" hi "), Some("hi"));
    }
}
