//! Evidence against bots and LLM agents, per participant (issue #15, point 3): each signal
//! with its reason, never a verdict. Nothing here rejects anyone; the study's exclusion rules
//! ([`ExclusionRules`], fixed before launch) decide which signals leave a participant out of
//! the analysis, and the report and exports say how many for each reason.
//!
//! Pure: the app layer reads the stored page times, answers, checks and model trials and
//! hands them in; [`assess`] returns the findings.
//!
//! The signals:
//! - the three flags the survey stores as it goes (straight-lining, a situation page left
//!   before the study's minimum, a failed attention check), and the honeypot: a visually
//!   hidden field labelled "leave this empty" on the situation page that only a form-filler
//!   fills (stored by the page's submit, like the flags);
//! - **reading floor**: a page submitted faster than its words can be read at
//!   [`READING_WPM`] words a minute plus [`MS_PER_ANSWER`] per answer given (see [`floor_ms`]);
//! - **speed**: SoSci Survey's relative speed index `TIME_RSI`
//!   (<https://www.soscisurvey.de/help/doku.php/en:results:variables>, "Data quality"; Leiner,
//!   "Too Fast, too Straight, too Weird", Survey Research Methods 13(3), 2019): how many
//!   times faster than the typical (median) participant someone went, the mean over pages of
//!   page median ÷ own page time. SoSci computes it only with at least 10 cases; we too
//!   ([`RSI_MIN_PEOPLE`] per page). Evidence above [`RSI_THRESHOLD`] (twice as fast);
//! - **inconsistent**: "psychometric synonyms" (Meade & Craig 2012): item pairs of a block
//!   that correlate at r ≥ [`SYNONYM_R`] among the other humans (at least
//!   [`MIN_HUMANS`]); a participant who answers at least [`INCONSISTENT_SHARE`] of those
//!   pairs of both blocks three quarters of the scale apart answers at random rather than
//!   by feeling;
//! - **duplicate**: both blocks' answers identical to another participant's;
//! - **model-like**: a likelihood ratio of the participant's answers under the study's
//!   model runs vs under the other humans ([`model_log_lr`]), evidence above
//!   [`MODEL_LR_THRESHOLD`] for any one model.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::survey::Page;

/// One kind of evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    Straightline,
    Fast,
    FailedCheck,
    Honeypot,
    ReadingFloor,
    Speed,
    Inconsistent,
    Duplicate,
    ModelLike,
}

impl Signal {
    pub const ALL: [Signal; 9] = [
        Signal::Straightline,
        Signal::Fast,
        Signal::FailedCheck,
        Signal::Honeypot,
        Signal::ReadingFloor,
        Signal::Speed,
        Signal::Inconsistent,
        Signal::Duplicate,
        Signal::ModelLike,
    ];

    /// The stored and exported name (`flag_{name}` in the exports).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Straightline => "straightline",
            Signal::Fast => "fast",
            Signal::FailedCheck => "failed_check",
            Signal::Honeypot => "honeypot",
            Signal::ReadingFloor => "reading_floor",
            Signal::Speed => "speed",
            Signal::Inconsistent => "inconsistent",
            Signal::Duplicate => "duplicate",
            Signal::ModelLike => "model_like",
        }
    }

    pub fn parse(s: &str) -> Option<Signal> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Stored by the survey as it goes (a participant's flag), rather than computed from the
    /// study's answers and times when asked.
    pub fn is_stored(self) -> bool {
        matches!(
            self,
            Signal::Straightline | Signal::Fast | Signal::FailedCheck | Signal::Honeypot
        )
    }

    /// A short label for pages and the export's column label.
    pub fn label(self) -> &'static str {
        match self {
            Signal::Straightline => "Straight-lining",
            Signal::Fast => "Too fast on the situation",
            Signal::FailedCheck => "Failed attention check",
            Signal::Honeypot => "Filled the hidden field",
            Signal::ReadingFloor => "Faster than reading",
            Signal::Speed => "Relative speed (TIME_RSI)",
            Signal::Inconsistent => "Inconsistent answers",
            Signal::Duplicate => "Duplicate answers",
            Signal::ModelLike => "Answers like a model",
        }
    }

    /// What the signal means, for the codebook and the exclusion-rules form.
    pub fn meaning(self) -> &'static str {
        match self {
            Signal::Straightline => "Every answer of a questionnaire page was the same value.",
            Signal::Fast => "Left the situation page before the study's minimum reading time.",
            Signal::FailedCheck => {
                "Answered the attention check wrongly (whether or not that ended the survey)."
            }
            Signal::Honeypot => {
                "Filled the situation page's hidden field labelled \"leave this empty\", which \
                 people do not see and cannot reach with the keyboard; form-filling scripts fill it."
            }
            Signal::ReadingFloor => {
                "Submitted a page faster than its words can be read at 1,000 words a minute plus \
                 0.25 s per answer."
            }
            Signal::Speed => {
                "Relative speed index (SoSci Survey's TIME_RSI): mean over pages of the page's \
                 median time divided by the participant's; above 2 (twice as fast as the typical \
                 participant). Needs 10 timed participants per page."
            }
            Signal::Inconsistent => {
                "Answered at least 20 % of the item pairs that correlate at r >= 0.6 among the \
                 other humans (psychometric synonyms, both questionnaires) three quarters of the \
                 scale apart."
            }
            Signal::Duplicate => {
                "Both questionnaires answered exactly as another participant of the study did."
            }
            Signal::ModelLike => {
                "The answers are more than 100 times likelier under a model's runs of this study \
                 (same instrument and situation) than under the other humans' answers \
                 (per-item answer distributions, smoothed)."
            }
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of evidence and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub signal: Signal,
    pub reason: String,
}

/// Words a minute nobody reads faster with understanding (about four times the typical
/// silent reading speed of English, ~240; Brysbaert 2019): a generous floor.
pub const READING_WPM: u64 = 1_000;
/// The least time one answer (a click or tap) takes on top of the reading.
pub const MS_PER_ANSWER: u64 = 250;
/// `TIME_RSI` above this is evidence (twice as fast as the median participant).
pub const RSI_THRESHOLD: f64 = 2.0;
/// The fewest timed participants a page's median needs (SoSci: 10 cases).
pub const RSI_MIN_PEOPLE: usize = 10;
/// A page time below this counts as this (a page submitted "in 0 ms" would divide by zero).
pub const RSI_MIN_MS: i64 = 100;
/// The fewest other humans the answer-based signals compare with.
pub const MIN_HUMANS: usize = 10;
/// Psychometric synonyms correlate at least this much among the humans.
pub const SYNONYM_R: f64 = 0.6;
/// Share of the synonym pairs answered far apart that is evidence.
pub const INCONSISTENT_SHARE: f64 = 0.2;
/// Model-likeness is evidence above this likelihood ratio (models vs humans).
pub const MODEL_LR_THRESHOLD: f64 = 100.0;
/// Pseudo-counts of the pooled distribution in each situation's smoothed distribution.
pub const SMOOTHING: f64 = 5.0;

/// Words in a text, as a reader counts them.
pub fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The least time a page of `words` words with `answers` answers can take a reader.
pub fn floor_ms(words: u64, answers: u64) -> i64 {
    let ms = words * 60_000 / READING_WPM + answers * MS_PER_ANSWER;
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// One page's time: from first shown to submitted, and its reading floor when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageTime {
    pub page: Page,
    pub ms: i64,
    pub floor_ms: Option<i64>,
}

/// What the survey stored as it went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredFlags {
    pub straightline: bool,
    pub fast: bool,
    pub failed_check: bool,
    pub honeypot: bool,
}

/// One participant as the assessment reads them.
#[derive(Debug, Clone, Default)]
pub struct Person {
    /// The exports' participant id (named in the duplicate's reason).
    pub export_id: String,
    pub situation: Option<i64>,
    /// Both blocks' answers in canonical item order, when complete.
    pub before: Option<Vec<i32>>,
    pub after: Option<Vec<i32>>,
    /// Empty for imported participants (no timings).
    pub pages: Vec<PageTime>,
    pub flags: StoredFlags,
    /// A completed participant: one of the "other humans" everyone is compared with (page
    /// medians, synonyms, answer distributions). Participants still answering, or ended by
    /// the check, are assessed against them without being part of them.
    pub reference: bool,
}

/// A model's answers in the study on its instrument: default-measure trials and evoked trials
/// by situation, each in canonical item order.
#[derive(Debug, Clone, Default)]
pub struct ModelAnswers {
    pub model: String,
    pub default: Vec<Vec<i32>>,
    pub evoked: HashMap<i64, Vec<Vec<i32>>>,
}

/// The answer scale.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub min: i32,
    pub max: i32,
}

impl Scale {
    fn k(self) -> usize {
        usize::try_from(self.max - self.min + 1).unwrap_or(1).max(1)
    }
    fn index(self, v: i32) -> Option<usize> {
        usize::try_from(v - self.min).ok().filter(|i| *i < self.k())
    }
}

/// Everything [`assess`] found about one participant, with the figures behind it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Assessment {
    pub findings: Vec<Finding>,
    /// `TIME_RSI`, when the study has enough timed participants.
    pub rsi: Option<f64>,
    /// The most model-like model and log10 of its likelihood ratio, when computed.
    pub model_lr: Option<(String, f64)>,
    /// The page times read (for the participant's page).
    pub pages: Vec<PageTime>,
}

impl Assessment {
    pub fn has(&self, s: Signal) -> bool {
        self.findings.iter().any(|f| f.signal == s)
    }

    /// The reasons, one per finding, for the exports' `evidence` column.
    pub fn reasons(&self) -> String {
        self.findings
            .iter()
            .map(|f| format!("{}: {}", f.signal, f.reason))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The evidence about every participant of `people` against `models` on scale `scale`; the
/// `reference` ones (completed) are each other's "other humans".
pub fn assess(people: &[Person], models: &[ModelAnswers], scale: Scale) -> Vec<Assessment> {
    let reference: Vec<&Person> = people.iter().filter(|p| p.reference).collect();
    let medians = page_medians(&reference);
    let synonyms = Synonyms::of(&reference);
    let humans = HumanCounts::of(&reference, scale);
    let model_counts: Vec<ModelCounts> = models.iter().map(|m| ModelCounts::of(m, scale)).collect();
    let duplicates = duplicates(people);
    people
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut a = Assessment {
                pages: p.pages.clone(),
                ..Assessment::default()
            };
            stored(p, &mut a.findings);
            reading_floor(p, &mut a.findings);
            a.rsi = rsi(p, &medians);
            if let Some(r) = a.rsi.filter(|r| *r > RSI_THRESHOLD) {
                a.findings.push(Finding {
                    signal: Signal::Speed,
                    reason: format!("relative speed index {r:.1} (over {RSI_THRESHOLD})"),
                });
            }
            if let Some(f) = synonyms.inconsistency(p, scale) {
                a.findings.push(f);
            }
            if let Some(other) = duplicates.get(&i) {
                a.findings.push(Finding {
                    signal: Signal::Duplicate,
                    reason: format!("answers identical to participant {other}'s"),
                });
            }
            a.model_lr = model_counts
                .iter()
                .filter_map(|m| model_log_lr(p, &humans, m, scale).map(|l| (m.model.clone(), l)))
                .max_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((model, l)) = &a.model_lr
                && *l > MODEL_LR_THRESHOLD.log10()
            {
                a.findings.push(Finding {
                    signal: Signal::ModelLike,
                    reason: format!(
                        "answers 10^{l:.1} times likelier under {model}'s runs than under the \
                         other humans'"
                    ),
                });
            }
            a
        })
        .collect()
}

/// The findings of what the survey stored.
fn stored(p: &Person, out: &mut Vec<Finding>) {
    let f = p.flags;
    let mut push = |on: bool, signal: Signal, reason: &str| {
        if on {
            out.push(Finding {
                signal,
                reason: reason.to_owned(),
            });
        }
    };
    push(
        f.straightline,
        Signal::Straightline,
        "every answer of a questionnaire page the same",
    );
    push(
        f.fast,
        Signal::Fast,
        "left the situation page before the study's minimum time",
    );
    push(
        f.failed_check,
        Signal::FailedCheck,
        "answered the attention check wrongly",
    );
    push(
        f.honeypot,
        Signal::Honeypot,
        "filled the hidden field labelled \"leave this empty\"",
    );
}

fn reading_floor(p: &Person, out: &mut Vec<Finding>) {
    let under: Vec<String> = p
        .pages
        .iter()
        .filter_map(|t| {
            let floor = t.floor_ms?;
            (t.ms < floor).then(|| {
                format!(
                    "{} in {:.1} s (floor {:.1} s)",
                    t.page.as_str(),
                    t.ms as f64 / 1000.0,
                    floor as f64 / 1000.0
                )
            })
        })
        .collect();
    if !under.is_empty() {
        out.push(Finding {
            signal: Signal::ReadingFloor,
            reason: under.join(", "),
        });
    }
}

/// Each page's median time over the participants timed on it, for pages with enough of them.
fn page_medians(people: &[&Person]) -> HashMap<Page, f64> {
    let mut by_page: HashMap<Page, Vec<i64>> = HashMap::new();
    for p in people {
        for t in &p.pages {
            by_page
                .entry(t.page)
                .or_default()
                .push(t.ms.max(RSI_MIN_MS));
        }
    }
    by_page
        .into_iter()
        .filter(|(_, v)| v.len() >= RSI_MIN_PEOPLE)
        .map(|(page, mut v)| {
            v.sort_unstable();
            let n = v.len();
            let m = if n % 2 == 1 {
                v[n / 2] as f64
            } else {
                (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
            };
            (page, m)
        })
        .collect()
}

/// `TIME_RSI`: the mean over the participant's timed pages (those with a median) of page
/// median ÷ own time.
fn rsi(p: &Person, medians: &HashMap<Page, f64>) -> Option<f64> {
    let speeds: Vec<f64> = p
        .pages
        .iter()
        .filter_map(|t| {
            medians
                .get(&t.page)
                .map(|m| m / t.ms.max(RSI_MIN_MS) as f64)
        })
        .collect();
    (!speeds.is_empty()).then(|| speeds.iter().sum::<f64>() / speeds.len() as f64)
}

/// For each participant whose two blocks equal an earlier or later one's: that one's id.
fn duplicates(people: &[Person]) -> HashMap<usize, String> {
    let mut seen: HashMap<(&[i32], &[i32]), Vec<usize>> = HashMap::new();
    for (i, p) in people.iter().enumerate() {
        if let (Some(b), Some(a)) = (&p.before, &p.after) {
            seen.entry((b.as_slice(), a.as_slice()))
                .or_default()
                .push(i);
        }
    }
    let mut out = HashMap::new();
    for group in seen.values().filter(|g| g.len() > 1) {
        for &i in group {
            if let Some(&other) = group.iter().find(|&&j| j != i) {
                out.insert(i, people[other].export_id.clone());
            }
        }
    }
    out
}

/// Pearson's r of two columns; `None` when one is constant.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// The psychometric synonyms of each block, from all the humans' answers (one participant
/// among many barely moves a correlation, so no leave-one-out here).
struct Synonyms {
    before: Vec<(usize, usize)>,
    after: Vec<(usize, usize)>,
}

impl Synonyms {
    fn of(people: &[&Person]) -> Synonyms {
        let block = |pick: fn(&Person) -> Option<&Vec<i32>>| -> Vec<(usize, usize)> {
            let rows: Vec<&Vec<i32>> = people.iter().filter_map(|p| pick(p)).collect();
            let Some(n) = rows.first().map(|r| r.len()) else {
                return Vec::new();
            };
            if rows.len() < MIN_HUMANS || rows.iter().any(|r| r.len() != n) {
                return Vec::new();
            }
            let cols: Vec<Vec<f64>> = (0..n)
                .map(|j| rows.iter().map(|r| f64::from(r[j])).collect())
                .collect();
            let mut pairs = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    if pearson(&cols[i], &cols[j]).is_some_and(|r| r >= SYNONYM_R) {
                        pairs.push((i, j));
                    }
                }
            }
            pairs
        };
        Synonyms {
            before: block(|p| p.before.as_ref()),
            after: block(|p| p.after.as_ref()),
        }
    }

    fn inconsistency(&self, p: &Person, scale: Scale) -> Option<Finding> {
        // Three quarters of the scale apart: 3 on 1–5, 5 on 1–7 (rounded up).
        let gap = ((f64::from(scale.max - scale.min) * 0.75).ceil() as i32).max(1);
        let mut total = 0;
        let mut far = 0;
        for (answers, pairs) in [(&p.before, &self.before), (&p.after, &self.after)] {
            let Some(v) = answers else { continue };
            for &(i, j) in pairs {
                if let (Some(a), Some(b)) = (v.get(i), v.get(j)) {
                    total += 1;
                    far += usize::from((a - b).abs() >= gap);
                }
            }
        }
        (total > 0 && far as f64 >= INCONSISTENT_SHARE * total as f64).then(|| Finding {
            signal: Signal::Inconsistent,
            reason: format!(
                "{far} of {total} closely correlated item pairs answered {gap} or more apart"
            ),
        })
    }
}

/// Answer counts per item and value: `[item][value]`.
type Counts = Vec<Vec<f64>>;

fn counts_of<'a>(rows: impl Iterator<Item = &'a Vec<i32>>, scale: Scale) -> (Counts, f64) {
    let mut c: Counts = Vec::new();
    let mut n = 0.0;
    for r in rows {
        if c.len() < r.len() {
            c.resize(r.len(), vec![0.0; scale.k()]);
        }
        for (j, v) in r.iter().enumerate() {
            if let Some(k) = scale.index(*v) {
                c[j][k] += 1.0;
            }
        }
        n += 1.0;
    }
    (c, n)
}

fn count(c: &Counts, item: usize, k: usize) -> f64 {
    c.get(item).and_then(|r| r.get(k)).copied().unwrap_or(0.0)
}

/// The humans' answer counts: both blocks pooled, and the evoked block per situation.
struct HumanCounts {
    before: (Counts, f64),
    after: (Counts, f64),
    after_by_situation: HashMap<i64, (Counts, f64)>,
}

impl HumanCounts {
    fn of(people: &[&Person], scale: Scale) -> HumanCounts {
        let mut by: HashMap<i64, Vec<&Vec<i32>>> = HashMap::new();
        for p in people {
            if let (Some(s), Some(a)) = (p.situation, &p.after) {
                by.entry(s).or_default().push(a);
            }
        }
        HumanCounts {
            before: counts_of(people.iter().filter_map(|p| p.before.as_ref()), scale),
            after: counts_of(people.iter().filter_map(|p| p.after.as_ref()), scale),
            after_by_situation: by
                .into_iter()
                .map(|(s, rows)| (s, counts_of(rows.into_iter(), scale)))
                .collect(),
        }
    }
}

/// A model's answer counts: default trials, evoked trials pooled and per situation.
struct ModelCounts {
    model: String,
    default: (Counts, f64),
    evoked: (Counts, f64),
    by_situation: HashMap<i64, (Counts, f64)>,
}

impl ModelCounts {
    fn of(m: &ModelAnswers, scale: Scale) -> ModelCounts {
        ModelCounts {
            model: m.model.clone(),
            default: counts_of(m.default.iter(), scale),
            evoked: counts_of(m.evoked.values().flatten(), scale),
            by_situation: m
                .evoked
                .iter()
                .map(|(s, rows)| (*s, counts_of(rows.iter(), scale)))
                .collect(),
        }
    }
}

/// log10 of the likelihood ratio of `p`'s answers under model `m` vs under the other humans.
///
/// Per item and block, the probability of the answer given:
/// - humans, "before": the other humans' answers to the item, plus one per value (Laplace);
/// - humans, "after": the other humans of the same situation, plus [`SMOOTHING`]
///   pseudo-answers spread as all other humans' "after" answers to the item (themselves
///   Laplace-smoothed), so a situation with few humans leans on the pooled distribution;
/// - the model, "before": its default trials plus one per value;
/// - the model, "after": its trials of the same situation smoothed in the same way towards
///   its trials of all situations.
///
/// Items are treated as independent (the sum of per-item log ratios): a naive Bayes ratio,
/// which overstates the evidence of correlated items in both directions alike. `None` when
/// there are fewer than [`MIN_HUMANS`] other humans, the participant's answers are not
/// complete, or the model has no trials for either block.
fn model_log_lr(p: &Person, humans: &HumanCounts, m: &ModelCounts, scale: Scale) -> Option<f64> {
    let k = scale.k() as f64;
    // The participant's own answers are in the humans' counts when they are one of them:
    // taken out again (leave-one-out).
    let own = if p.reference { 1.0 } else { 0.0 };
    let mut log = 0.0;
    let mut used = false;
    if let Some(b) = &p.before
        && m.default.1 > 0.0
        && humans.before.1 - own >= MIN_HUMANS as f64
    {
        let (hc, hn) = &humans.before;
        for (j, v) in b.iter().enumerate() {
            let x = scale.index(*v)?;
            let ph = ((count(hc, j, x) - own).max(0.0) + 1.0) / (hn - own + k);
            let pm = (count(&m.default.0, j, x) + 1.0) / (m.default.1 + k);
            log += (pm / ph).ln();
        }
        used = true;
    }
    if let (Some(a), Some(s)) = (&p.after, p.situation)
        && let Some((mc, mn)) = m.by_situation.get(&s)
        && humans.after.1 - own >= MIN_HUMANS as f64
    {
        let (pc, pn) = &humans.after;
        let empty = (Counts::new(), 0.0);
        let (sc, sn) = humans.after_by_situation.get(&s).unwrap_or(&empty);
        let own_here = if sc.is_empty() { 0.0 } else { own };
        for (j, v) in a.iter().enumerate() {
            let x = scale.index(*v)?;
            let pool = ((count(pc, j, x) - own).max(0.0) + 1.0) / (pn - own + k);
            let ph = ((count(sc, j, x) - own_here).max(0.0) + SMOOTHING * pool)
                / ((sn - own_here).max(0.0) + SMOOTHING);
            let mpool = (count(&m.evoked.0, j, x) + 1.0) / (m.evoked.1 + k);
            let pm = (count(mc, j, x) + SMOOTHING * mpool) / (mn + SMOOTHING);
            log += (pm / ph).ln();
        }
        used = true;
    }
    used.then(|| log / std::f64::consts::LN_10)
}

/// One assessed participant (`id`: the participant's row id).
#[derive(Debug, Clone)]
pub struct Assessed {
    pub id: i64,
    pub export_id: String,
    pub imported: bool,
    /// Completed: the exclusion rules concern only these (the analysis sample).
    pub completed: bool,
    pub assessment: Assessment,
}

/// The evidence about a study's completed participants, with the study's exclusion rules.
#[derive(Debug, Clone, Default)]
pub struct StudyEvidence {
    pub people: Vec<Assessed>,
    index: HashMap<i64, usize>,
    pub rules: ExclusionRules,
    /// The models whose runs the model-likeness compared with.
    pub models: Vec<String>,
}

impl StudyEvidence {
    pub fn new(people: Vec<Assessed>, rules: ExclusionRules, models: Vec<String>) -> Self {
        let index = people.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
        StudyEvidence {
            people,
            index,
            rules,
            models,
        }
    }

    pub fn of(&self, id: i64) -> Option<&Assessment> {
        self.index.get(&id).map(|i| &self.people[*i].assessment)
    }

    /// The signals that exclude this participant under the study's rules (empty: included).
    pub fn excluded_by(&self, id: i64) -> Vec<Signal> {
        self.of(id)
            .map(|a| self.rules.excluded_by(a))
            .unwrap_or_default()
    }

    /// How many participants carry each signal, every signal listed.
    pub fn signal_counts(&self) -> Vec<(Signal, usize)> {
        Signal::ALL
            .into_iter()
            .map(|s| {
                let n = self.people.iter().filter(|p| p.assessment.has(s)).count();
                (s, n)
            })
            .collect()
    }

    /// Exclusions of completed participants per rule and in all.
    pub fn exclusions(&self) -> (Vec<(Signal, usize)>, usize) {
        let all: Vec<&Assessment> = self
            .people
            .iter()
            .filter(|p| p.completed)
            .map(|p| &p.assessment)
            .collect();
        exclusion_counts(&self.rules, &all)
    }
}

/// Which signals exclude a participant from the analysis (set per study before launch).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExclusionRules {
    pub signals: BTreeSet<Signal>,
}

impl ExclusionRules {
    /// The signals of `a` that exclude the participant, in the order of [`Signal::ALL`].
    pub fn excluded_by(&self, a: &Assessment) -> Vec<Signal> {
        Signal::ALL
            .into_iter()
            .filter(|s| self.signals.contains(s) && a.has(*s))
            .collect()
    }

    /// Parses a comma-separated list of signal names (`none` or empty: no rule).
    pub fn parse_list(s: &str) -> Result<ExclusionRules, String> {
        let mut signals = BTreeSet::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "none" {
                continue;
            }
            let sig = Signal::parse(name).ok_or_else(|| {
                format!(
                    "unknown signal {name:?}; known: {}",
                    Signal::ALL.map(Signal::as_str).join(", ")
                )
            })?;
            signals.insert(sig);
        }
        Ok(ExclusionRules { signals })
    }

    /// The rules as a list of names, `none` when empty.
    pub fn describe(&self) -> String {
        if self.signals.is_empty() {
            "none".to_owned()
        } else {
            self.signals
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// How many participants each rule excluded (each counted under every rule that applies) and
/// how many were excluded in all.
pub fn exclusion_counts(
    rules: &ExclusionRules,
    assessments: &[&Assessment],
) -> (Vec<(Signal, usize)>, usize) {
    let mut per: Vec<(Signal, usize)> = rules.signals.iter().map(|s| (*s, 0)).collect();
    let mut total = 0;
    for a in assessments {
        let by = rules.excluded_by(a);
        if !by.is_empty() {
            total += 1;
        }
        for s in by {
            if let Some(slot) = per.iter_mut().find(|(x, _)| *x == s) {
                slot.1 += 1;
            }
        }
    }
    (per, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: Scale = Scale { min: 1, max: 5 };

    /// A deterministic pseudo-random answer in 1..=5 (no rand dependency in the domain).
    fn noise(seed: u64) -> i32 {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        x ^= x >> 31;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 29;
        (x % 5) as i32 + 1
    }

    /// A "human" whose items 0 and 1 go together (a synonym pair), the rest noisy.
    fn human(i: u64, situation: i64) -> Person {
        let block = |salt: u64| -> Vec<i32> {
            let base = noise(i * 97 + salt);
            (0..10)
                .map(|j| {
                    if j < 2 {
                        base
                    } else {
                        noise(i * 1_000 + salt * 31 + j)
                    }
                })
                .collect()
        };
        Person {
            export_id: format!("h{i}"),
            situation: Some(situation),
            before: Some(block(1)),
            after: Some(block(2)),
            pages: vec![
                PageTime {
                    page: Page::Situation,
                    ms: 20_000 + (i as i64 % 7) * 1_000,
                    floor_ms: Some(5_000),
                },
                PageTime {
                    page: Page::PanasBefore,
                    ms: 30_000 + (i as i64 % 5) * 1_000,
                    floor_ms: Some(8_000),
                },
            ],
            flags: StoredFlags::default(),
            reference: true,
        }
    }

    /// A peaked "model": always 1 on every item but the first (3), with rare deviations.
    fn model() -> ModelAnswers {
        let trial = |t: u64| -> Vec<i32> {
            (0..10)
                .map(|j| {
                    if j == 0 {
                        3
                    } else if (t + j) % 9 == 0 {
                        2
                    } else {
                        1
                    }
                })
                .collect()
        };
        ModelAnswers {
            model: "m".into(),
            default: (0..20).map(trial).collect(),
            evoked: [(1, (0..10).map(trial).collect())].into_iter().collect(),
        }
    }

    fn crowd() -> Vec<Person> {
        (0..40).map(|i| human(i, 1 + (i as i64 % 2))).collect()
    }

    #[test]
    fn a_reader_at_a_normal_pace_gets_no_evidence() {
        let people = crowd();
        let out = assess(&people, &[model()], SCALE);
        let flagged: Vec<_> = out.iter().filter(|a| !a.findings.is_empty()).collect();
        assert!(
            flagged.len() <= 2,
            "{} of 40 flagged: {flagged:?}",
            flagged.len()
        );
        assert!(out[0].rsi.is_some_and(|r| r > 0.5 && r < 1.5));
    }

    #[test]
    fn reading_floor_and_relative_speed_catch_a_fast_filler() {
        let mut people = crowd();
        let mut bot = human(99, 1);
        for t in &mut bot.pages {
            t.ms = 40;
        }
        bot.flags.honeypot = true;
        people.push(bot);
        let out = assess(&people, &[], SCALE);
        let a = out.last().unwrap();
        assert!(a.has(Signal::ReadingFloor), "{a:?}");
        assert!(a.has(Signal::Speed), "{a:?}");
        assert!(a.has(Signal::Honeypot));
        assert!(a.rsi.unwrap() > 100.0);
        assert!(a.reasons().contains("situation in 0.0 s (floor 5.0 s)"));
    }

    #[test]
    fn no_relative_speed_below_ten_timed_participants() {
        let people: Vec<Person> = (0..9).map(|i| human(i, 1)).collect();
        assert!(assess(&people, &[], SCALE).iter().all(|a| a.rsi.is_none()));
    }

    #[test]
    fn a_copy_of_a_model_trial_is_model_like_and_the_humans_mostly_not() {
        let mut people = crowd();
        let m = model();
        let mut agent = human(500, 1);
        agent.before = Some(m.default[3].clone());
        agent.after = Some(m.evoked[&1][4].clone());
        people.push(agent);
        let out = assess(&people, &[m], SCALE);
        let a = out.last().unwrap();
        assert!(a.has(Signal::ModelLike), "{a:?}");
        assert!(a.model_lr.as_ref().unwrap().1 > 2.0);
        let humans = out[..40]
            .iter()
            .filter(|a| a.has(Signal::ModelLike))
            .count();
        assert_eq!(humans, 0);
    }

    #[test]
    fn no_model_likeness_without_enough_humans_or_trials() {
        let people: Vec<Person> = (0..5).map(|i| human(i, 1)).collect();
        let out = assess(&people, &[model()], SCALE);
        assert!(out.iter().all(|a| a.model_lr.is_none()));
        let out = assess(&crowd(), &[ModelAnswers::default()], SCALE);
        assert!(out.iter().all(|a| a.model_lr.is_none()));
    }

    #[test]
    fn identical_answer_vectors_name_each_other() {
        let mut people = crowd();
        let mut twin = human(77, 2);
        twin.before = people[3].before.clone();
        twin.after = people[3].after.clone();
        people.push(twin);
        let out = assess(&people, &[], SCALE);
        assert!(out[3].reasons().contains("participant h77"));
        assert!(out[40].reasons().contains("participant h3"));
        assert!(!out[4].has(Signal::Duplicate));
    }

    #[test]
    fn synonyms_answered_far_apart_are_inconsistent() {
        let mut people = crowd();
        let mut odd = human(300, 1);
        // Items 0 and 1 always go together among the others; here they are 1 and 5.
        for b in [&mut odd.before, &mut odd.after] {
            let v = b.as_mut().unwrap();
            v[0] = 1;
            v[1] = 5;
        }
        people.push(odd);
        let out = assess(&people, &[], SCALE);
        assert!(out[40].has(Signal::Inconsistent), "{:?}", out[40]);
        assert!(!out[0].has(Signal::Inconsistent));
    }

    #[test]
    fn floors_grow_with_words_and_answers() {
        assert_eq!(floor_ms(100, 0), 6_000);
        assert_eq!(floor_ms(0, 20), 5_000);
        assert_eq!(words("  two\nwords "), 2);
    }

    #[test]
    fn exclusion_rules_count_each_reason() {
        let rules = ExclusionRules::parse_list("honeypot, model_like").unwrap();
        let hp = Assessment {
            findings: vec![Finding {
                signal: Signal::Honeypot,
                reason: String::new(),
            }],
            ..Default::default()
        };
        let both = Assessment {
            findings: vec![
                Finding {
                    signal: Signal::Honeypot,
                    reason: String::new(),
                },
                Finding {
                    signal: Signal::ModelLike,
                    reason: String::new(),
                },
            ],
            ..Default::default()
        };
        let fast = Assessment {
            findings: vec![Finding {
                signal: Signal::Fast,
                reason: String::new(),
            }],
            ..Default::default()
        };
        let (per, total) = exclusion_counts(&rules, &[&hp, &both, &fast]);
        assert_eq!(per, vec![(Signal::Honeypot, 2), (Signal::ModelLike, 1)]);
        assert_eq!(total, 2);
        assert!(ExclusionRules::parse_list("bogus").is_err());
        assert_eq!(rules.describe(), "honeypot, model_like");
        assert_eq!(ExclusionRules::default().describe(), "none");
    }
}
