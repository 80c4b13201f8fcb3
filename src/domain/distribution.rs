//! Answer distributions from token log-probabilities (#17): for each item, the probability of
//! each allowed answer at the token where that item's answer is read, renormalised over the
//! allowed answers, and the expected value.
//!
//! Which token carries an item's answer is asked of the parser itself, not guessed from the
//! reply's layout: a token whose text is an allowed value is that item's answer position when
//! putting another allowed value in its place changes that item's parsed score to it and
//! nothing else. Item numbers ("1." in "1. 3"), label text and the like then never count as
//! answers, whatever the reply's format (numbered lines, labels, JSON).

use serde::{Deserialize, Serialize};

use super::parse::{ParseSpec, parse_reply};

/// One generated token with its log-probability and the most likely alternatives at its
/// position (OpenAI `choices[].logprobs.content[]`: `token`, `logprob`, `top_logprobs[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    /// (token, logprob) of the alternatives, the sampled token usually among them.
    pub top: Vec<(String, f64)>,
}

/// One item's answer distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemDistribution {
    /// `probs[i]` is the probability of the answer `min + i`; they sum to 1.
    pub probs: Vec<f64>,
    /// Σ value × probability.
    pub expected: f64,
}

/// A trial's distributions (the `model_trials.distributions` column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distributions {
    /// The value of `probs[0]`.
    pub min: i32,
    /// Canonical item order; `None` where no answer position was found (the item answered
    /// twice, or its value split over several tokens).
    pub items: Vec<Option<ItemDistribution>>,
}

impl Distributions {
    /// Every item has a distribution.
    pub fn complete(&self) -> bool {
        !self.items.is_empty() && self.items.iter().all(Option::is_some)
    }
}

/// Where a token's text sits in the joined text.
struct Span {
    start: usize,
    end: usize,
}

/// The distributions of a reply whose text (after `normalise`, the reader's own clean-up such
/// as dropping `<think>` blocks) parsed to `scores`. None when the tokens do not rebuild a text
/// that parses to the same scores (the provider's tokens are not the reply), or the scale has
/// fewer than two values.
pub fn answer_distributions(
    tokens: &[TokenLogprob],
    scores: &[i32],
    spec: &ParseSpec<'_>,
    normalise: &dyn Fn(&str) -> String,
) -> Option<Distributions> {
    if spec.max <= spec.min || tokens.is_empty() {
        return None;
    }
    let mut joined = String::new();
    let mut spans = Vec::with_capacity(tokens.len());
    for t in tokens {
        let start = joined.len();
        joined.push_str(&t.token);
        spans.push(Span {
            start,
            end: joined.len(),
        });
    }
    let baseline = parse_reply(&normalise(&joined), spec).ok()?;
    if baseline.scores != scores {
        return None;
    }
    let mut position: Vec<Option<usize>> = vec![None; scores.len()];
    for (i, t) in tokens.iter().enumerate() {
        let Some(value) = allowed_value(&t.token, spec) else {
            continue;
        };
        let other = if value != spec.min {
            spec.min
        } else {
            spec.max
        };
        let swapped = t.token.replacen(t.token.trim(), &other.to_string(), 1);
        let span = &spans[i];
        let probe = format!("{}{swapped}{}", &joined[..span.start], &joined[span.end..]);
        let Ok(changed) = parse_reply(&normalise(&probe), spec) else {
            continue;
        };
        let moved: Vec<usize> = (0..scores.len())
            .filter(|&k| changed.scores.get(k) != scores.get(k))
            .collect();
        if let [k] = moved[..] {
            if changed.scores[k] == other && scores[k] == value && position[k].is_none() {
                position[k] = Some(i);
            }
        }
    }
    let items = position
        .iter()
        .map(|p| p.and_then(|i| item_distribution(&tokens[i], spec)))
        .collect();
    Some(Distributions {
        min: spec.min,
        items,
    })
}

/// The allowed answer a token's text spells (surrounding whitespace aside), exactly as the
/// value prints ("3", not "03" or "3.").
fn allowed_value(token: &str, spec: &ParseSpec<'_>) -> Option<i32> {
    let text = token.trim();
    let v: i32 = text.parse().ok()?;
    (v >= spec.min && v <= spec.max && v.to_string() == text).then_some(v)
}

/// The probabilities of the allowed values among a position's alternatives (the sampled token
/// added when the provider left it out), renormalised over the allowed values. Two tokens
/// spelling one value (" 3" and "3") add up.
fn item_distribution(t: &TokenLogprob, spec: &ParseSpec<'_>) -> Option<ItemDistribution> {
    let n = usize::try_from(spec.max - spec.min).ok()? + 1;
    let mut mass = vec![0.0f64; n];
    let mut seen: Vec<&str> = Vec::new();
    let sampled = (t.token.as_str(), t.logprob);
    let alternatives = t.top.iter().map(|(s, l)| (s.as_str(), *l));
    for (text, logprob) in alternatives.chain(std::iter::once(sampled)) {
        if seen.contains(&text) || !logprob.is_finite() {
            continue;
        }
        seen.push(text);
        if let Some(v) = allowed_value(text, spec) {
            let slot = usize::try_from(v - spec.min).ok()?;
            mass[slot] += logprob.exp();
        }
    }
    let total: f64 = mass.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let probs: Vec<f64> = mass.iter().map(|m| m / total).collect();
    let expected = probs
        .iter()
        .enumerate()
        .map(|(i, p)| (f64::from(spec.min) + i as f64) * p)
        .sum();
    Some(ItemDistribution { probs, expected })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tok(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, l)| ((*t).to_owned(), *l)).collect(),
        }
    }

    fn same(s: &str) -> String {
        s.to_owned()
    }

    #[test]
    fn markers_are_not_answers_and_each_item_gets_its_own_position() {
        // "1. 2\n2. 5", display order [2, 1]: position 1 shows item 2.
        let tokens = [
            tok("1", -0.1, &[("1", -0.1), ("2", -2.5)]),
            tok(".", 0.0, &[]),
            tok(" 2", -0.2, &[(" 2", -0.2), (" 3", -1.9), ("2", -3.0)]),
            tok("\n", 0.0, &[]),
            tok("2", 0.0, &[]),
            tok(".", 0.0, &[]),
            tok(" 5", -0.05, &[(" 5", -0.05), (" 4", -3.0)]),
        ];
        let texts = ["a", "b"];
        let spec = ParseSpec {
            display_order: &[2, 1],
            item_texts: &texts,
            min: 1,
            max: 5,
        };
        let d = answer_distributions(&tokens, &[5, 2], &spec, &same).unwrap();
        assert!(d.complete());
        // Item 1 (shown second) answered 5: 4 and 5 only.
        let i1 = d.items[0].as_ref().unwrap();
        let (p4, p5) = ((-3.0f64).exp(), (-0.05f64).exp());
        assert!((i1.probs[4] - p5 / (p4 + p5)).abs() < 1e-12);
        // Item 2: " 2" and "2" add up.
        let i2 = d.items[1].as_ref().unwrap();
        let (a, b, c) = ((-0.2f64).exp(), (-3.0f64).exp(), (-1.9f64).exp());
        assert!((i2.probs[1] - (a + b) / (a + b + c)).abs() < 1e-12);
        for item in d.items.iter().flatten() {
            assert!((item.probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert!((i2.expected - (2.0 * (a + b) + 3.0 * c) / (a + b + c)).abs() < 1e-12);
    }

    #[test]
    fn tokens_that_do_not_rebuild_the_parsed_reply_give_nothing() {
        let tokens = [tok("1. 3", -0.1, &[])];
        let texts = ["a"];
        let spec = ParseSpec {
            display_order: &[1],
            item_texts: &texts,
            min: 1,
            max: 5,
        };
        assert!(answer_distributions(&tokens, &[4], &spec, &same).is_none());
        // One token holding marker and answer: no answer position, the item has none.
        let d = answer_distributions(&tokens, &[3], &spec, &same).unwrap();
        assert_eq!(d.items, vec![None]);
        assert!(!d.complete());
    }
}
