//! The built-in demo study: lets anyone try the EmotionBench procedure without loading data.
//!
//! The situations are our own, deliberately mild inventions. They are not taken or adapted
//! from the upstream dataset, whose licence restricts commercial use.

use super::situation::{EMOTIONS, Situation, Valence, situation_key};

/// A complete, self-contained study definition used for demonstrations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoStudy {
    /// `"demo"`.
    pub slug: &'static str,
    pub title: &'static str,
    /// Plain text; paragraphs are separated by blank lines.
    pub consent_text: &'static str,
    /// Plain text; paragraphs are separated by blank lines.
    pub debrief_text: &'static str,
    /// The title, consent and debrief in German (#20), our own translation.
    pub title_de: &'static str,
    pub consent_text_de: &'static str,
    pub debrief_text_de: &'static str,
    /// `"demo"`.
    pub situation_set: &'static str,
    /// Two situations per emotion, in the order of [`EMOTIONS`].
    pub situations: Vec<Situation>,
    /// `"demo-valence"`: the demo's situations and their valence variants (#18).
    pub valence_set: &'static str,
    /// Our positive and neutral rewrites of some demo situations, each linked to its original.
    pub variants: Vec<Situation>,
}

impl DemoStudy {
    /// The valence set: the originals, then the variants.
    pub fn valence_situations(&self) -> Vec<Situation> {
        self.situations
            .iter()
            .chain(&self.variants)
            .cloned()
            .collect()
    }
}

/// Valence variants (#18) of demo situations, written by the emotionbench team like the demo
/// situations themselves: (emotion, scenario index of the original, valence, text). Each keeps
/// its original's setting and changes how it turns out, so that the valence is what differs.
const DEMO_VARIANTS: [(&str, u32, Valence, &str); 12] = [
    (
        "Anger",
        0,
        Valence::Positive,
        "You have been waiting your turn at the bakery counter for ten minutes. When you reach \
         the front, the assistant apologises for the wait and puts a warm roll in your bag as \
         a gift.",
    ),
    (
        "Anger",
        1,
        Valence::Neutral,
        "In a team meeting, a colleague shows the spreadsheet you built this afternoon, and \
         the team moves on to the next point on the agenda.",
    ),
    (
        "Anxiety",
        0,
        Valence::Positive,
        "This morning you sent your manager an email about a decision that matters a lot to \
         you. Before lunch she replies that she agrees and thanks you for raising it.",
    ),
    (
        "Anxiety",
        1,
        Valence::Neutral,
        "You have to leave for the airport in an hour, and your passport is in the drawer \
         where you always keep it.",
    ),
    (
        "Depression",
        0,
        Valence::Positive,
        "You planned a weekend with old friends, and every one of them arrives. You spend \
         Saturday laughing together in your flat while the rain keeps falling outside.",
    ),
    (
        "Frustration",
        0,
        Valence::Positive,
        "You spend half an hour filling in a long online form. When you press submit, the \
         website confirms it at once and emails you a copy of everything you typed.",
    ),
    (
        "Frustration",
        1,
        Valence::Neutral,
        "You follow the instructions for a new bookshelf step by step, and at the end it \
         stands against the wall as in the picture.",
    ),
    (
        "Jealousy",
        0,
        Valence::Positive,
        "Your closest friend sends you a photo of the two of you from last summer and asks \
         whether you would like to come along on a day trip this weekend.",
    ),
    (
        "Guilt",
        0,
        Valence::Positive,
        "You promised to water your neighbour's plants while they were away, and you did it \
         every evening. When they come back, they thank you with a jar of homemade jam.",
    ),
    (
        "Fear",
        0,
        Valence::Positive,
        "On a hiking trail, the morning fog lifts and the whole valley lies below you in the \
         sunshine. The next trail marker is just ahead.",
    ),
    (
        "Fear",
        1,
        Valence::Neutral,
        "You are on a flight. The seatbelt sign lights up with a chime, and the crew starts \
         the drinks service a few rows ahead of you.",
    ),
    (
        "Embarrassment",
        0,
        Valence::Positive,
        "You wave at an old friend across the street, who waves back with a big smile and \
         crosses over to say hello to you.",
    ),
];

/// The variants as situations of the valence set: the original's place, key
/// `<original key>_<valence>`.
fn demo_variants(originals: &[Situation]) -> Vec<Situation> {
    DEMO_VARIANTS
        .iter()
        .filter_map(|(emotion, scenario, valence, text)| {
            let original = originals
                .iter()
                .find(|s| s.emotion == *emotion && s.scenario_index == *scenario)?;
            Some(Situation {
                key: format!("{}_{}", original.key, valence.as_str()),
                variant_of: Some(original.key.clone()),
                valence: *valence,
                text: (*text).to_string(),
                ..original.clone()
            })
        })
        .collect()
}

const CONSENT_TEXT: &str = "\
This is a demonstration of an emotion study that follows the EmotionBench procedure. It is not \
a real research study, and your answers will not be used for any scientific analysis.

First you will rate how strongly you feel each of a list of 20 feelings right now. Then you \
will read a short description of an everyday situation, imagine as vividly as you can that it \
is happening to you, and rate the same feelings again. This takes about five minutes.

The situations are mild and everyday, but imagining one may briefly bring up an unpleasant \
feeling such as irritation, worry or embarrassment. You can stop at any time, without giving a \
reason, by closing the page.

Please do not type your name or other personal details into any answer field.

Taking part is voluntary. By continuing, you confirm that you are at least 18 years old and \
that you want to try the demo.";

const DEBRIEF_TEXT: &str = "\
Thank you for trying the demo.

The procedure you just went through comes from EmotionBench (Huang et al., \"Apathetic or \
Empathetic? Evaluating LLMs' Emotional Alignments with Humans\", NeurIPS 2024). The study \
compares how people and large language models react emotionally to the same situations.

You first rated your feelings on the PANAS (Positive and Negative Affect Schedule), a \
questionnaire of 20 feelings: ten positive ones such as \"interested\" or \"enthusiastic\" and \
ten negative ones such as \"upset\" or \"nervous\". You then imagined a situation chosen to \
evoke one of eight emotions (anger, anxiety, depression, frustration, jealousy, guilt, fear or \
embarrassment) and rated the same feelings again. The difference between your two sets of \
ratings shows how much imagining the situation changed your positive and negative feelings. \
In the full study, the same questions are also put to language models and their answers are \
compared with those of people.

The situation you read was imagined, not real, and was written for this demo. This was a \
demonstration only: your answers are not part of any research data.

If the situation left you with an unpleasant feeling, it usually fades quickly. Taking a short \
break or doing something you enjoy can help.";

const CONSENT_TEXT_DE: &str = "\
Dies ist eine Demonstration einer Emotionsstudie nach dem EmotionBench-Verfahren. Es ist keine \
echte Forschungsstudie, und Ihre Antworten werden für keine wissenschaftliche Auswertung \
verwendet.

Zuerst geben Sie an, wie stark Sie jedes von 20 Gefühlen gerade jetzt empfinden. Dann lesen Sie \
die kurze Beschreibung einer alltäglichen Situation, stellen sich so lebhaft wie möglich vor, \
dass sie Ihnen gerade passiert, und bewerten dieselben Gefühle noch einmal. Das dauert etwa \
fünf Minuten.

Die Situationen sind harmlos und alltäglich, doch sich eine davon vorzustellen, kann kurz ein \
unangenehmes Gefühl wie Ärger, Sorge oder Verlegenheit hervorrufen. Sie können jederzeit ohne \
Angabe von Gründen aufhören, indem Sie die Seite schließen.

Bitte geben Sie in keinem Antwortfeld Ihren Namen oder andere persönliche Angaben ein.

Die Teilnahme ist freiwillig. Wenn Sie fortfahren, bestätigen Sie, dass Sie mindestens 18 Jahre \
alt sind und die Demo ausprobieren möchten.";

const DEBRIEF_TEXT_DE: &str = "\
Vielen Dank, dass Sie die Demo ausprobiert haben.

Das Verfahren, das Sie gerade durchlaufen haben, stammt aus EmotionBench (Huang et al., \
„Apathetic or Empathetic? Evaluating LLMs' Emotional Alignments with Humans“, NeurIPS 2024). \
Die Studie vergleicht, wie Menschen und große Sprachmodelle emotional auf dieselben Situationen \
reagieren.

Zuerst haben Sie Ihre Gefühle mit dem PANAS (Positive and Negative Affect Schedule) bewertet, \
einem Fragebogen mit 20 Gefühlen: zehn positiven wie „interessiert“ oder „begeistert“ und zehn \
negativen wie „bekümmert“ oder „nervös“. Dann haben Sie sich eine Situation vorgestellt, die \
eine von acht Emotionen hervorrufen soll (Ärger, Angst, Niedergeschlagenheit, Frustration, \
Eifersucht, Schuld, Furcht oder Verlegenheit), und dieselben Gefühle noch einmal bewertet. Der \
Unterschied zwischen Ihren beiden Bewertungen zeigt, wie sehr das Vorstellen der Situation Ihre \
positiven und negativen Gefühle verändert hat. In der vollständigen Studie werden dieselben \
Fragen auch Sprachmodellen gestellt, und ihre Antworten werden mit denen von Menschen \
verglichen.

Die Situation, die Sie gelesen haben, war ausgedacht, nicht echt, und wurde für diese Demo \
geschrieben. Dies war nur eine Demonstration: Ihre Antworten sind nicht Teil von \
Forschungsdaten.

Falls die Situation ein unangenehmes Gefühl hinterlassen hat, vergeht es meist schnell. Eine \
kurze Pause oder etwas, das Ihnen Freude macht, kann helfen.";

/// (emotion, factor name, two situation texts), one factor per emotion in [`EMOTIONS`] order.
const DEMO_SITUATIONS: [(&str, &str, [&str; 2]); 8] = [
    (
        "Anger",
        "Being Pushed Aside",
        [
            "You have been waiting your turn at the bakery counter for ten minutes. Someone \
             walks in, goes straight to the front, and the assistant serves them first without \
             even glancing at you.",
            "In a team meeting, a colleague shows the spreadsheet you spent all afternoon \
             building and accepts the thanks for it. Nobody mentions your name.",
        ],
    ),
    (
        "Anxiety",
        "Waiting and Uncertainty",
        [
            "This morning you sent your manager an email about a decision that matters a lot \
             to you. The working day is nearly over and there is still no reply.",
            "You have to leave for the airport in an hour, and your passport is not in any of \
             the drawers where you usually keep it.",
        ],
    ),
    (
        "Depression",
        "Quiet Loneliness",
        [
            "You planned a weekend with old friends, but one after another they cancel. You \
             spend Saturday alone in your flat while the rain keeps falling.",
            "You scroll through photos from the choir you used to sing in every week. It \
             closed last year, and nothing has filled those evenings since.",
        ],
    ),
    (
        "Frustration",
        "Wasted Effort",
        [
            "You spend half an hour filling in a long online form. Just before you press \
             submit, the website logs you out and everything you typed is gone.",
            "You follow the instructions for a new bookshelf step by step. At the very end \
             you discover that one of the first panels was fitted the wrong way round.",
        ],
    ),
    (
        "Jealousy",
        "Others Having More",
        [
            "Your closest friend has started spending most weekends with a new friend from \
             work. Online you keep seeing pictures of the two of them on day trips.",
            "Your neighbour proudly shows you a brand-new bicycle, the exact model you have \
             been saving up for since spring.",
        ],
    ),
    (
        "Guilt",
        "Letting Someone Down",
        [
            "You promised to water your neighbour's plants while they were away, but you \
             forgot for several days. When they come back, a few of the plants have wilted.",
            "Tired after a long day, you snap at your younger brother over something trivial. \
             Later you notice that he has been quiet all evening.",
        ],
    ),
    (
        "Fear",
        "Losing Control of the Moment",
        [
            "On a hiking trail, thick fog rolls in and you can no longer see the next trail \
             marker. Your phone shows no signal.",
            "You are on a flight when the plane suddenly jolts through turbulence and the \
             seatbelt sign lights up with a loud chime. A few cups slide off a tray nearby.",
        ],
    ),
    (
        "Embarrassment",
        "Small Social Slips",
        [
            "You wave back cheerfully at someone across the street, then realise they were \
             waving at the person behind you.",
            "On a video call you speak for a whole minute before a colleague tells you that \
             your microphone has been muted the entire time.",
        ],
    ),
];

/// The demo's situations in German (#20), in the order of [`DEMO_SITUATIONS`]: our own
/// translation, unvalidated, like the English texts written by the emotionbench team.
const DEMO_SITUATIONS_DE: [[&str; 2]; 8] = [
    [
        "Sie warten seit zehn Minuten an der Theke der Bäckerei, bis Sie an der Reihe sind. \
         Jemand kommt herein, geht direkt nach vorn, und die Verkäuferin bedient diese Person \
         zuerst, ohne Sie auch nur anzusehen.",
        "In einer Teambesprechung zeigt eine Kollegin die Tabelle, an der Sie den ganzen \
         Nachmittag gearbeitet haben, und nimmt den Dank dafür entgegen. Niemand nennt Ihren \
         Namen.",
    ],
    [
        "Heute Morgen haben Sie Ihrer Vorgesetzten eine E-Mail zu einer Entscheidung \
         geschickt, die Ihnen sehr wichtig ist. Der Arbeitstag ist fast vorbei, und es gibt \
         noch immer keine Antwort.",
        "In einer Stunde müssen Sie zum Flughafen aufbrechen, und Ihr Reisepass liegt in \
         keiner der Schubladen, in denen Sie ihn sonst aufbewahren.",
    ],
    [
        "Sie haben ein Wochenende mit alten Freunden geplant, doch einer nach dem anderen \
         sagt ab. Sie verbringen den Samstag allein in Ihrer Wohnung, während es ununterbrochen \
         regnet.",
        "Sie sehen sich Fotos von dem Chor an, in dem Sie früher jede Woche gesungen haben. Er \
         wurde letztes Jahr aufgelöst, und nichts hat diese Abende seitdem gefüllt.",
    ],
    [
        "Sie füllen eine halbe Stunde lang ein langes Online-Formular aus. Kurz bevor Sie auf \
         Absenden klicken, meldet die Website Sie ab, und alles, was Sie eingegeben haben, ist \
         weg.",
        "Sie bauen ein neues Bücherregal Schritt für Schritt nach Anleitung auf. Ganz am Ende \
         stellen Sie fest, dass eines der ersten Bretter verkehrt herum eingesetzt ist.",
    ],
    [
        "Ihre engste Freundin verbringt seit Kurzem die meisten Wochenenden mit einer neuen \
         Freundin von der Arbeit. Online sehen Sie ständig Bilder der beiden bei Ausflügen.",
        "Ihr Nachbar zeigt Ihnen stolz ein nagelneues Fahrrad, genau das Modell, für das Sie \
         seit dem Frühjahr sparen.",
    ],
    [
        "Sie haben versprochen, die Pflanzen Ihrer Nachbarin zu gießen, während sie verreist \
         ist, haben es aber mehrere Tage vergessen. Als sie zurückkommt, sind einige Pflanzen \
         verwelkt.",
        "Müde nach einem langen Tag fahren Sie Ihren jüngeren Bruder wegen einer Kleinigkeit \
         an. Später bemerken Sie, dass er den ganzen Abend still gewesen ist.",
    ],
    [
        "Auf einem Wanderweg zieht dichter Nebel auf, und Sie können die nächste \
         Wegmarkierung nicht mehr sehen. Ihr Handy hat keinen Empfang.",
        "Sie sitzen im Flugzeug, als die Maschine plötzlich durch Turbulenzen ruckelt und das \
         Anschnallzeichen mit einem lauten Ton aufleuchtet. In der Nähe rutschen ein paar \
         Becher von einem Tablett.",
    ],
    [
        "Sie winken jemandem auf der anderen Straßenseite fröhlich zurück und merken dann, \
         dass die Person der Person hinter Ihnen gewunken hat.",
        "In einer Videokonferenz sprechen Sie eine ganze Minute, bevor ein Kollege Ihnen sagt, \
         dass Ihr Mikrofon die ganze Zeit stummgeschaltet war.",
    ],
];

/// The demo's situations with their German texts (same keys): imported as the demo set's
/// texts in `de` (#20).
pub fn demo_situations_de() -> Vec<Situation> {
    demo_study()
        .situations
        .into_iter()
        .zip(DEMO_SITUATIONS_DE.iter().flatten())
        .map(|(s, de)| Situation {
            text: (*de).to_string(),
            ..s
        })
        .collect()
}

/// The PANAS items in German for the demo (#20), in the standard order of
/// [`super::instrument::PANAS_ITEMS`]: our own translation, unvalidated. It is not the
/// validated German PANAS (Krohne et al., 1996); a study that needs that imports it.
const DEMO_PANAS_DE_ITEMS: [&str; 20] = [
    "interessiert",
    "bekümmert",
    "angeregt",
    "aufgebracht",
    "stark",
    "schuldig",
    "verängstigt",
    "feindselig",
    "begeistert",
    "stolz",
    "reizbar",
    "wachsam",
    "beschämt",
    "inspiriert",
    "nervös",
    "entschlossen",
    "aufmerksam",
    "zappelig",
    "aktiv",
    "ängstlich",
];

/// The PANAS answer labels in German for the demo, values 1..=5: our own, unvalidated.
const DEMO_PANAS_DE_LABELS: [&str; 5] = [
    "sehr wenig oder gar nicht",
    "ein wenig",
    "mäßig",
    "ziemlich",
    "äußerst",
];

/// The demo's PANAS in German (our own, unvalidated translation) as a translation record:
/// imported as the PANAS's texts in `de` (#20).
pub fn demo_panas_de() -> super::instrument_text::TranslationRecord {
    use super::instrument::ScaleLabel;
    use super::instrument_text::{ItemText, TranslationRecord};
    TranslationRecord {
        name: super::instrument::Instrument::panas().key,
        items: (1..)
            .zip(DEMO_PANAS_DE_ITEMS)
            .map(|(number, text)| ItemText {
                number,
                text: text.to_owned(),
            })
            .collect(),
        labels: (1..)
            .zip(DEMO_PANAS_DE_LABELS)
            .map(|(value, label)| ScaleLabel {
                value,
                label: label.to_owned(),
            })
            .collect(),
    }
}

/// The key of the demo's free-text task (#18).
pub const DEMO_FREE_TEXT: &str = "DEMO-SAY";

/// The demo's free-text task (our wording, after the paper's Section 5.1): after the
/// situation, a sentence or two about each of three targets.
pub fn free_text_task() -> super::instrument::Instrument {
    super::freetext::task(
        DEMO_FREE_TEXT,
        "In one or two sentences, say what you think about TARGET right now.",
        "You are a person taking part in a study. Answer in your own words.",
        &["your neighbours", "people who are late", "your coworkers"],
    )
}

/// The demo study: 16 situations, two for each of the eight emotions.
pub fn demo_study() -> DemoStudy {
    let situations = DEMO_SITUATIONS
        .iter()
        .flat_map(|(emotion, factor_name, texts)| {
            (0u32..)
                .zip(texts.iter())
                .map(move |(scenario_index, text)| Situation {
                    key: situation_key(emotion, 0, scenario_index),
                    emotion: (*emotion).to_string(),
                    factor_index: 0,
                    factor_name: (*factor_name).to_string(),
                    scenario_index,
                    text: (*text).to_string(),
                    variant_of: None,
                    valence: Valence::Negative,
                })
        })
        .collect::<Vec<Situation>>();
    let variants = demo_variants(&situations);
    DemoStudy {
        slug: "demo",
        title: "EmotionBench demo: feelings in everyday situations",
        consent_text: CONSENT_TEXT,
        debrief_text: DEBRIEF_TEXT,
        title_de: "EmotionBench-Demo: Gefühle in Alltagssituationen",
        consent_text_de: CONSENT_TEXT_DE,
        debrief_text_de: DEBRIEF_TEXT_DE,
        situation_set: "demo",
        situations,
        valence_set: "demo-valence",
        variants,
    }
}

// Keeps the table above in step with the canonical emotion list at compile time.
const _: () = {
    let mut i = 0;
    while i < EMOTIONS.len() {
        let (a, b) = (EMOTIONS[i].as_bytes(), DEMO_SITUATIONS[i].0.as_bytes());
        assert!(a.len() == b.len(), "DEMO_SITUATIONS must follow EMOTIONS");
        let mut j = 0;
        while j < a.len() {
            assert!(a[j] == b[j], "DEMO_SITUATIONS must follow EMOTIONS");
            j += 1;
        }
        i += 1;
    }
};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashSet;

    use super::super::situation::{Situation, canonical_emotion, parse_key, parse_situations};
    use super::*;

    use super::super::testdata::upstream;

    fn words(text: &str) -> Vec<String> {
        text.chars()
            .map(|c| {
                if c.is_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    ' '
                }
            })
            .collect::<String>()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    fn shingles(text: &str, n: usize) -> HashSet<Vec<String>> {
        words(text).windows(n).map(<[String]>::to_vec).collect()
    }

    #[test]
    fn every_demo_situation_has_its_own_german_text_under_the_same_key() {
        let (en, de) = (demo_study().situations, demo_situations_de());
        assert_eq!(en.len(), de.len());
        for (e, d) in en.iter().zip(&de) {
            assert_eq!(e.key, d.key);
            assert_ne!(e.text, d.text);
        }
        let mut texts: Vec<&str> = de.iter().map(|s| s.text.as_str()).collect();
        texts.dedup();
        assert_eq!(texts.len(), 16);
    }

    #[test]
    fn the_demo_panas_in_german_fits_the_panas() {
        let panas = super::super::instrument::Instrument::panas();
        let t = super::super::instrument_text::check(&panas, 1, &demo_panas_de()).unwrap();
        assert!(t.fits(&panas));
        assert_eq!(t.items[0].text, "interessiert");
    }

    #[test]
    fn demo_has_two_situations_per_emotion() {
        let study = demo_study();
        assert_eq!(study.slug, "demo");
        assert_eq!(study.situation_set, "demo");
        assert_eq!(study.situations.len(), 16);
        for emotion in EMOTIONS {
            let of_emotion: Vec<&Situation> = study
                .situations
                .iter()
                .filter(|s| s.emotion == emotion)
                .collect();
            assert_eq!(of_emotion.len(), 2, "{emotion}");
            let scenarios: Vec<u32> = of_emotion.iter().map(|s| s.scenario_index).collect();
            assert_eq!(scenarios, [0, 1], "{emotion}");
            assert!(of_emotion.iter().all(|s| s.factor_index == 0));
            assert_eq!(of_emotion[0].factor_name, of_emotion[1].factor_name);
        }
        let keys: HashSet<&str> = study.situations.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys.len(), 16);
        for s in &study.situations {
            assert_eq!(canonical_emotion(&s.emotion), Some(s.emotion.as_str()));
            let (emotion, f, sc) = parse_key(&s.key).expect(&s.key);
            assert_eq!(
                (emotion, f, sc),
                (s.emotion.as_str(), s.factor_index, s.scenario_index)
            );
            assert!(!s.text.trim().is_empty());
            assert!(!s.factor_name.trim().is_empty());
            assert!(
                s.text.starts_with("You") || s.text.contains(" you"),
                "{}",
                s.text
            );
            assert!(!s.text.contains("  "), "stray spaces in {:?}", s.text);
            let sentences = s.text.matches(['.', '!', '?']).count();
            assert!((1..=3).contains(&sentences), "{}", s.text);
        }
    }

    #[test]
    fn demo_variants_are_our_rewrites_linked_to_their_originals() {
        let study = demo_study();
        assert_eq!(study.variants.len(), DEMO_VARIANTS.len());
        let positive = study
            .variants
            .iter()
            .filter(|v| v.valence == Valence::Positive)
            .count();
        assert_eq!((positive, study.variants.len() - positive), (8, 4));
        for v in &study.variants {
            let original = study
                .situations
                .iter()
                .find(|s| Some(&s.key) == v.variant_of.as_ref())
                .expect(&v.key);
            assert_eq!(
                (&v.emotion, v.factor_index, v.scenario_index),
                (
                    &original.emotion,
                    original.factor_index,
                    original.scenario_index
                )
            );
            assert_ne!(v.text, original.text);
            assert!(
                v.text.starts_with("You") || v.text.contains(" you"),
                "{}",
                v.text
            );
            assert!(!v.text.contains("  "), "stray spaces in {:?}", v.text);
            assert!((1..=3).contains(&v.text.matches(['.', '!', '?']).count()));
        }
        // The valence set is what the tidy importer reads back from its own CSV form.
        let csv = {
            let mut out = String::from(
                "key,emotion,factor_index,factor_name,scenario_index,text,variant_of,valence\n",
            );
            for s in study.valence_situations() {
                out.push_str(&format!(
                    "{},{},{},\"{}\",{},\"{}\",{},{}\n",
                    s.key,
                    s.emotion,
                    s.factor_index,
                    s.factor_name,
                    s.scenario_index,
                    s.text,
                    s.variant_of.clone().unwrap_or_default(),
                    s.valence
                ));
            }
            out
        };
        assert_eq!(
            parse_situations(&csv).unwrap().situations,
            study.valence_situations()
        );
    }

    #[test]
    fn demo_texts_are_plain_paragraphs() {
        let study = demo_study();
        for text in [study.consent_text, study.debrief_text] {
            assert!(text.contains("\n\n"));
            assert!(!text.contains("  "));
            assert!(text.contains("demo"));
        }
        // The German ones say the same in as many paragraphs.
        for (en, de) in [
            (study.consent_text, study.consent_text_de),
            (study.debrief_text, study.debrief_text_de),
        ] {
            assert!(!de.contains("  ") && de.contains("Demo"), "{de}");
            assert_eq!(en.split("\n\n").count(), de.split("\n\n").count());
        }
        assert!(study.debrief_text.contains("PANAS"));
        assert!(study.debrief_text.contains("imagined"));
        assert!(!study.title.is_empty());
    }

    #[test]
    fn demo_texts_are_not_taken_from_upstream() {
        let mut upstream_texts: Vec<String> = Vec::new();
        for file in ["situations.json", "derived/test_situations_175.csv"] {
            let Some(content) = upstream(file) else {
                return;
            };
            let parsed = parse_situations(&content).unwrap();
            upstream_texts.extend(parsed.situations.into_iter().map(|s| s.text));
        }
        assert!(upstream_texts.len() > 400);
        let upstream_shingles: HashSet<Vec<String>> =
            upstream_texts.iter().flat_map(|t| shingles(t, 6)).collect();
        for s in demo_study().valence_situations() {
            let shared: Vec<_> = shingles(&s.text, 6)
                .intersection(&upstream_shingles)
                .cloned()
                .collect();
            assert!(
                shared.is_empty(),
                "{} shares {:?} with upstream",
                s.key,
                shared
            );
        }
    }

    #[test]
    fn overlap_check_can_fail() {
        let upstream = "You were late for the bus and had to walk all the way home.";
        let copied = "Yesterday you were late for the bus and had to walk.";
        assert!(!shingles(upstream, 6).is_disjoint(&shingles(copied, 6)));
    }
}
