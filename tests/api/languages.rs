//! Issue #20: the participant pages in several languages. The language comes from the link's
//! `lang=`, else the browser's `Accept-Language` among the study's languages, else the study's
//! default; the consent page switches it; the participant keeps it on every page, and the
//! exports record it. A catalogue folder adds a language (here a right-to-left one).

use emotionbench::domain::language::Lang;
use emotionbench::store::{participants, studies};

use crate::helpers::{Browser, Reply, TestApp, TestDb, cli, ok, spawn_app, spawn_app_with};
use crate::on_both_backends;
use crate::survey::{make_study, submit_current, walk_to};

fn langs(tags: &[&str]) -> Vec<Lang> {
    tags.iter().map(|t| Lang::parse(t).unwrap()).collect()
}

/// GET with an `Accept-Language` header, as a browser set to those languages sends it.
fn get_accepting(b: &Browser, path: &str, accept: &str) -> Reply {
    let mut r = b
        .agent
        .get(b.url(path))
        .header("Accept-Language", accept)
        .call()
        .unwrap();
    Reply {
        status: r.status().as_u16(),
        headers: r
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// The `<html …>` tag of a page.
fn html_tag(page: &Reply) -> &str {
    let start = page.body.find("<html").expect("an html tag");
    let end = page.body[start..].find('>').unwrap() + start;
    &page.body[start..=end]
}

fn language_of(app: &TestApp, slug: &str, pid: &str) -> Option<String> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    participants::by_pid(&mut conn, s.id, pid)
        .unwrap()
        .unwrap()
        .language
}

fn the_link_then_the_browser_then_the_default_chooses_the_language(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "multi", |c| {
        c.languages = langs(&["en", "de", "zh-CN"])
    });
    let b = app.browser();

    let de = b.get("/s/multi/consent?lang=de");
    assert_eq!(de.status, 200, "{}", de.body);
    assert_eq!(html_tag(&de), r#"<html lang="de" dir="ltr">"#);
    assert!(
        de.body.contains("<h1>Information und Einwilligung</h1>"),
        "{}",
        de.body
    );
    assert!(de.body.contains("Ich willige ein, teilzunehmen"));
    // The switcher: every study language under its own name, the current one marked.
    assert!(de.body.contains(r#"aria-label="Sprache""#), "{}", de.body);
    assert!(de.body.contains(
        r#"<a href="/s/multi/consent?lang=zh-CN" lang="zh-CN" hreflang="zh-CN">简体中文</a>"#
    ));
    assert!(de.body.contains(
        r#"<a href="/s/multi/consent?lang=de" lang="de" aria-current="true">Deutsch</a>"#
    ));
    assert!(
        de.body
            .contains(r#"<input type="hidden" name="lang" value="de">"#)
    );

    // No lang=: the browser's first language the study has (zh-TW is served by zh-CN).
    let zh = get_accepting(&b, "/s/multi/consent", "zh-TW,zh;q=0.9,en;q=0.5");
    assert_eq!(html_tag(&zh), r#"<html lang="zh-CN" dir="ltr">"#);
    assert!(
        zh.body.contains("<h1>研究说明与知情同意</h1>"),
        "{}",
        zh.body
    );
    // A language the study lacks, from the link or the browser: the next choice decides.
    let de_at = get_accepting(&b, "/s/multi/consent?lang=fr", "fr-FR, de-AT;q=0.8");
    assert_eq!(html_tag(&de_at), r#"<html lang="de" dir="ltr">"#);
    let en = get_accepting(&b, "/s/multi/consent", "fr, ja");
    assert_eq!(html_tag(&en), r#"<html lang="en" dir="ltr">"#);
    assert!(en.body.contains("<h1>Information and consent</h1>"));
    // A study in one language has no switcher.
    make_study(&app, "mono", |_| {});
    let mono = b.get("/s/mono/consent?lang=de");
    assert_eq!(html_tag(&mono), r#"<html lang="en" dir="ltr">"#);
    assert!(!mono.body.contains("class=\"languages\""));

    // The entry link passes its lang= on to the consent page, with the Prolific ids.
    let entry = b.get("/s/multi?PROLIFIC_PID=pidde1&lang=de");
    assert_eq!(entry.status, 303);
    assert_eq!(
        entry.location(),
        Some("/s/multi/consent?PROLIFIC_PID=pidde1&lang=de")
    );

    // A German participant: every page German, whatever the browser says later; recorded.
    let g = app.browser();
    let (demo, path) = walk_to(&g, "/s/multi?PROLIFIC_PID=pidde1&lang=de", "demographics");
    assert_eq!(html_tag(&demo), r#"<html lang="de" dir="ltr">"#, "{path}");
    assert!(demo.body.contains("<h1>Über Sie</h1>"), "{}", demo.body);
    assert!(
        demo.body
            .contains(r#"<option value="Prefer not to say">Keine Angabe</option>"#)
    );
    assert!(demo.body.contains("Schritt 2 von"), "{}", demo.body);
    assert!(demo.body.contains("Von der Studie zurücktreten</a>"));
    assert_eq!(language_of(&app, "multi", "pidde1").as_deref(), Some("de"));
    let r = submit_current(&g, &path, &demo);
    assert_eq!(r.status, 303, "{}", r.body);
    let now = get_accepting(&g, r.location().unwrap(), "zh-CN");
    assert_eq!(html_tag(&now), r#"<html lang="de" dir="ltr">"#);
    assert!(now.body.contains("Wie fühlen Sie sich gerade?"));
    // Two items left open: the summary's plural, each item's message in German.
    let csrf = now.csrf();
    let items = crate::survey::items_on(&now);
    let answers: Vec<(String, String)> = items[2..]
        .iter()
        .map(|n| (format!("item-{n}"), "3".to_owned()))
        .chain([("csrf".to_owned(), csrf)])
        .collect();
    let bad = g.post("/s/multi/feelings-now", &crate::helpers::fields(&answers));
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(
        bad.body
            .contains("Bitte beantworten Sie die 2 noch offenen Aussagen, bevor Sie weitermachen"),
        "{}",
        bad.body
    );
    assert!(bad.body.contains("Bitte wählen Sie eine Antwort."));
    let (done, _) = walk_to(&g, "/s/multi/feelings-now", "never");
    assert_eq!(done.status, 303);
    let (thanks, _) = g.open("/s/multi");
    assert!(
        thanks.body.contains("<h1>Vielen Dank!</h1>"),
        "{}",
        thanks.body
    );

    // A Chinese participant by the browser's language alone; an English one by default.
    let z = app.browser();
    let consent = get_accepting(&z, "/s/multi/consent?PROLIFIC_PID=pidzh1", "zh-CN");
    let form = crate::helpers::consent_form(&consent, None, "yes");
    let r = z.post("/s/multi/consent", &crate::helpers::fields(&form));
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(
        language_of(&app, "multi", "pidzh1").as_deref(),
        Some("zh-CN")
    );
    let (page, _) = z.open(r.location().unwrap());
    assert!(page.body.contains("<h1>关于您</h1>"), "{}", page.body);
    walk_to(
        &app.browser(),
        "/s/multi?PROLIFIC_PID=piden1",
        "demographics",
    );
    assert_eq!(language_of(&app, "multi", "piden1").as_deref(), Some("en"));
    // A form that names a language the study does not have gets the study's choice.
    let x = app.browser();
    let consent = x.get("/s/multi/consent?PROLIFIC_PID=pidxx1");
    let mut form = crate::helpers::consent_form(&consent, None, "yes");
    for (k, v) in form.iter_mut() {
        if k == "lang" {
            *v = "tlh\"><script>".into();
        }
    }
    assert_eq!(
        x.post("/s/multi/consent", &crate::helpers::fields(&form))
            .status,
        303
    );
    assert_eq!(language_of(&app, "multi", "pidxx1").as_deref(), Some("en"));

    // The exports say who took it in which language.
    for what in ["wide", "long"] {
        let csv = ok(cli(
            &app.db.url,
            &["export", what, "--study", "multi", "--status", "all"],
        ));
        let mut rows = csv::Reader::from_reader(csv.as_bytes());
        let header = rows.headers().unwrap().clone();
        let lang = header
            .iter()
            .position(|h| h == "language")
            .expect("language");
        let pid = header.iter().position(|h| h == "prolific_pid").unwrap();
        let mut seen: Vec<(String, String)> = rows
            .records()
            .map(|r| r.unwrap())
            .map(|r| (r[pid].to_owned(), r[lang].to_owned()))
            .collect();
        seen.dedup();
        assert!(
            seen.contains(&("pidde1".into(), "de".into())),
            "{what}: {seen:?}"
        );
        if what == "wide" {
            assert!(
                seen.contains(&("pidzh1".into(), "zh-CN".into())),
                "{seen:?}"
            );
        }
    }
}

/// An Arabic catalogue stub, written by the test into the configured catalogue folder.
const ARABIC_STUB: &str = "language-name = العربية
consent-heading = معلومات وموافقة
consent-agree = أوافق على المشاركة
continue = متابعة
";

fn a_catalogue_folder_adds_a_right_to_left_language(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ar.ftl"), ARABIC_STUB).unwrap();
    let folder = dir.path().to_owned();
    let app = spawn_app_with(db, move |s| s.catalogue_dir = Some(folder));
    make_study(&app, "rtl", |c| c.languages = langs(&["en", "ar"]));
    let b = app.browser();
    let page = b.get("/s/rtl/consent?lang=ar");
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(html_tag(&page), r#"<html lang="ar" dir="rtl">"#);
    assert!(
        page.body.contains("<h1>معلومات وموافقة</h1>"),
        "{}",
        page.body
    );
    assert!(page.body.contains(">العربية</a>"));
    // What the stub lacks falls back to English.
    assert!(page.body.contains("I do not agree"));
    let (demo, _) = walk_to(&b, "/s/rtl?PROLIFIC_PID=pidar1&lang=ar", "demographics");
    assert_eq!(html_tag(&demo), r#"<html lang="ar" dir="rtl">"#);
    assert!(demo.body.contains(">متابعة</button>"), "{}", demo.body);
    assert_eq!(language_of(&app, "rtl", "pidar1").as_deref(), Some("ar"));
}

/// The demo set's situations as a tidy CSV, each text `prefix` + its key, the last `drop` left
/// out.
fn texts_file(
    dir: &std::path::Path,
    prefix: &str,
    drop: usize,
) -> (std::path::PathBuf, Vec<String>) {
    let demo = emotionbench::domain::demo::demo_study();
    let keep = demo.situations.len() - drop;
    let path = dir.join(format!("texts-{drop}.csv"));
    let mut w = csv::Writer::from_path(&path).unwrap();
    w.write_record(["key", "emotion", "factor", "text"])
        .unwrap();
    for s in &demo.situations[..keep] {
        w.write_record([
            s.key.as_str(),
            s.emotion.as_str(),
            s.factor_name.as_str(),
            &format!("{prefix}{}", s.key),
        ])
        .unwrap();
    }
    w.flush().unwrap();
    let keys = demo.situations.iter().map(|s| s.key.clone()).collect();
    (path, keys)
}

fn a_study_with_an_untranslated_situation_cannot_open_and_says_which(db: TestDb) {
    use emotionbench::domain::study::StudyStatus;
    let app = spawn_app(db);
    make_study(&app, "trans", |c| c.languages = langs(&["en", "de"]));
    // A draft that is ready to open but for its German situations.
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = studies::load(&mut conn, "trans").unwrap().unwrap();
        let mut sources = studies::Sources::new(s.instrument_id, s.situation_set_id);
        sources.retention_until = Some(chrono::Utc::now().naive_utc() + chrono::Duration::days(60));
        studies::update(&mut conn, s.id, &s.config(), sources).unwrap();
        studies::set_status(&mut conn, s.id, StudyStatus::Draft).unwrap();
    }
    let open = || cli(&app.db.url, &["studies", "set-status", "trans", "open"]);
    let o = open();
    assert!(!o.status.success());
    let dir = tempfile::tempdir().unwrap();
    let (_, keys) = texts_file(dir.path(), "", 0);
    let err = crate::helpers::stderr(&o);
    assert!(
        err.contains(&format!("The situation {} has no text in de.", keys[0])),
        "{err}"
    );

    // Every situation but the last in German: it still cannot open, and says which.
    let (partial, _) = texts_file(dir.path(), "Auf Deutsch: ", 1);
    let out = ok(cli(
        &app.db.url,
        &[
            "import",
            "situations",
            partial.to_str().unwrap(),
            "--set",
            "demo",
            "--language",
            "de",
        ],
    ));
    assert!(
        out.contains(&format!("{} texts in de", keys.len() - 1)),
        "{out}"
    );
    let o = open();
    assert!(!o.status.success());
    let err = crate::helpers::stderr(&o);
    let last = keys.last().unwrap();
    assert!(
        err.contains(&format!("The situation {last} has no text in de.")),
        "{err}"
    );
    assert!(
        !err.contains(&format!("The situation {} has", keys[0])),
        "{err}"
    );
    // A key the set does not have is refused, and nothing of that file is stored.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "key,emotion,factor,text\nAnger-9_scenario-9,Anger,Nobody,Nein\n",
    )
    .unwrap();
    let o = cli(
        &app.db.url,
        &[
            "import",
            "situations",
            bad.to_str().unwrap(),
            "--set",
            "demo",
            "--language",
            "de",
        ],
    );
    assert!(!o.status.success());
    assert!(crate::helpers::stderr(&o).contains("Anger-9_scenario-9 is not in the set demo"));

    let (whole, _) = texts_file(dir.path(), "Auf Deutsch: ", 0);
    ok(cli(
        &app.db.url,
        &[
            "import",
            "situations",
            whole.to_str().unwrap(),
            "--set",
            "demo",
            "--language",
            "de",
        ],
    ));
    ok(open());

    // A German participant reads the German text, an English one the set's own.
    let g = app.browser();
    let (page, _) = walk_to(&g, "/s/trans?PROLIFIC_PID=pidtransde&lang=de", "situation");
    assert!(page.body.contains("Auf Deutsch: "), "{}", page.body);
    assert!(page.body.contains("Stellen Sie sich diese Situation vor"));
    let e = app.browser();
    let (page, _) = walk_to(&e, "/s/trans?PROLIFIC_PID=pidtransen", "situation");
    assert!(!page.body.contains("Auf Deutsch: "), "{}", page.body);
    // A model's prompt in the study's second language carries the German text; in the
    // default, the set's own; a language the study lacks is refused.
    let prompt = |extra: &[&str]| {
        let mut args = vec![
            "prompt",
            "show",
            "--study",
            "trans",
            "--measure",
            "evoked",
            "--situation",
            &keys[0],
        ];
        args.extend_from_slice(extra);
        cli(&app.db.url, &args)
    };
    let de = ok(prompt(&["--language", "de"]));
    assert!(de.contains(&format!("Auf Deutsch: {}", keys[0])), "{de}");
    let en = ok(prompt(&[]));
    assert!(!en.contains("Auf Deutsch: "), "{en}");
    let own = &emotionbench::domain::demo::demo_study().situations[0].text;
    assert!(en.contains(own.as_str()), "{en}");
    let o = prompt(&["--language", "fr"]);
    assert!(!o.status.success());
    assert!(crate::helpers::stderr(&o).contains("is not in fr; its languages: en, de"));
    // The second questionnaire's reminder repeats the participant's own text.
    let r = submit_current(&g, "/s/trans/situation", &g.get("/s/trans/situation"));
    assert_eq!(r.status, 303, "{}", r.body);
    let after = g.get(r.location().unwrap());
    assert!(after.body.contains("Auf Deutsch: "), "{}", after.body);
}

fn the_demo_study_runs_in_english_and_german(db: TestDb) {
    let app = spawn_app(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let german = emotionbench::domain::demo::demo_situations_de();
    let english = emotionbench::domain::demo::demo_study().situations;
    let shows = |body: &str, list: &[emotionbench::domain::situation::Situation]| {
        list.iter().any(|s| {
            // As the page escapes it.
            let html = s
                .text
                .replace('&', "&amp;")
                .replace('\'', "&#39;")
                .replace('"', "&#34;");
            body.contains(&html)
        })
    };
    let (page, _) = walk_to(
        &app.browser(),
        "/s/demo?PROLIFIC_PID=piddemode&lang=de",
        "situation",
    );
    assert!(shows(&page.body, &german), "{}", page.body);
    assert!(!shows(&page.body, &english));
    let (page, _) = walk_to(
        &app.browser(),
        "/s/demo?PROLIFIC_PID=piddemoen",
        "situation",
    );
    assert!(shows(&page.body, &english), "{}", page.body);
    // The switcher offers both.
    let consent = app.browser().get("/s/demo/consent");
    assert!(consent.body.contains(">Deutsch</a>") && consent.body.contains(">English</a>"));
}

on_both_backends!(
    the_demo_study_runs_in_english_and_german,
    the_link_then_the_browser_then_the_default_chooses_the_language,
    a_catalogue_folder_adds_a_right_to_left_language,
    a_study_with_an_untranslated_situation_cannot_open_and_says_which,
);
