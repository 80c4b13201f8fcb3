//! The participant pages' message catalogues (issue #20): Fluent files, one per language,
//! shipped in the binary (`locales/*.ftl`) plus any in the configured `catalogue_dir`. Every
//! bundle is built once at start-up and shared by every request ([`Catalogues`] lives in
//! `AppState`); a page looks its messages up through a [`Tr`], which is an `Arc` and an index.
//!
//! Fluent's syntax and plural selection: https://projectfluent.org/fluent/guide/selectors.html
//! (`{ $count -> [one] … *[other] … }`, categories from CLDR's plural rules per language).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource};

use crate::domain::language::Lang;

/// The catalogues shipped in the binary: English (the fallback of every other) first.
const SHIPPED: [(&str, &str); 4] = [
    ("en", include_str!("../../locales/en.ftl")),
    ("de", include_str!("../../locales/de.ftl")),
    ("es", include_str!("../../locales/es.ftl")),
    ("zh-CN", include_str!("../../locales/zh-CN.ftl")),
];

/// A catalogue that could not be read or parsed (start-up fails with it).
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("catalogue folder {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("catalogue {path}: the file name is not a language tag ({message})")]
    Name { path: String, message: String },
    #[error("catalogue {path}: {message}")]
    Parse { path: String, message: String },
}

/// Every language's bundle, English first.
pub struct Catalogues {
    langs: Vec<Lang>,
    bundles: Vec<FluentBundle<FluentResource>>,
}

fn parse(path: &str, text: String) -> Result<FluentResource, CatalogueError> {
    FluentResource::try_new(text).map_err(|(_, errors)| CatalogueError::Parse {
        path: path.to_owned(),
        message: errors
            .iter()
            .map(|e| format!("{e:?}"))
            .collect::<Vec<_>>()
            .join("; "),
    })
}

fn new_bundle(lang: &Lang) -> Result<FluentBundle<FluentResource>, CatalogueError> {
    let id = lang.as_str().parse().map_err(|e| CatalogueError::Name {
        path: lang.to_string(),
        message: format!("{e}"),
    })?;
    let mut bundle = FluentBundle::new_concurrent(vec![id]);
    // Our placeables are numbers inside one sentence; the isolation marks Fluent adds by
    // default would end up inside attribute values and copied text.
    bundle.set_use_isolating(false);
    Ok(bundle)
}

impl Catalogues {
    /// The shipped catalogues, and those of `dir` (`<tag>.ftl`) on top: a language the binary
    /// lacks is added; for one it ships, the folder's messages win and the rest is shipped.
    pub fn load(dir: Option<&Path>) -> Result<Catalogues, CatalogueError> {
        let mut extra: Vec<(Lang, String, String)> = Vec::new();
        if let Some(dir) = dir {
            let read = |source| CatalogueError::Read {
                path: dir.to_owned(),
                source,
            };
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(read)?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(read)?;
            entries.sort();
            for path in entries {
                if path.extension().and_then(|e| e.to_str()) != Some("ftl") {
                    continue;
                }
                let shown = path.display().to_string();
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                let lang = Lang::parse(stem).map_err(|message| CatalogueError::Name {
                    path: shown.clone(),
                    message,
                })?;
                let text =
                    std::fs::read_to_string(&path).map_err(|source| CatalogueError::Read {
                        path: path.clone(),
                        source,
                    })?;
                // Parsed here to fail early with the file's name; added to its bundle below.
                parse(&shown, text.clone())?;
                extra.push((lang, shown, text));
            }
        }
        let mut langs = Vec::new();
        let mut bundles = Vec::new();
        for (tag, text) in SHIPPED {
            let lang = Lang::parse(tag).map_err(|message| CatalogueError::Name {
                path: tag.to_owned(),
                message,
            })?;
            langs.push(lang);
            bundles.push((new_bundle(&langs[langs.len() - 1])?, Some((tag, text))));
        }
        for (lang, _, _) in &extra {
            if !langs.contains(lang) {
                langs.push(lang.clone());
                bundles.push((new_bundle(lang)?, None));
            }
        }
        let mut built = Vec::new();
        for (i, (mut bundle, shipped)) in bundles.into_iter().enumerate() {
            // The folder's file first: of two messages with one id the first added stays
            // (fluent-bundle reports the second as `Overriding` and keeps the rest).
            for (_, shown, text) in extra.iter().filter(|(l, _, _)| *l == langs[i]) {
                add(&mut bundle, parse(shown, text.clone())?, shown, false)?;
            }
            if let Some((tag, text)) = shipped {
                add(&mut bundle, parse(tag, text.to_owned())?, tag, true)?;
            }
            built.push(bundle);
        }
        Ok(Catalogues {
            langs,
            bundles: built,
        })
    }

    /// The languages that have a catalogue.
    pub fn languages(&self) -> &[Lang] {
        &self.langs
    }

    /// The catalogue that serves `lang`: its own, else one of the same primary language
    /// (`de` for `de-AT`), else English.
    fn index(&self, lang: &Lang) -> usize {
        self.langs
            .iter()
            .position(|l| l == lang)
            .or_else(|| {
                self.langs
                    .iter()
                    .position(|l| l.primary() == lang.primary())
            })
            .unwrap_or(0)
    }

    /// Whether `lang` has a catalogue of its own language (not only the English fallback).
    pub fn covers(&self, lang: &Lang) -> bool {
        self.langs.iter().any(|l| l.primary() == lang.primary())
    }

    /// The messages of `lang` for one page.
    pub fn tr(self: &Arc<Self>, lang: &Lang) -> Tr {
        Tr {
            index: self.index(lang),
            lang: lang.clone(),
            cats: self.clone(),
        }
    }

    fn format(&self, index: usize, id: &str, args: Option<&FluentArgs<'_>>) -> Option<String> {
        let bundle = self.bundles.get(index)?;
        let pattern = bundle.get_message(id)?.value()?;
        let mut errors = Vec::new();
        Some(
            bundle
                .format_pattern(pattern, args, &mut errors)
                .into_owned(),
        )
    }
}

fn add(
    bundle: &mut FluentBundle<FluentResource>,
    resource: FluentResource,
    shown: &str,
    may_be_overridden: bool,
) -> Result<(), CatalogueError> {
    match bundle.add_resource(resource) {
        Ok(()) => Ok(()),
        Err(errors) => {
            let real: Vec<String> = errors
                .iter()
                .filter(|e| {
                    !(may_be_overridden
                        && matches!(e, fluent_bundle::FluentError::Overriding { .. }))
                })
                .map(|e| e.to_string())
                .collect();
            if real.is_empty() {
                Ok(())
            } else {
                Err(CatalogueError::Parse {
                    path: shown.to_owned(),
                    message: real.join("; "),
                })
            }
        }
    }
}

/// One page's messages: the participant's language, its catalogue, English behind it.
#[derive(Clone)]
pub struct Tr {
    cats: Arc<Catalogues>,
    index: usize,
    lang: Lang,
}

impl Tr {
    fn lookup(&self, id: &str, args: Option<&FluentArgs<'_>>) -> Option<String> {
        self.cats
            .format(self.index, id, args)
            .or_else(|| self.cats.format(0, id, args))
    }

    /// The message `id` (English when this language lacks it; the id itself when English
    /// does too, which the catalogue test rules out for the shipped pages).
    pub fn t(&self, id: &str) -> String {
        self.lookup(id, None).unwrap_or_else(|| id.to_owned())
    }

    /// The message `id` with one number `name` (plural selection picks its form).
    pub fn n(&self, id: &str, name: &str, value: i64) -> String {
        let mut args = FluentArgs::new();
        args.set(name.to_owned(), value);
        self.lookup(id, Some(&args))
            .unwrap_or_else(|| id.to_owned())
    }

    /// The message `id` with two numbers.
    pub fn n2(&self, id: &str, a: (&str, i64), b: (&str, i64)) -> String {
        let mut args = FluentArgs::new();
        args.set(a.0.to_owned(), a.1);
        args.set(b.0.to_owned(), b.1);
        self.lookup(id, Some(&args))
            .unwrap_or_else(|| id.to_owned())
    }

    /// The label of a stored value: `prefix-<value as an id>` when a catalogue has it, else
    /// the value itself (country names, years).
    pub fn label(&self, prefix: &str, value: &str) -> String {
        let id = format!("{prefix}-{}", message_id(value));
        self.lookup(&id, None).unwrap_or_else(|| value.to_owned())
    }

    /// The participant's language tag, for `<html lang>`.
    pub fn lang(&self) -> &str {
        self.lang.as_str()
    }

    pub fn language(&self) -> &Lang {
        &self.lang
    }

    /// `rtl` or `ltr`, for `<html dir>`.
    pub fn dir(&self) -> &'static str {
        if self.lang.is_rtl() { "rtl" } else { "ltr" }
    }

    /// A language's own name from its own catalogue (the switcher's link text).
    pub fn name_of(&self, lang: &Lang) -> String {
        let i = self.cats.index(lang);
        self.cats
            .format(i, "language-name", None)
            .unwrap_or_else(|| lang.to_string())
    }
}

/// `Prefer not to say` → `prefer-not-to-say`: a value as a Fluent message id (letters,
/// digits and `-`).
pub fn message_id(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Arc<Catalogues> {
        Arc::new(Catalogues::load(None).unwrap())
    }

    fn ids(text: &str) -> Vec<String> {
        text.lines()
            .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .filter_map(|l| l.split_once(" =").map(|(id, _)| id.trim().to_owned()))
            .collect()
    }

    #[test]
    fn every_shipped_catalogue_has_every_english_message() {
        let english = ids(SHIPPED[0].1);
        assert!(english.len() > 60, "{}", english.len());
        let cats = shipped();
        for (tag, text) in &SHIPPED[1..] {
            let own = ids(text);
            let missing: Vec<&String> = english.iter().filter(|i| !own.contains(i)).collect();
            assert!(missing.is_empty(), "{tag} lacks {missing:?}");
            let tr = cats.tr(&Lang::parse(tag).unwrap());
            for id in &english {
                assert_ne!(tr.t(id), *id, "{tag}: {id}");
            }
        }
    }

    #[test]
    fn plurals_follow_each_languages_rules() {
        let cats = shipped();
        let tr = |t: &str| cats.tr(&Lang::parse(t).unwrap());
        assert_eq!(
            tr("en").n("situation-wait", "seconds", 1),
            "The button becomes available in one second."
        );
        assert_eq!(
            tr("en").n("situation-wait", "seconds", 5),
            "The button becomes available in 5 seconds."
        );
        assert_eq!(
            tr("de").n("errors-heading", "count", 1),
            "Bitte beantworten Sie die noch offene Aussage, bevor Sie weitermachen"
        );
        assert!(
            tr("es")
                .n("situation-wait", "seconds", 2)
                .contains("2 segundos")
        );
        assert_eq!(
            tr("zh-CN").n("situation-wait", "seconds", 1),
            "按钮将在 1 秒后可用。"
        );
        assert_eq!(
            tr("de").n2("step-of", ("step", 2), ("steps", 7)),
            "Schritt 2 von 7"
        );
    }

    #[test]
    fn unknown_languages_fall_back_and_siblings_share_a_catalogue() {
        let cats = shipped();
        let at = cats.tr(&Lang::parse("de-AT").unwrap());
        assert_eq!(at.t("continue"), "Weiter");
        assert_eq!(at.lang(), "de-AT");
        let fr = cats.tr(&Lang::parse("fr").unwrap());
        assert_eq!(fr.t("continue"), "Continue");
        assert!(!cats.covers(&Lang::parse("fr").unwrap()));
        assert_eq!(fr.label("option", "Prefer not to say"), "Prefer not to say");
        assert_eq!(at.label("option", "Prefer not to say"), "Keine Angabe");
        assert_eq!(at.label("option", "Germany"), "Germany");
    }

    #[test]
    fn a_folder_adds_a_language_and_overrides_messages_of_a_shipped_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ar.ftl"),
            "language-name = العربية\ncontinue = متابعة\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("de.ftl"), "continue = Los geht's\n").unwrap();
        let cats = Arc::new(Catalogues::load(Some(dir.path())).unwrap());
        let ar = cats.tr(&Lang::parse("ar").unwrap());
        assert_eq!(ar.t("continue"), "متابعة");
        assert_eq!(ar.dir(), "rtl");
        // What the stub lacks is English.
        assert_eq!(ar.t("finish"), "Finish");
        let de = cats.tr(&Lang::parse("de").unwrap());
        assert_eq!(de.t("continue"), "Los geht's");
        assert_eq!(de.t("finish"), "Abschließen");
        assert_eq!(de.dir(), "ltr");

        std::fs::write(dir.path().join("es.ftl"), "continue = { $\n").unwrap();
        let err = Catalogues::load(Some(dir.path()))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("es.ftl"), "{err}");
    }

    #[test]
    fn values_become_message_ids() {
        assert_eq!(message_id("University - Bachelors"), "university-bachelors");
        assert_eq!(
            message_id("Non-binary or another gender"),
            "non-binary-or-another-gender"
        );
        assert_eq!(message_id("A little"), "a-little");
    }
}
