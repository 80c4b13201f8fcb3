//! Languages of a study (issue #20): a language tag, a study's list of them (the first is its
//! default), and the choice of one for a participant: the link's `lang=`, else the browser's
//! `Accept-Language` among the study's languages, else the default.
//!
//! Tags are BCP 47 (RFC 5646) as browsers send them; they are compared case-insensitively
//! (RFC 5646 §2.1.1) and kept in their canonical case (`de`, `zh-CN`, `sr-Latn`).

use std::fmt;

/// The language of everything a study shows before it says otherwise: its texts as imported.
pub const DEFAULT: &str = "en";

/// At most this many languages per study: a list, not a catalogue of the world.
pub const MAX_LANGUAGES: usize = 12;

/// A language tag, checked and in canonical case. Stored and written as its text; a text
/// that is not a tag does not decode.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Lang(String);

impl TryFrom<String> for Lang {
    type Error = String;
    fn try_from(s: String) -> Result<Lang, String> {
        Lang::parse(&s)
    }
}

impl From<Lang> for String {
    fn from(l: Lang) -> String {
        l.0
    }
}

impl Lang {
    /// `en`, the default.
    pub fn english() -> Lang {
        Lang(DEFAULT.to_owned())
    }

    /// Parses a tag: subtags of 1–8 ASCII letters or digits joined by `-` (or `_`, which
    /// some systems write), the first 2–3 letters; at most 35 characters (RFC 5646 §4.4.1's
    /// recommended buffer). Case is canonicalised: language lower, script title, region upper.
    pub fn parse(text: &str) -> Result<Lang, String> {
        let text = text.trim();
        if text.is_empty() || text.len() > 35 {
            return Err(format!("\"{text}\" is not a language tag"));
        }
        let mut out: Vec<String> = Vec::new();
        for (i, sub) in text.split(['-', '_']).enumerate() {
            let ok = !sub.is_empty()
                && sub.len() <= 8
                && sub.bytes().all(|b| b.is_ascii_alphanumeric())
                && (i > 0
                    || (2..=3).contains(&sub.len())
                        && sub.bytes().all(|b| b.is_ascii_alphabetic()));
            if !ok {
                return Err(format!("\"{text}\" is not a language tag"));
            }
            let canonical = match (i, sub.len()) {
                (0, _) => sub.to_ascii_lowercase(),
                // RFC 5646 §2.1.1: scripts in title case, regions in upper case.
                (_, 4) if sub.bytes().all(|b| b.is_ascii_alphabetic()) => {
                    let lower = sub.to_ascii_lowercase();
                    let mut c = lower.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                }
                (_, 2) => sub.to_ascii_uppercase(),
                _ => sub.to_ascii_lowercase(),
            };
            out.push(canonical);
        }
        Ok(Lang(out.join("-")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The primary language subtag (`zh` of `zh-CN`).
    pub fn primary(&self) -> &str {
        self.0.split('-').next().unwrap_or(&self.0)
    }

    /// Whether the language is written right to left (its script's direction). From the
    /// primary subtag, as unic-langid's `character_direction` does
    /// (https://docs.rs/unic-langid-impl/latest/src/unic_langid_impl/layout_table.rs.html),
    /// unless the tag names a Latin or Cyrillic script.
    pub fn is_rtl(&self) -> bool {
        const RTL: [&str; 12] = [
            "ar", "ckb", "dv", "fa", "he", "ks", "lrc", "mzn", "ps", "sd", "ug", "ur",
        ];
        let script = |names: [&str; 2]| self.0.split('-').any(|s| names.contains(&s));
        (RTL.contains(&self.primary()) && !script(["Latn", "Cyrl"])) || script(["Arab", "Hebr"])
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A study's languages as configured: each a tag, none twice, at least one; the first is the
/// default (the language a participant gets when nothing else decides).
pub fn parse_list(items: &[String]) -> Result<Vec<Lang>, String> {
    let out = items
        .iter()
        .map(|i| Lang::parse(i))
        .collect::<Result<Vec<_>, _>>()?;
    check_list(&out)?;
    Ok(out)
}

/// At least one language, at most [`MAX_LANGUAGES`], none twice.
pub fn check_list(langs: &[Lang]) -> Result<(), String> {
    if langs.is_empty() {
        return Err("a study needs at least one language".into());
    }
    if langs.len() > MAX_LANGUAGES {
        return Err(format!("at most {MAX_LANGUAGES} languages per study"));
    }
    for (i, l) in langs.iter().enumerate() {
        if langs[..i].contains(l) {
            return Err(format!("the language {l} is listed twice"));
        }
    }
    Ok(())
}

/// `de, zh-CN` (as typed in a form or a flag) as a list of tags.
pub fn split_list(text: &str) -> Result<Vec<Lang>, String> {
    let items: Vec<String> = text
        .split([',', ' ', ';'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    parse_list(&items)
}

/// The ranges of an `Accept-Language` header (RFC 9110 §12.5.4), best first; ranges with
/// `q=0`, `*` and malformed ones are left out, and equal weights keep the header's order.
pub fn accept_language(header: &str) -> Vec<Lang> {
    let mut ranges: Vec<(u32, usize, Lang)> = Vec::new();
    for (i, part) in header.split(',').enumerate().take(32) {
        let mut pieces = part.split(';');
        let Some(tag) = pieces.next().map(str::trim) else {
            continue;
        };
        let mut q = 1000u32;
        for p in pieces {
            if let Some(v) = p
                .trim()
                .strip_prefix("q=")
                .or_else(|| p.trim().strip_prefix("Q="))
            {
                q = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .map_or(0, |q| (q * 1000.0).round() as u32);
            }
        }
        if q == 0 || tag == "*" {
            continue;
        }
        if let Ok(lang) = Lang::parse(tag) {
            ranges.push((q, i, lang));
        }
    }
    ranges.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges.into_iter().map(|(_, _, l)| l).collect()
}

/// The study's language that best serves one the browser asked for: the same tag, else one
/// with the same primary language (a browser asking for `de-AT` gets `de`, one asking for
/// `zh` gets `zh-CN`), the RFC 4647 §3.4 lookup loosened to siblings.
fn best_for<'a>(wanted: &Lang, offered: &'a [Lang]) -> Option<&'a Lang> {
    offered
        .iter()
        .find(|o| *o == wanted)
        .or_else(|| offered.iter().find(|o| o.primary() == wanted.primary()))
}

/// The language a participant sees: the link's `lang=` when the study has it, else the
/// browser's preferences among the study's languages, else the study's default (its first).
pub fn choose<'a>(
    link: Option<&str>,
    accept: Option<&str>,
    offered: &'a [Lang],
) -> Option<&'a Lang> {
    let from_link = link
        .and_then(|l| Lang::parse(l).ok())
        .and_then(|l| best_for(&l, offered));
    from_link
        .or_else(|| {
            accept_language(accept.unwrap_or(""))
                .iter()
                .find_map(|w| best_for(w, offered))
        })
        .or_else(|| offered.first())
}

/// The language whose stored translations a prompt in `asked` reads (#20): `None` when none
/// was asked or it is the study's default (`offered`'s first), whose texts are the set's own.
/// Model runs and `prompt show` both go by it, so what one shows is what the other sends.
pub fn translation<'a>(asked: Option<&'a Lang>, offered: &[Lang]) -> Option<&'a Lang> {
    asked.filter(|l| offered.first() != Some(*l))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn langs(tags: &[&str]) -> Vec<Lang> {
        tags.iter().map(|t| Lang::parse(t).unwrap()).collect()
    }

    #[test]
    fn tags_are_checked_and_canonicalised() {
        assert_eq!(Lang::parse("zh_cn").unwrap().as_str(), "zh-CN");
        assert_eq!(Lang::parse("SR-latn-rs").unwrap().as_str(), "sr-Latn-RS");
        assert_eq!(Lang::parse(" DE ").unwrap().as_str(), "de");
        for bad in [
            "",
            "e",
            "english",
            "de--AT",
            "d3",
            "de-<b>",
            "x-toolongsubtag",
        ] {
            assert!(Lang::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn arabic_and_hebrew_are_right_to_left_and_others_not() {
        for t in ["ar", "ar-EG", "he", "fa", "ur"] {
            assert!(Lang::parse(t).unwrap().is_rtl(), "{t}");
        }
        for t in ["en", "de", "zh-CN", "es", "az-Latn", "tr"] {
            assert!(!Lang::parse(t).unwrap().is_rtl(), "{t}");
        }
    }

    #[test]
    fn a_list_needs_one_language_and_no_duplicates() {
        assert_eq!(
            split_list("en, de zh-CN").unwrap(),
            langs(&["en", "de", "zh-CN"])
        );
        assert!(split_list("").is_err());
        assert!(split_list("en,EN").unwrap_err().contains("twice"));
        assert!(split_list("en,klingon").is_err());
    }

    #[test]
    fn accept_language_is_ordered_by_weight_then_position() {
        let got = accept_language("fr;q=0.4, de-AT , zh;q=0.9, en;q=0, *;q=0.1, ???");
        assert_eq!(got, langs(&["de-AT", "zh", "fr"]));
        assert!(accept_language("").is_empty());
    }

    #[test]
    fn only_a_language_other_than_the_default_reads_translations() {
        let offered = langs(&["en", "de"]);
        let de = Lang::parse("de").unwrap();
        assert_eq!(translation(Some(&de), &offered), Some(&de));
        assert_eq!(translation(Some(&Lang::english()), &offered), None);
        assert_eq!(translation(None, &offered), None);
    }

    #[test]
    fn the_link_wins_then_the_browser_then_the_default() {
        let offered = langs(&["en", "de", "zh-CN"]);
        let pick = |link, accept| choose(link, accept, &offered).unwrap().as_str().to_owned();
        assert_eq!(pick(Some("de"), Some("zh-CN")), "de");
        // A link language the study does not have is ignored, not an error.
        assert_eq!(pick(Some("fr"), Some("zh-TW, en;q=0.5")), "zh-CN");
        assert_eq!(pick(None, Some("de-CH;q=0.8, fr")), "de");
        assert_eq!(pick(None, Some("fr, ja")), "en");
        assert_eq!(pick(None, None), "en");
        assert_eq!(pick(Some("<script>"), None), "en");
    }
}
