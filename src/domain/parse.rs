//! Reading a model's free-text reply to a questionnaire prompt back into item scores.
//!
//! The prompt lists the items as `N. text` lines in display order (N = display position).
//! Models answer in many shapes, so [`parse_reply`] reads the reply in every way it knows:
//!
//! 1. JSON (an array in display order, or an object keyed by item text or display number),
//!    anywhere in the reply, fenced or not;
//! 2. numbered lines (`3. Excited: 4`, `3) 4`, `**3. Excited**: 4`, …), N mapped back to the
//!    item through the display order;
//! 3. label lines (`Excited: 4`, `excited - 4`, `Excited (4)`), matched by item text in any order;
//! 4. bare numbers (one integer per line, or one line of integers), in display order.
//!
//! The first reading (in that order) that answers every item exactly once within the scale
//! wins. It never invents a value, never fills gaps, and never shifts answers onto other
//! items: when no reading fits, the error of the reading that found the most answers is
//! returned. Surrounding prose is ignored because none of the readings accept free prose.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

/// What the prompt showed: item numbers (canonical, 1-based) in display order, and each item's text.
#[derive(Debug, Clone, Copy)]
pub struct ParseSpec<'a> {
    /// Display position `i` (0-based) shows item `display_order[i]`; a permutation of `1..=n`.
    pub display_order: &'a [u32],
    /// Canonical order: `item_texts[k]` is the text of item `k + 1` (e.g. "Excited").
    pub item_texts: &'a [&'a str],
    pub min: i32,
    pub max: i32,
}

/// A successfully read reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parsed {
    /// Canonical item order (`scores[k]` answers item `k + 1`), all in `min..=max`.
    pub scores: Vec<i32>,
    /// The shape the answers were read from.
    pub format: ReplyFormat,
}

/// The shape of a reply that was read successfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyFormat {
    NumberedLines,
    LabelLines,
    BareNumbers,
    JsonArray,
    JsonObject,
}

/// Why a reply could not be read as one in-range answer per item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
pub enum ParseError {
    #[error("the reply is empty")]
    Empty,
    #[error("found {found} answers, expected {expected}")]
    WrongCount { expected: usize, found: usize },
    #[error("answer {value} for item {item} is outside {min}..={max}")]
    OutOfRange {
        item: u32,
        value: i64,
        min: i32,
        max: i32,
    },
    #[error("item {item} is answered twice with different values")]
    Conflict { item: u32 },
    #[error("item {item} is missing")]
    Missing { item: u32 },
    #[error("no answers could be read from the reply")]
    Unreadable,
}

impl ParseError {
    /// A short snake_case name for grouping failures in reports.
    pub fn class(&self) -> &'static str {
        match self {
            ParseError::Empty => "empty",
            ParseError::WrongCount { .. } => "wrong_count",
            ParseError::OutOfRange { .. } => "out_of_range",
            ParseError::Conflict { .. } => "conflict",
            ParseError::Missing { .. } => "missing",
            ParseError::Unreadable => "unreadable",
        }
    }
}

/// The canonical numbered form of a reply: `"1. Interested: 3\n2. Distressed: 1"`, one line per
/// display position (position number, item text, score). [`parse_reply`] reads it back.
pub fn format_reply(scores_in_display_order: &[i32], spec: &ParseSpec) -> String {
    let mut out = String::new();
    for (index, score) in scores_in_display_order.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let text = spec
            .display_order
            .get(index)
            .and_then(|&item| usize::try_from(item).ok())
            .and_then(|item| item.checked_sub(1))
            .and_then(|k| spec.item_texts.get(k))
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        let position = index.saturating_add(1);
        let _ = if text.is_empty() {
            write!(out, "{position}. {score}")
        } else {
            write!(out, "{position}. {text}: {score}")
        };
    }
    out
}

/// Reads a reply into one score per item (canonical order). See the module docs.
pub fn parse_reply(reply: &str, spec: &ParseSpec) -> Result<Parsed, ParseError> {
    if reply.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let ctx = Ctx::new(spec);
    let lines: Vec<&str> = reply.split(['\n', '\r']).collect();

    let mut candidates = json_candidates(reply, &ctx);
    if let Some(entries) = numbered_lines(&lines, &ctx) {
        candidates.push(Candidate {
            format: ReplyFormat::NumberedLines,
            body: Body::Keyed(entries),
        });
    }
    candidates.push(Candidate {
        format: ReplyFormat::LabelLines,
        body: Body::Keyed(label_lines(&lines, &ctx)),
    });
    candidates.push(Candidate {
        format: ReplyFormat::BareNumbers,
        body: Body::Positional(bare_numbers(&lines)),
    });

    let mut best: Option<(usize, ParseError)> = None;
    for candidate in &candidates {
        let size = candidate.size();
        if size == 0 {
            continue;
        }
        match ctx.evaluate(candidate) {
            Ok(scores) => {
                return Ok(Parsed {
                    scores,
                    format: candidate.format,
                });
            }
            Err(error) => {
                if best.as_ref().is_none_or(|(best_size, _)| size > *best_size) {
                    best = Some((size, error));
                }
            }
        }
    }
    Err(best.map_or(ParseError::Unreadable, |(_, error)| error))
}

// ---------------------------------------------------------------------------------------------
// Candidates and their evaluation

/// One answer read from the reply. `item == None` means a display position that does not exist.
#[derive(Debug, Clone, Copy)]
struct Entry {
    item: Option<u32>,
    value: i64,
}

#[derive(Debug)]
enum Body {
    /// Answers that name their item (numbered lines, label lines, JSON objects).
    Keyed(Vec<Entry>),
    /// Answers in display order; `None` is a slot that holds no readable integer.
    Positional(Vec<Option<i64>>),
}

#[derive(Debug)]
struct Candidate {
    format: ReplyFormat,
    body: Body,
}

impl Candidate {
    /// How many answers this reading found.
    fn size(&self) -> usize {
        match &self.body {
            Body::Keyed(entries) => entries.len(),
            Body::Positional(values) => values.iter().flatten().count(),
        }
    }
}

/// The spec, prepared for matching.
struct Ctx<'s> {
    order: &'s [u32],
    /// Normalized item texts in canonical order; empty means "cannot be matched".
    texts: Vec<Vec<char>>,
    min: i32,
    max: i32,
}

impl<'s> Ctx<'s> {
    fn new(spec: &ParseSpec<'s>) -> Self {
        Ctx {
            order: spec.display_order,
            texts: spec.item_texts.iter().map(|t| normalize_text(t)).collect(),
            min: spec.min,
            max: spec.max,
        }
    }

    /// 0-based canonical index of a valid item number.
    fn index_of(&self, item: u32) -> Option<usize> {
        let index = usize::try_from(item).ok()?.checked_sub(1)?;
        (index < self.texts.len()).then_some(index)
    }

    /// The item shown at a 1-based display position.
    fn item_at(&self, position: u64) -> Option<u32> {
        let index = usize::try_from(position).ok()?.checked_sub(1)?;
        let item = self.order.get(index).copied()?;
        self.index_of(item).map(|_| item)
    }

    fn text_at(&self, position: u64) -> Option<&[char]> {
        let index = self.index_of(self.item_at(position)?)?;
        self.texts.get(index).map(Vec::as_slice)
    }

    /// The items whose text starts `s` (longest match wins; ties are all returned), with the
    /// number of bytes of `s` the text covers.
    fn match_items(&self, s: &str) -> Option<(usize, Vec<u32>)> {
        let mut best: Option<(usize, Vec<u32>)> = None;
        for (index, text) in self.texts.iter().enumerate() {
            let Some(len) = match_text(s, text) else {
                continue;
            };
            let Some(item) = index.checked_add(1).and_then(|n| u32::try_from(n).ok()) else {
                continue;
            };
            match &mut best {
                Some((best_len, items)) if *best_len == len => items.push(item),
                Some((best_len, _)) if *best_len > len => {}
                _ => best = Some((len, vec![item])),
            }
        }
        best
    }

    fn check_range(&self, item: u32, value: i64) -> Result<(), ParseError> {
        if value < i64::from(self.min) || value > i64::from(self.max) {
            return Err(ParseError::OutOfRange {
                item,
                value,
                min: self.min,
                max: self.max,
            });
        }
        Ok(())
    }

    /// Records `value` for `item`; a different earlier value is a conflict.
    fn record(&self, answers: &mut [Option<i64>], item: u32, value: i64) -> Result<(), ParseError> {
        let Some(slot) = self.index_of(item).and_then(|i| answers.get_mut(i)) else {
            return Ok(());
        };
        match *slot {
            Some(old) if old != value => Err(ParseError::Conflict { item }),
            _ => {
                *slot = Some(value);
                Ok(())
            }
        }
    }

    /// Canonical scores if the candidate answers every item once within range, else why not.
    fn evaluate(&self, candidate: &Candidate) -> Result<Vec<i32>, ParseError> {
        let mut answers: Vec<Option<i64>> = vec![None; self.texts.len()];
        match &candidate.body {
            Body::Positional(values) => {
                if values.len() != self.order.len() {
                    return Err(ParseError::WrongCount {
                        expected: self.order.len(),
                        found: values.len(),
                    });
                }
                for (&item, value) in self.order.iter().zip(values) {
                    if let Some(value) = *value {
                        self.check_range(item, value)?;
                        self.record(&mut answers, item, value)?;
                    }
                }
            }
            Body::Keyed(entries) => {
                let mut extra = 0usize;
                for entry in entries {
                    match entry.item {
                        Some(item) => self.record(&mut answers, item, entry.value)?,
                        None => extra = extra.saturating_add(1),
                    }
                }
                for entry in entries {
                    if let Some(item) = entry.item {
                        self.check_range(item, entry.value)?;
                    }
                }
                if extra > 0 {
                    let answered = answers.iter().flatten().count();
                    return Err(ParseError::WrongCount {
                        expected: self.order.len(),
                        found: answered.saturating_add(extra),
                    });
                }
            }
        }
        // Report the first gap as the reader sees it: display order first.
        for &item in self.order {
            let answered = self
                .index_of(item)
                .and_then(|i| answers.get(i))
                .is_some_and(Option::is_some);
            if !answered {
                return Err(ParseError::Missing { item });
            }
        }
        let mut scores = Vec::with_capacity(answers.len());
        for (index, answer) in answers.iter().enumerate() {
            let item = u32::try_from(index.saturating_add(1)).unwrap_or(u32::MAX);
            let Some(value) = *answer else {
                return Err(ParseError::Missing { item });
            };
            let score = i32::try_from(value).map_err(|_| ParseError::OutOfRange {
                item,
                value,
                min: self.min,
                max: self.max,
            })?;
            scores.push(score);
        }
        Ok(scores)
    }
}

// ---------------------------------------------------------------------------------------------
// Text matching

/// Case- and quote-style-insensitive comparison key of one character.
fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' => '"',
        c if c.is_whitespace() => ' ',
        c => c.to_lowercase().next().unwrap_or(c),
    }
}

/// Folded item text: trimmed, inner whitespace collapsed, trailing punctuation dropped.
fn normalize_text(text: &str) -> Vec<char> {
    let mut out: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars().map(fold) {
        if c == ' ' && out.last().is_none_or(|&last| last == ' ') {
            continue;
        }
        out.push(c);
    }
    while out
        .last()
        .is_some_and(|&c| matches!(c, ' ' | '.' | ',' | ';' | ':' | '!' | '?'))
    {
        out.pop();
    }
    out
}

/// If `s` starts with `text` (see [`normalize_text`]), the byte length it covers. A text ending
/// in a letter or digit must end at a word boundary ("Alert" does not match "Alertness").
fn match_text(s: &str, text: &[char]) -> Option<usize> {
    let last = *text.last()?;
    let mut chars = s.char_indices().peekable();
    for &expected in text {
        if expected == ' ' {
            let mut any = false;
            while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {
                any = true;
            }
            if !any {
                return None;
            }
        } else {
            let (_, c) = chars.next()?;
            if fold(c) != expected {
                return None;
            }
        }
    }
    let next = chars.peek().copied();
    if last.is_alphanumeric() && next.is_some_and(|(_, c)| c.is_alphanumeric()) {
        return None;
    }
    Some(next.map_or(s.len(), |(i, _)| i))
}

/// Markdown emphasis and quotes: ignored around labels and numbers.
fn is_soft(c: char) -> bool {
    matches!(
        c,
        '*' | '_' | '`' | '~' | '"' | '\'' | '\u{201C}' | '\u{201D}' | '\u{2018}' | '\u{2019}'
    )
}

/// Characters after which a number reads as an answer even without a matched label.
fn is_separator(c: char) -> bool {
    matches!(
        c,
        ':' | '=' | '(' | '[' | '{' | '-' | '\u{2013}' | '\u{2014}' | '|' | '>' | '\u{2192}'
    )
}

fn skip_soft(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_whitespace() || is_soft(c))
}

/// Drops leading whitespace, list bullets, quote marks, headings, table bars and emphasis.
/// A `-` directly followed by a digit is a sign and stays.
fn strip_decor(s: &str) -> &str {
    let mut s = s;
    loop {
        let t = s.trim_start();
        let mut chars = t.chars();
        let Some(c) = chars.next() else {
            return t;
        };
        let next = chars.next();
        let strip = match c {
            '>' | '|' => true,
            c if is_soft(c) => true,
            '-' | '+' | '\u{2022}' | '\u{00B7}' | '\u{2023}' | '\u{25E6}' | '\u{25AA}'
            | '\u{2013}' | '\u{2014}' => next.is_none_or(char::is_whitespace),
            '#' => next.is_none_or(|n| n.is_whitespace() || n == '#'),
            _ => false,
        };
        if !strip {
            return t;
        }
        s = t.get(c.len_utf8()..).unwrap_or("");
    }
}

/// Strips `Item `, `Question `, `Q`, `No.`, `#`, `(` or `[` in front of a position number.
fn strip_marker_prefix(s: &str) -> &str {
    let starts_with_digit = |t: &str| t.starts_with(|c: char| c.is_ascii_digit());
    for prefix in ["question", "item", "no.", "no", "q", "#"] {
        let head_matches = s
            .get(..prefix.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(prefix));
        if head_matches {
            let t = s
                .get(prefix.len()..)
                .unwrap_or("")
                .trim_start_matches(|c: char| c.is_whitespace() || c == '#' || c == '.');
            if starts_with_digit(t) {
                return t;
            }
        }
    }
    match s.strip_prefix(['(', '[']) {
        Some(t) if starts_with_digit(t) => t,
        _ => s,
    }
}

/// Saturating value of a run of ASCII digits.
fn digits_value(digits: &str) -> u64 {
    digits.bytes().fold(0u64, |acc, b| {
        acc.saturating_mul(10)
            .saturating_add(u64::from(b.wrapping_sub(b'0')))
    })
}

/// A leading list position (`3.`, `3)`, `3:`, `(3)`, `Q3:`, `3 |`, `3 - `, `3 Excited`):
/// the position and the rest of the line after its separator. `s` is already decor-stripped.
fn parse_marker<'r>(s: &'r str, ctx: &Ctx) -> Option<(u64, &'r str)> {
    let body = strip_marker_prefix(s);
    let digits_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    if digits_end == 0 {
        return None;
    }
    let position = digits_value(body.get(..digits_end)?);
    let after = body.get(digits_end..)?;
    let mut chars = after.chars();
    match chars.next() {
        Some('.') => {
            let tail = chars.as_str();
            // "3.5" is a decimal, not a position.
            if tail.starts_with(|c: char| c.is_ascii_digit()) {
                None
            } else {
                Some((position, tail))
            }
        }
        Some(')' | ']' | ':' | '|') => Some((position, chars.as_str())),
        Some(c) if c.is_whitespace() => {
            let t = after.trim_start();
            if let Some(tail) = t
                .strip_prefix('|')
                .or_else(|| t.strip_prefix(':'))
                .or_else(|| t.strip_prefix(')'))
            {
                return Some((position, tail));
            }
            for dash in ['-', '\u{2013}', '\u{2014}'] {
                if let Some(tail) = t.strip_prefix(dash) {
                    if tail.starts_with(char::is_whitespace) {
                        return Some((position, tail));
                    }
                }
            }
            // "3 Excited: 4" or "Item 3 (Excited): 4": a known item text right after the number.
            let label = skip_soft(t.trim_start_matches('('));
            ctx.match_items(label).map(|_| (position, after))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a score

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    Int,
    /// `4-5`: not one answer.
    Range,
    /// `3.5`, `3,5`: not a whole number, so not an answer.
    Decimal,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    value: i64,
    kind: TokenKind,
    /// At the start of the text or right after a separator such as `:` `=` `(` `-`.
    after_separator: bool,
}

fn char_at(chars: &[(usize, char)], i: usize) -> Option<char> {
    chars.get(i).map(|&(_, c)| c)
}

fn digit_at(chars: &[(usize, char)], i: usize) -> bool {
    char_at(chars, i).is_some_and(|c| c.is_ascii_digit())
}

/// Saturating value of the digit run starting at `i`, and the index after it.
fn read_digits(chars: &[(usize, char)], i: usize) -> (i64, usize) {
    let mut value: i64 = 0;
    let mut j = i;
    while let Some(d) = char_at(chars, j).and_then(|c| c.to_digit(10)) {
        value = value.saturating_mul(10).saturating_add(i64::from(d));
        j = j.saturating_add(1);
    }
    (value, j)
}

/// The numbers in `rest`, stopping where the next numbered item begins (`… 2. Distressed`).
/// Numbers glued to letters (`Q3`, `1st`) are skipped.
fn tokens(rest: &str, ctx: &Ctx) -> Vec<Token> {
    let chars: Vec<(usize, char)> = rest.char_indices().collect();
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    let mut before_dash: Option<char> = None;
    let mut i = 0usize;
    while let Some(c) = char_at(&chars, i) {
        if !c.is_ascii_digit() {
            if c == '-' {
                before_dash = prev;
            }
            if !c.is_whitespace() && !is_soft(c) {
                prev = Some(c);
            }
            i = i.saturating_add(1);
            continue;
        }
        let left = i.checked_sub(1).and_then(|k| char_at(&chars, k));
        let left2 = i.checked_sub(2).and_then(|k| char_at(&chars, k));
        let (magnitude, mut j) = read_digits(&chars, i);
        // "-1" is negative after ":", "=", "(", "[" or at the start; "a-1" and "1 - 4" are not.
        let negative = left == Some('-')
            && matches!(before_dash, None | Some(':' | '=' | '(' | '['))
            && !left2.is_some_and(char::is_alphanumeric);
        let glued_left = left.is_some_and(char::is_alphabetic);
        let context = if negative { before_dash } else { prev };
        let after_separator = context.is_none_or(is_separator);
        let mut kind = TokenKind::Int;
        let mut glued = glued_left;
        let next = j.saturating_add(1);
        match char_at(&chars, j) {
            Some(n) if n.is_alphabetic() => glued = true,
            Some('.') if digit_at(&chars, next) => {
                let (_, end) = read_digits(&chars, next);
                if !(next..end).all(|k| char_at(&chars, k) == Some('0')) {
                    kind = TokenKind::Decimal;
                }
                j = end;
            }
            Some(',') if digit_at(&chars, next) => {
                kind = TokenKind::Decimal;
                j = read_digits(&chars, next).1;
            }
            Some('-' | '\u{2013}') if digit_at(&chars, next) => {
                kind = TokenKind::Range;
                j = read_digits(&chars, next).1;
            }
            Some('/') if digit_at(&chars, next) => {
                j = read_digits(&chars, next).1;
            }
            Some('.' | ')')
                if !negative
                    && char_at(&chars, next).is_some_and(char::is_whitespace)
                    && next_item_follows(rest, &chars, next, magnitude, ctx) =>
            {
                return out;
            }
            _ => {}
        }
        if !glued {
            out.push(Token {
                value: if negative {
                    magnitude.saturating_neg()
                } else {
                    magnitude
                },
                kind,
                after_separator,
            });
        }
        prev = Some('0');
        i = j.max(i.saturating_add(1));
    }
    out
}

/// True if `rest` continues, from char index `from`, with the text of the item at `position`.
fn next_item_follows(
    rest: &str,
    chars: &[(usize, char)],
    from: usize,
    position: i64,
    ctx: &Ctx,
) -> bool {
    let Some(text) = u64::try_from(position).ok().and_then(|p| ctx.text_at(p)) else {
        return false;
    };
    let Some(tail) = chars.get(from).and_then(|&(byte, _)| rest.get(byte..)) else {
        return false;
    };
    match_text(skip_soft(tail), text).is_some()
}

/// The answer in `rest`: the first whole number after a separator (`: 4`, `= 4/5`, `(4)`, or
/// at the start). If the item label was recognized, otherwise the first number at all.
/// `None` if there is none, or if the answer is a decimal or a range.
fn find_score(rest: &str, label_matched: bool, ctx: &Ctx) -> Option<i64> {
    let tokens = tokens(rest, ctx);
    let pick = tokens
        .iter()
        .find(|t| t.after_separator && t.kind != TokenKind::Range)
        .or_else(|| {
            if label_matched {
                tokens.iter().find(|t| t.kind != TokenKind::Range)
            } else {
                None
            }
        })?;
    (pick.kind == TokenKind::Int).then_some(pick.value)
}

/// A line that only carries the answer for the line before: `4`, `Score: 4`, `Rating = 4/5`.
fn continuation_score(line: &str, ctx: &Ctx) -> Option<i64> {
    let s = strip_decor(line);
    if parse_marker(s, ctx).is_some() || ctx.match_items(skip_soft(s)).is_some() {
        return None;
    }
    let mut s = s;
    for word in ["score", "rating", "answer", "response", "value"] {
        let head_matches = s
            .get(..word.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(word));
        if head_matches {
            let tail = s.get(word.len()..).unwrap_or("");
            if !tail.starts_with(char::is_alphanumeric) {
                s = tail;
                break;
            }
        }
    }
    let s = s.trim_start_matches(|c: char| c.is_whitespace() || is_soft(c) || c == ':' || c == '=');
    let mut chars = s.chars();
    let starts_with_number = match chars.next() {
        Some(c) if c.is_ascii_digit() => true,
        Some('-') => chars.next().is_some_and(|c| c.is_ascii_digit()),
        _ => false,
    };
    if !starts_with_number {
        return None;
    }
    find_score(s, false, ctx)
}

fn next_nonempty<'l>(lines: &[&'l str], index: usize) -> Option<&'l str> {
    lines
        .iter()
        .skip(index.saturating_add(1))
        .find(|l| !l.trim().is_empty())
        .copied()
}

// ---------------------------------------------------------------------------------------------
// The readings

/// Numbered lines. `None` if a line's item text contradicts its number (the model renumbered),
/// in which case the label reading is the one to trust.
fn numbered_lines(lines: &[&str], ctx: &Ctx) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut consistent = true;
    for (index, line) in lines.iter().enumerate() {
        let Some((position, rest)) = parse_marker(strip_decor(line), ctx) else {
            continue;
        };
        let expected = ctx.item_at(position);
        let label = skip_soft(rest);
        let (score, agrees) = match ctx.match_items(label) {
            Some((len, items)) => (
                find_score(label.get(len..).unwrap_or(""), true, ctx),
                expected.is_some_and(|e| items.contains(&e)),
            ),
            None => (find_score(rest, false, ctx), true),
        };
        let score = score
            .or_else(|| next_nonempty(lines, index).and_then(|next| continuation_score(next, ctx)));
        if let Some(value) = score {
            consistent &= agrees;
            entries.push(Entry {
                item: expected,
                value,
            });
        }
    }
    consistent.then_some(entries)
}

/// Lines that start with an item's text (after an optional number), followed by the answer.
/// Several labelled answers may share a line (`Excited: 4, Upset: 2` or a one-line dict).
fn label_lines(lines: &[&str], ctx: &Ctx) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let segments = label_segments(strip_decor(line), ctx);
        let last = segments.len().saturating_sub(1);
        for (k, segment) in segments.into_iter().enumerate() {
            let Some((item, after)) = label_head(segment, ctx) else {
                continue;
            };
            let mut score = find_score(after, true, ctx);
            if score.is_none() && k == last {
                score = next_nonempty(lines, index).and_then(|next| continuation_score(next, ctx));
            }
            if let Some(value) = score {
                entries.push(Entry {
                    item: Some(item),
                    value,
                });
            }
        }
    }
    entries
}

/// Splits a line before every `,` `;` `{` `}` or tab that is followed by an item label, so
/// `Excited: quite a bit, 4` stays whole while `Excited: 4, Upset: 2` becomes two segments.
fn label_segments<'l>(line: &'l str, ctx: &Ctx) -> Vec<&'l str> {
    let mut segments = Vec::new();
    let mut start = 0usize;
    for (i, c) in line.char_indices() {
        if !matches!(c, ',' | ';' | '{' | '}' | '\t') {
            continue;
        }
        let Some(piece) = line.get(i.saturating_add(c.len_utf8())..) else {
            continue;
        };
        let piece = strip_decor(piece);
        let labelled = ctx.match_items(skip_soft(piece)).is_some()
            || parse_marker(piece, ctx)
                .is_some_and(|(_, rest)| ctx.match_items(skip_soft(rest)).is_some());
        if labelled {
            segments.extend(line.get(start..i));
            start = i.saturating_add(c.len_utf8());
        }
    }
    segments.extend(line.get(start..));
    segments
}

/// The item a label segment names and the text after the label, if the segment is one.
fn label_head<'l>(segment: &'l str, ctx: &Ctx) -> Option<(u32, &'l str)> {
    let s = strip_decor(segment);
    let (position, rest) = match parse_marker(s, ctx) {
        Some((position, rest)) => (Some(position), rest),
        None => (None, s),
    };
    let label = skip_soft(rest);
    let (len, items) = ctx.match_items(label)?;
    let after = label.get(len..).unwrap_or("");
    // "Excited: 4" and "Excited (4)" are answers; "Excited is how I feel" is prose.
    let next_significant = after.chars().find(|&c| !c.is_whitespace() && !is_soft(c));
    if next_significant.is_some_and(char::is_alphabetic) {
        return None;
    }
    let item = if items.len() == 1 {
        items.first().copied()
    } else {
        position
            .and_then(|p| ctx.item_at(p))
            .filter(|e| items.contains(e))
    }?;
    Some((item, after))
}

/// `4`, `-1`, `4/5`: a whole piece that is just one answer.
fn bare_value(piece: &str) -> Option<i64> {
    let piece = piece.trim_matches(is_soft);
    let (negative, digits) = match piece.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, piece),
    };
    let number = match digits.split_once('/') {
        Some((number, denominator)) => {
            if denominator.is_empty() || !denominator.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            number
        }
        None => digits,
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = i64::try_from(digits_value(number)).unwrap_or(i64::MAX);
    Some(if negative {
        value.saturating_neg()
    } else {
        value
    })
}

/// Lines made only of integers (`4`, `4.`, `3, 4, 2`), in display order.
fn bare_numbers(lines: &[&str]) -> Vec<Option<i64>> {
    let mut values = Vec::new();
    for line in lines {
        let s = strip_decor(line).trim_end_matches(|c: char| {
            c.is_whitespace() || is_soft(c) || matches!(c, '.' | ',' | ';' | '!')
        });
        if s.is_empty() {
            continue;
        }
        let pieces: Option<Vec<i64>> = s
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
            .filter(|p| !p.is_empty())
            .map(bare_value)
            .collect();
        if let Some(pieces) = pieces {
            values.extend(pieces.into_iter().map(Some));
        }
    }
    values
}

/// Bounds the work spent on replies full of brackets.
const MAX_JSON_ATTEMPTS: usize = 64;
/// How deep a wrapper such as `{"ratings": {...}}` may nest the answers.
const MAX_JSON_DEPTH: usize = 4;

/// Every JSON array or object in the reply that carries answers, in order of appearance.
fn json_candidates(reply: &str, ctx: &Ctx) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut from = 0usize;
    let mut attempts = 0usize;
    while let Some(offset) = reply.get(from..).and_then(|t| t.find(['{', '['])) {
        attempts = attempts.saturating_add(1);
        if attempts > MAX_JSON_ATTEMPTS {
            break;
        }
        let start = from.saturating_add(offset);
        let tail = reply.get(start..).unwrap_or("");
        let mut stream = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                if let Some(candidate) = json_interpret(&value, ctx, 0) {
                    out.push(candidate);
                }
                from = start.saturating_add(stream.byte_offset().max(1));
            }
            _ => from = start.saturating_add(1),
        }
    }
    out
}

fn json_interpret(value: &Value, ctx: &Ctx, depth: usize) -> Option<Candidate> {
    match value {
        Value::Array(elements) => {
            if elements.is_empty() {
                return None;
            }
            if elements.iter().all(Value::is_object) {
                let mut entries = Vec::new();
                for element in elements {
                    if let Value::Object(map) = element {
                        let mut found = json_object_entries(map, ctx);
                        if found.is_empty() {
                            found.extend(json_record_entry(map, ctx));
                        }
                        entries.extend(found);
                    }
                }
                return (!entries.is_empty()).then_some(Candidate {
                    format: ReplyFormat::JsonObject,
                    body: Body::Keyed(entries),
                });
            }
            if elements.iter().any(|e| e.is_array() || e.is_object()) {
                return None;
            }
            let values: Vec<Option<i64>> = elements.iter().map(|e| json_int(e, ctx)).collect();
            values.iter().any(Option::is_some).then_some(Candidate {
                format: ReplyFormat::JsonArray,
                body: Body::Positional(values),
            })
        }
        Value::Object(map) => {
            let entries = json_object_entries(map, ctx);
            if !entries.is_empty() {
                return Some(Candidate {
                    format: ReplyFormat::JsonObject,
                    body: Body::Keyed(entries),
                });
            }
            if depth >= MAX_JSON_DEPTH {
                return None;
            }
            map.values()
                .filter(|v| v.is_array() || v.is_object())
                .find_map(|v| json_interpret(v, ctx, depth.saturating_add(1)))
        }
        _ => None,
    }
}

/// Answers of an object keyed by item text or display number.
fn json_object_entries(map: &serde_json::Map<String, Value>, ctx: &Ctx) -> Vec<Entry> {
    map.iter()
        .filter_map(|(key, value)| {
            let item = identify_key(key, ctx)?;
            let value = json_int(value, ctx)?;
            Some(Entry { item, value })
        })
        .collect()
}

const SCORE_FIELDS: [&str; 6] = ["score", "rating", "value", "answer", "response", "level"];

/// `{"item": "Excited", "score": 4}` or `{"number": 3, "rating": 4}`.
fn json_record_entry(map: &serde_json::Map<String, Value>, ctx: &Ctx) -> Option<Entry> {
    let field = |names: &[&str]| {
        map.iter()
            .find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n)))
            .map(|(_, v)| v)
    };
    let value = json_int(field(&SCORE_FIELDS)?, ctx)?;
    let by_text = [
        "item",
        "name",
        "emotion",
        "feeling",
        "word",
        "text",
        "label",
        "statement",
        "question",
    ];
    let by_number = ["id", "number", "position", "index", "no"];
    let item = match (field(&by_text), field(&by_number)) {
        (Some(Value::String(key)), _) => identify_key(key, ctx)?,
        (_, Some(Value::Number(n))) => ctx.item_at(n.as_u64()?),
        (_, Some(Value::String(key))) => identify_key(key, ctx)?,
        _ => return None,
    };
    Some(Entry { item, value })
}

/// The item a JSON key names: `"3"` (display position), `"Excited"`, or `"3. Excited"`.
/// `Some(None)` is a position that does not exist; `None` an unrelated key.
fn identify_key(key: &str, ctx: &Ctx) -> Option<Option<u32>> {
    let key = strip_decor(key.trim());
    let key = key.trim_end_matches(|c: char| c.is_whitespace() || is_soft(c));
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        return Some(ctx.item_at(digits_value(key)));
    }
    let (position, rest) = match parse_marker(key, ctx) {
        Some((position, rest)) => (Some(position), rest),
        None => (None, key),
    };
    let label = skip_soft(rest);
    let by_text = ctx.match_items(label).and_then(|(len, items)| {
        let tail = label.get(len..).unwrap_or("");
        let whole = tail.chars().all(|c| {
            c.is_whitespace() || is_soft(c) || matches!(c, '.' | ',' | ';' | ':' | '!' | '?')
        });
        if !whole {
            return None;
        }
        let expected = position.and_then(|p| ctx.item_at(p));
        match expected {
            Some(e) if items.contains(&e) => Some(e),
            _ if items.len() == 1 => items.first().copied(),
            _ => None,
        }
    });
    match (by_text, position) {
        (Some(item), _) => Some(Some(item)),
        (None, Some(position)) if label.trim().is_empty() => Some(ctx.item_at(position)),
        _ => None,
    }
}

/// A whole number in JSON: `4`, `4.0`, `"4"`, `"4 (quite a bit)"`, `{"score": 4}`.
fn json_int(value: &Value, ctx: &Ctx) -> Option<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18)
                    .map(|f| f as i64)
            }),
        Value::String(s) => find_score(s, true, ctx),
        Value::Object(map) => map
            .iter()
            .find(|(k, v)| !v.is_object() && SCORE_FIELDS.iter().any(|n| k.eq_ignore_ascii_case(n)))
            .and_then(|(_, v)| json_int(v, ctx)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    use super::super::instrument::PANAS_ITEMS as PANAS;

    /// A fixed shuffle of the 20 PANAS items: position 1 shows item 7 ("Scared"), etc.
    const ORDER: [u32; 20] = [
        7, 14, 2, 19, 11, 5, 16, 1, 20, 9, 3, 13, 18, 6, 10, 15, 4, 12, 17, 8,
    ];

    fn panas() -> ParseSpec<'static> {
        ParseSpec {
            display_order: &ORDER,
            item_texts: &PANAS,
            min: 1,
            max: 5,
        }
    }

    /// Items that carry their own numbered options (BDI-style, 0..=3), whose texts are full of
    /// digits: the canonical reply must still read back exactly, in any display order.
    #[test]
    fn bdi_style_items_with_numbers_in_their_text_round_trip_0_to_3() {
        let texts: Vec<String> = (1..=21)
            .map(|k| {
                format!(
                    "0. I do not feel bad {k}. 1. I feel bad. 2. I feel bad all the time: 3 \
                     days. 3. I feel so bad that I can't stand it."
                )
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut order: Vec<u32> = (1..=21).collect();
        order.reverse();
        let spec = ParseSpec {
            display_order: &order,
            item_texts: &refs,
            min: 0,
            max: 3,
        };
        let canonical: Vec<i32> = (0..21).map(|k| k % 4).collect();
        let reply = format_reply(&in_display_order(&spec, &canonical), &spec);
        assert_eq!(parse_reply(&reply, &spec).unwrap().scores, canonical);
        // A 4 is out of range, not silently accepted or shifted.
        let bad: Vec<i32> = vec![4; 21];
        assert!(parse_reply(&format_reply(&bad, &spec), &spec).is_err());
    }

    /// Varied canonical answers: item k+1 gets (3k mod 5) + 1.
    fn canonical() -> Vec<i32> {
        (0..20).map(|k| (k * 3 % 5) + 1).collect()
    }

    fn in_display_order(spec: &ParseSpec, canonical: &[i32]) -> Vec<i32> {
        spec.display_order
            .iter()
            .map(|&item| canonical[item as usize - 1])
            .collect()
    }

    /// A reply with one line per display position, built by `line(position, text, score)`.
    fn reply_with(
        spec: &ParseSpec,
        scores: &[i32],
        line: impl Fn(usize, &str, i32) -> String,
    ) -> String {
        let display = in_display_order(spec, scores);
        spec.display_order
            .iter()
            .zip(display)
            .enumerate()
            .map(|(i, (&item, score))| line(i + 1, spec.item_texts[item as usize - 1], score))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn ok(reply: &str, spec: &ParseSpec) -> Parsed {
        match parse_reply(reply, spec) {
            Ok(parsed) => parsed,
            Err(e) => panic!("expected success, got {e:?} for reply:\n{reply}"),
        }
    }

    #[test]
    fn parse_numbered_lines_in_every_style_map_positions_to_items() {
        let spec = panas();
        let want = canonical();
        type Style = fn(usize, &str, i32) -> String;
        let styles: [(&str, Style); 11] = [
            ("plain", |n, t, s| format!("{n}. {t}: {s}")),
            ("number only", |n, _, s| format!("{n}. {s}")),
            ("paren dash", |n, t, s| {
                format!("{n}) {t} - {s} (quite a bit)")
            }),
            ("colon", |n, _, s| format!("{n}: {s}")),
            ("bold", |n, t, s| format!("**{n}. {t}**: {s}")),
            ("equals fraction", |n, t, s| format!("{n}. {t} = {s}/5")),
            ("bullet", |n, t, s| format!("- {n}. {t}: {s}")),
            ("bold score", |n, t, s| format!("{n}. **{t}**: **{s}**")),
            ("score word", |n, t, s| format!("{n}. {t} - Score: {s}")),
            ("label words", |n, t, s| {
                format!("{n}. {t}: quite a bit ({s})")
            }),
            ("table", |n, t, s| format!("| {n} | {t} | {s} |")),
        ];
        for (name, style) in styles {
            let reply = format!(
                "Sure! Here are my ratings:\n\n{}\n\nI hope this helps.",
                reply_with(&spec, &want, style)
            );
            let parsed = ok(&reply, &spec);
            assert_eq!(parsed.scores, want, "{name}");
            assert_eq!(parsed.format, ReplyFormat::NumberedLines, "{name}");
        }
    }

    #[test]
    fn parse_numbered_positions_not_canonical_numbers() {
        let spec = panas();
        // Position 1 shows item 7 (Scared), position 3 shows item 2 (Distressed).
        let mut reply = String::new();
        for position in 1..=20 {
            let score = if position == 1 { 5 } else { 1 };
            reply.push_str(&format!("{position}. {score}\n"));
        }
        let parsed = ok(&reply, &spec);
        assert_eq!(parsed.scores[6], 5);
        assert_eq!(parsed.scores.iter().filter(|&&s| s == 5).count(), 1);
    }

    #[test]
    fn parse_label_lines_in_any_order_and_case() {
        let spec = panas();
        let want = canonical();
        type Style = fn(&str, i32) -> String;
        let styles: [Style; 5] = [
            |t, s| format!("{t}: {s}"),
            |t, s| format!("{} - {s}", t.to_lowercase()),
            |t, s| format!("{} ({s})", t.to_uppercase()),
            |t, s| format!("* **{t}.** {s}"),
            |t, s| format!("\"{t}\": {s},"),
        ];
        for style in styles {
            // Canonical order, which is not the display order.
            let lines: Vec<String> = PANAS
                .iter()
                .zip(&want)
                .rev()
                .map(|(t, &s)| style(t, s))
                .collect();
            let reply = format!(
                "My feelings right now:\n{}\nAlert readers may notice 2 answers repeat.",
                lines.join("\n")
            );
            let parsed = ok(&reply, &spec);
            assert_eq!(parsed.scores, want, "{reply}");
            assert_eq!(parsed.format, ReplyFormat::LabelLines);
        }
    }

    #[test]
    fn parse_several_labels_on_one_line() {
        let spec = panas();
        let want = canonical();
        let pairs: Vec<String> = PANAS
            .iter()
            .zip(&want)
            .map(|(t, s)| format!("'{t}': {s}"))
            .collect();
        // A Python-style dict is not JSON, but its labels still read.
        let dict = format!("Result: {{{}}}", pairs.join(", "));
        let parsed = ok(&dict, &spec);
        assert_eq!(parsed.scores, want);
        assert_eq!(parsed.format, ReplyFormat::LabelLines);
        let halves = format!("{}\n{}", pairs[..10].join("; "), pairs[10..].join("; "));
        assert_eq!(ok(&halves, &spec).scores, want);
        // A comma inside one answer does not split it.
        let lines: Vec<String> = PANAS
            .iter()
            .zip(&want)
            .map(|(t, s)| format!("{t}: quite a bit, {s}"))
            .collect();
        assert_eq!(ok(&lines.join("\n"), &spec).scores, want);
    }

    #[test]
    fn parse_renumbered_lines_trust_the_item_text() {
        let spec = panas();
        let want = canonical();
        // The model numbered the items canonically, not as displayed.
        let reply: String = PANAS
            .iter()
            .zip(&want)
            .enumerate()
            .map(|(i, (t, s))| format!("{}. {t}: {s}\n", i + 1))
            .collect();
        let parsed = ok(&reply, &spec);
        assert_eq!(parsed.scores, want);
        assert_eq!(parsed.format, ReplyFormat::LabelLines);
    }

    #[test]
    fn parse_bare_numbers_in_display_order() {
        let spec = panas();
        let want = canonical();
        let display = in_display_order(&spec, &want);
        let lines: Vec<String> = display
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i % 3 == 0 {
                    format!("{s}.")
                } else {
                    format!("\t{s} ")
                }
            })
            .collect();
        let reply = format!("Here you go:\r\n{}\r\nThanks!\r\n", lines.join("\r\n"));
        let parsed = ok(&reply, &spec);
        assert_eq!(parsed.scores, want);
        assert_eq!(parsed.format, ReplyFormat::BareNumbers);

        let one_line = display
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let parsed = ok(&format!("{one_line}\n"), &spec);
        assert_eq!(parsed.scores, want);
        assert_eq!(parsed.format, ReplyFormat::BareNumbers);
    }

    #[test]
    fn parse_json_array_fenced_and_in_prose() {
        let spec = panas();
        let want = canonical();
        let display = in_display_order(&spec, &want);
        let array = serde_json::to_string(&display).unwrap();
        for reply in [
            format!("Here are my answers:\n```json\n{array}\n```\nDone."),
            format!("My answers are {array}. Thank you [really]."),
            format!("{{\"ratings\": {array}}}"),
        ] {
            let parsed = ok(&reply, &spec);
            assert_eq!(parsed.scores, want, "{reply}");
            assert_eq!(parsed.format, ReplyFormat::JsonArray);
        }
    }

    #[test]
    fn parse_json_object_by_text_number_or_wrapped() {
        let spec = panas();
        let want = canonical();
        let display = in_display_order(&spec, &want);
        let by_text: serde_json::Map<String, Value> = PANAS
            .iter()
            .zip(&want)
            .map(|(t, &s)| (t.to_lowercase(), Value::from(s)))
            .collect();
        let by_number: serde_json::Map<String, Value> = display
            .iter()
            .enumerate()
            .map(|(i, &s)| ((i + 1).to_string(), Value::from(s.to_string())))
            .collect();
        let records: Vec<Value> = PANAS
            .iter()
            .zip(&want)
            .map(|(t, &s)| serde_json::json!({"item": t, "score": s}))
            .collect();
        for reply in [
            format!(
                "Sure.\n```json\n{}\n```",
                serde_json::to_string_pretty(&by_text).unwrap()
            ),
            format!("Answers: {}", Value::Object(by_number)),
            format!("{{\"answers\": {}}}", Value::Object(by_text.clone())),
            Value::Array(records).to_string(),
        ] {
            let parsed = ok(&reply, &spec);
            assert_eq!(parsed.scores, want, "{reply}");
            assert_eq!(parsed.format, ReplyFormat::JsonObject);
        }
    }

    #[test]
    fn parse_two_line_answers() {
        let spec = panas();
        let want = canonical();
        let reply = reply_with(&spec, &want, |n, t, s| format!("{n}. {t}\nScore: {s}\n"));
        let parsed = ok(&reply, &spec);
        assert_eq!(parsed.scores, want);
        assert_eq!(parsed.format, ReplyFormat::NumberedLines);
    }

    #[test]
    fn parse_errors_empty_and_unreadable() {
        let spec = panas();
        assert_eq!(parse_reply("", &spec), Err(ParseError::Empty));
        assert_eq!(parse_reply("  \r\n\t\n", &spec), Err(ParseError::Empty));
        assert_eq!(
            parse_reply("I'm sorry, but as an AI I do not have feelings.", &spec),
            Err(ParseError::Unreadable)
        );
    }

    #[test]
    fn parse_error_wrong_count() {
        let spec = panas();
        let display = in_display_order(&spec, &canonical());
        let short: Vec<String> = display[..19].iter().map(i32::to_string).collect();
        assert_eq!(
            parse_reply(&short.join("\n"), &spec),
            Err(ParseError::WrongCount {
                expected: 20,
                found: 19
            })
        );
        let long = format!(
            "{}\n3\n4",
            display
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(
            parse_reply(&long, &spec),
            Err(ParseError::WrongCount {
                expected: 20,
                found: 22
            })
        );
        let array = format!("[{}]", short.join(","));
        assert_eq!(
            parse_reply(&array, &spec),
            Err(ParseError::WrongCount {
                expected: 20,
                found: 19
            })
        );
        // A position that does not exist.
        let numbers: String = display
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}\n", i + 1))
            .collect();
        let extra = format!("{numbers}21. 3");
        assert_eq!(
            parse_reply(&extra, &spec),
            Err(ParseError::WrongCount {
                expected: 20,
                found: 21
            })
        );
    }

    #[test]
    fn parse_error_out_of_range() {
        let spec = panas();
        let mut display = in_display_order(&spec, &canonical());
        display[2] = 6; // position 3 shows item 2
        assert_eq!(
            parse_reply(&format_reply(&display, &spec), &spec),
            Err(ParseError::OutOfRange {
                item: 2,
                value: 6,
                min: 1,
                max: 5
            })
        );
        display[2] = 0;
        assert_eq!(
            parse_reply(&format_reply(&display, &spec), &spec),
            Err(ParseError::OutOfRange {
                item: 2,
                value: 0,
                min: 1,
                max: 5
            })
        );
    }

    #[test]
    fn parse_error_conflict_but_repeated_same_value_is_fine() {
        let spec = panas();
        let want = canonical();
        let display = in_display_order(&spec, &want);
        let base = format_reply(&display, &spec);
        // Position 5 shows item 11 (Irritable), answered 5 in `want`... repeat it differently.
        let other = if display[4] == 1 { 2 } else { 1 };
        let conflicting = format!("{base}\n5. Irritable: {other}");
        assert_eq!(
            parse_reply(&conflicting, &spec),
            Err(ParseError::Conflict { item: 11 })
        );
        let repeated = format!("{base}\n5. Irritable: {}", display[4]);
        assert_eq!(ok(&repeated, &spec).scores, want);
    }

    #[test]
    fn parse_error_missing_never_shifts() {
        let spec = panas();
        let display = in_display_order(&spec, &canonical());
        let lines: Vec<String> = format_reply(&display, &spec)
            .lines()
            .filter(|l| !l.starts_with("3. "))
            .map(str::to_owned)
            .collect();
        // Position 3 shows item 2.
        assert_eq!(
            parse_reply(&lines.join("\n"), &spec),
            Err(ParseError::Missing { item: 2 })
        );
        // Numbers without item texts: line 3 missing is still item 2, not a shift.
        let numbers: String = display
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(i, s)| format!("{}. {s}\n", i + 1))
            .collect();
        assert_eq!(
            parse_reply(&numbers, &spec),
            Err(ParseError::Missing { item: 2 })
        );
        // A word instead of a number is missing, not zero.
        let worded = format_reply(&display, &spec).replace(
            &format!("3. Distressed: {}", display[2]),
            "3. Distressed: moderately",
        );
        assert_eq!(
            parse_reply(&worded, &spec),
            Err(ParseError::Missing { item: 2 })
        );
        // Decimals and ranges are not rounded or guessed.
        for vague in ["3.5", "3-4", "3,5"] {
            let reply = format_reply(&display, &spec).replace(
                &format!("3. Distressed: {}", display[2]),
                &format!("3. Distressed: {vague}"),
            );
            assert_eq!(
                parse_reply(&reply, &spec),
                Err(ParseError::Missing { item: 2 }),
                "{vague}"
            );
        }
        let mut json: serde_json::Map<String, Value> = PANAS
            .iter()
            .map(|t| (t.to_string(), Value::from(3)))
            .collect();
        json.remove("Alert");
        assert_eq!(
            parse_reply(&Value::Object(json).to_string(), &spec),
            Err(ParseError::Missing { item: 12 })
        );
    }

    #[test]
    fn parse_echoed_item_names_are_an_error() {
        let spec = panas();
        let shown: String = ORDER
            .iter()
            .enumerate()
            .map(|(i, &item)| format!("{}. {}\n", i + 1, PANAS[item as usize - 1]))
            .collect();
        let canonical_order: String = PANAS
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{}. {t}\n", i + 1))
            .collect();
        let one_line = shown.replace('\n', " ");
        let names_only: String = PANAS.iter().map(|t| format!("{t}\n")).collect();
        for reply in [shown, canonical_order, one_line, names_only] {
            let result = parse_reply(&reply, &spec);
            assert!(
                matches!(
                    result,
                    Err(ParseError::Unreadable | ParseError::WrongCount { .. })
                ),
                "{result:?} for\n{reply}"
            );
        }
        // Positions alone, as a tiny model might print them.
        let positions: String = (1..=20).map(|i| format!("{i}.\n")).collect();
        assert!(parse_reply(&positions, &spec).is_err());
    }

    #[test]
    fn parse_numbers_inside_item_texts_are_not_scores() {
        let texts = [
            "I feel 2 people watch me",
            "I worry about 3 things.",
            "Calm",
        ];
        let order = [2, 3, 1];
        let spec = ParseSpec {
            display_order: &order,
            item_texts: &texts,
            min: 1,
            max: 5,
        };
        let reply = "1. I worry about 3 things.: 4\n2. Calm - 5\n3. I feel 2 people watch me: 1";
        let parsed = ok(reply, &spec);
        assert_eq!(parsed.scores, [1, 4, 5]);
        assert_eq!(parsed.format, ReplyFormat::NumberedLines);
        let labels = "calm: 5\ni feel 2 people watch me (1)\nI worry about 3 things - 4";
        assert_eq!(ok(labels, &spec).scores, [1, 4, 5]);
        let echo = "1. I worry about 3 things.\n2. Calm\n3. I feel 2 people watch me";
        assert!(parse_reply(echo, &spec).is_err());
        // Paraphrased texts: only a number after a separator is an answer.
        let paraphrased =
            "1. I worry about 3 things: 4\n2. Calm - 5\n3. I feel that 2 people watch me: 1";
        assert_eq!(ok(paraphrased, &spec).scores, [1, 4, 5]);
        let paraphrased_echo =
            "1. I worry about 3 things\n2. Calm: 5\n3. I feel 2 persons watch me";
        assert_eq!(
            parse_reply(paraphrased_echo, &spec),
            Err(ParseError::Missing { item: 2 })
        );
        let partial = "1. I worry about 3 things\n2. Calm: 5\n3. I feel 2 people watch me: 1";
        assert_eq!(
            parse_reply(partial, &spec),
            Err(ParseError::Missing { item: 2 })
        );
    }

    #[test]
    fn parse_zero_is_an_answer_on_0_to_3_scales() {
        let texts = ["Sadness", "Pessimism", "Past failure", "Loss of pleasure"];
        let order = [4, 1, 3, 2];
        let spec = ParseSpec {
            display_order: &order,
            item_texts: &texts,
            min: 0,
            max: 3,
        };
        let parsed = ok("1. 0\n2. 3\n3. 0\n4. 1", &spec);
        assert_eq!(parsed.scores, [3, 1, 0, 0]);
        assert_eq!(ok("0\n3\n0\n1", &spec).scores, [3, 1, 0, 0]);
        assert_eq!(ok("[0, 3, 0, 1]", &spec).scores, [3, 1, 0, 0]);
        assert_eq!(
            ok(
                "Sadness: 3\nPessimism: 1\nPast failure: 0\nLoss of pleasure: 0",
                &spec
            )
            .scores,
            [3, 1, 0, 0]
        );
        assert_eq!(
            parse_reply("1. 0\n2. 3\n3. -1\n4. 1", &spec),
            Err(ParseError::OutOfRange {
                item: 3,
                value: -1,
                min: 0,
                max: 3
            })
        );
        assert_eq!(
            parse_reply("1. 0\n2. 4\n3. 0\n4. 1", &spec),
            Err(ParseError::OutOfRange {
                item: 1,
                value: 4,
                min: 0,
                max: 3
            })
        );
    }

    #[test]
    fn parse_one_to_seven_scale() {
        let texts = ["I want to win", "I fear losing", "I aim to improve"];
        let order = [3, 1, 2];
        let spec = ParseSpec {
            display_order: &order,
            item_texts: &texts,
            min: 1,
            max: 7,
        };
        let reply =
            "Ratings (1-7):\n1. I aim to improve: 7\n2. I want to win: 6\n3. I fear losing: 1\n";
        assert_eq!(ok(reply, &spec).scores, [6, 1, 7]);
        assert!(matches!(
            parse_reply("1. 8\n2. 6\n3. 1", &spec),
            Err(ParseError::OutOfRange {
                item: 3,
                value: 8,
                ..
            })
        ));
    }

    #[test]
    fn parse_huge_numbers_do_not_overflow() {
        let spec = panas();
        let huge = "9".repeat(10_000);
        let mut display = in_display_order(&spec, &canonical())
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>();
        display[0] = huge.clone();
        let reply = display
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            parse_reply(&reply, &spec),
            Err(ParseError::OutOfRange {
                item: 7,
                value: i64::MAX,
                min: 1,
                max: 5
            })
        );
        assert!(parse_reply(&huge, &spec).is_err());
        assert!(parse_reply(&format!("{huge}. Scared: {huge}"), &spec).is_err());
    }

    #[test]
    fn parse_error_classes_and_serialization() {
        let cases = [
            (ParseError::Empty, "empty"),
            (
                ParseError::WrongCount {
                    expected: 2,
                    found: 1,
                },
                "wrong_count",
            ),
            (
                ParseError::OutOfRange {
                    item: 1,
                    value: 9,
                    min: 1,
                    max: 5,
                },
                "out_of_range",
            ),
            (ParseError::Conflict { item: 1 }, "conflict"),
            (ParseError::Missing { item: 1 }, "missing"),
            (ParseError::Unreadable, "unreadable"),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class);
        }
        assert_eq!(
            ParseError::OutOfRange {
                item: 3,
                value: 9,
                min: 1,
                max: 5
            }
            .to_string(),
            "answer 9 for item 3 is outside 1..=5"
        );
        let parsed = Parsed {
            scores: vec![1],
            format: ReplyFormat::NumberedLines,
        };
        assert_eq!(
            serde_json::to_string(&parsed).unwrap(),
            r#"{"scores":[1],"format":"numbered_lines"}"#
        );
    }

    #[test]
    fn format_reply_is_the_numbered_form() {
        let order = [2, 1];
        let texts = ["Interested", "Distressed"];
        let spec = ParseSpec {
            display_order: &order,
            item_texts: &texts,
            min: 1,
            max: 5,
        };
        assert_eq!(
            format_reply(&[4, 2], &spec),
            "1. Distressed: 4\n2. Interested: 2"
        );
        let parsed = ok(&format_reply(&[4, 2], &spec), &spec);
        assert_eq!(parsed.scores, [2, 4]);
        assert_eq!(parsed.format, ReplyFormat::NumberedLines);
    }

    #[test]
    fn parse_adversarial_inputs_do_not_panic() {
        let spec = panas();
        let inputs = [
            "9".repeat(10_000),
            "-".repeat(10_000) + "1",
            "[".repeat(100_000),
            "{".repeat(100_000),
            "[1,".repeat(20_000),
            "1.".repeat(20_000),
            "1. ".repeat(20_000) + "Scared",
            "\u{0130}\u{00DF}\u{FB03}: 1".to_owned(),
            "١. ٣\n２. ３".to_owned(),
            "1e400\n[1e400]\n{\"1\": 1e400}".to_owned(),
            format!(
                "[{}]",
                "18446744073709551616,".repeat(19) + "-9223372036854775809"
            ),
            "\r\r\n\n\t".repeat(1000),
            "Scared: -".to_owned(),
            "1.-\n2)\n3:".to_owned(),
        ];
        for input in &inputs {
            let _ = parse_reply(input, &spec);
        }
        let empty = ParseSpec {
            display_order: &[],
            item_texts: &[],
            min: 1,
            max: 5,
        };
        assert_eq!(
            parse_reply("1. 3", &empty),
            Err(ParseError::WrongCount {
                expected: 0,
                found: 1
            })
        );
        assert!(parse_reply("[]", &empty).is_err());
        let broken = ParseSpec {
            display_order: &[0, 5, 1, 1],
            item_texts: &["", "A"],
            min: 5,
            max: 1,
        };
        for input in ["1. 3\n2. 4\n3. 1\n4. 1", "[1,2,3,4]", "A: 3", "{\"\": 1}"] {
            assert!(parse_reply(input, &broken).is_err());
        }
    }

    fn shuffled(n: usize) -> impl Strategy<Value = Vec<u32>> {
        Just((1..=n as u32).collect::<Vec<u32>>()).prop_shuffle()
    }

    proptest! {
        #[test]
        fn parse_round_trips_panas(
            order in shuffled(20),
            display in prop::collection::vec(1i32..=5, 20),
        ) {
            let spec = ParseSpec { display_order: &order, item_texts: &PANAS, min: 1, max: 5 };
            let parsed = parse_reply(&format_reply(&display, &spec), &spec).unwrap();
            let mut want = vec![0; 20];
            for (&item, &score) in order.iter().zip(&display) {
                want[item as usize - 1] = score;
            }
            prop_assert_eq!(parsed.scores, want);
            prop_assert_eq!(parsed.format, ReplyFormat::NumberedLines);
        }

        #[test]
        fn parse_round_trips_any_texts_and_range(
            texts in prop::collection::btree_set("[a-z][a-z0-9]{0,6}( [a-z0-9]{1,4}){0,2}", 1..15),
            seed in any::<u64>(),
            min in -3i32..=2,
            span in 1i32..=9,
        ) {
            let texts: Vec<String> = texts.into_iter().collect();
            let n = texts.len();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            // A deterministic permutation and scores from the seed.
            let mut order: Vec<u32> = (1..=n as u32).collect();
            let mut state = seed;
            let mut next = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                state >> 33
            };
            for i in (1..n).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
            let max = min + span;
            let display: Vec<i32> = (0..n).map(|_| min + (next() % (span as u64 + 1)) as i32).collect();
            let spec = ParseSpec { display_order: &order, item_texts: &refs, min, max };
            let reply = format_reply(&display, &spec);
            let parsed = parse_reply(&reply, &spec);
            let mut want = vec![0; n];
            for (&item, &score) in order.iter().zip(&display) {
                want[item as usize - 1] = score;
            }
            prop_assert_eq!(parsed.map(|p| p.scores), Ok(want), "{}", reply);
        }

        #[test]
        fn parse_never_panics(reply in ".*") {
            let _ = parse_reply(&reply, &panas());
        }

        #[test]
        fn parse_never_panics_on_answer_like_text(
            reply in "([0-9]{1,3}|[-.:)(\\[\\]{},\"*| \n\r\t]|Scared|Excited|Score|/){0,80}",
        ) {
            let _ = parse_reply(&reply, &panas());
        }
    }
}
