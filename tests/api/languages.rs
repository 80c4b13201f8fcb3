//! Issue #20: the participant pages in several languages. The language comes from the link's
//! `lang=`, else the browser's `Accept-Language` among the study's languages, else the study's
//! default; the consent page switches it; the participant keeps it on every page, and the
//! exports record it. A catalogue folder adds a language (here a right-to-left one).

use diesel::connection::SimpleConnection;
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

fn a_study_with_an_untranslated_situation_or_instrument_cannot_open_and_says_which(db: TestDb) {
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
        let mut config = s.config();
        config.translations.insert(
            Lang::parse("de").unwrap(),
            emotionbench::domain::study::StudyTexts {
                title: String::new(),
                consent: "Bitte lesen Sie diesen Text.".into(),
                debrief: "Danke.".into(),
            },
        );
        studies::update(&mut conn, s.id, &config, sources).unwrap();
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
    assert!(
        err.contains("The instrument PANAS has no item texts and labels in de."),
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
    // Every situation in German, but not the instrument: still closed, and it says so.
    let o = open();
    assert!(!o.status.success());
    let err = crate::helpers::stderr(&o);
    assert!(
        err.contains("The instrument PANAS has no item texts and labels in de."),
        "{err}"
    );
    assert!(!err.contains("The situation"), "{err}");
    import_german_panas(&app);
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
    // The instrument's German items too (#20), the English default its own.
    assert!(
        de.contains("interessiert") && !de.contains("Interested"),
        "{de}"
    );
    let en = ok(prompt(&[]));
    assert!(!en.contains("Auf Deutsch: "), "{en}");
    assert!(
        en.contains("Interested") && !en.contains("interessiert"),
        "{en}"
    );
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
    // Its PANAS in German (our own translation) for German participants, as imported for
    // English ones; and with it the demo passes the opening check in both languages.
    let (before, _) = walk_to(
        &app.browser(),
        "/s/demo?PROLIFIC_PID=piddemode2&lang=de",
        "feelings-now",
    );
    assert!(
        before.body.contains("interessiert") && before.body.contains("äußerst"),
        "{}",
        before.body
    );
    let (before, _) = walk_to(
        &app.browser(),
        "/s/demo?PROLIFIC_PID=piddemoen2",
        "feelings-now",
    );
    assert!(before.body.contains("Interested"), "{}", before.body);
    ok(cli(
        &app.db.url,
        &["studies", "set-status", "demo", "closed"],
    ));
    ok(cli(&app.db.url, &["studies", "set-status", "demo", "open"]));
}

/// A model run in the study's second language (#20, acceptance point 3): every evoked trial's
/// request carries its situation's German text, exactly the messages `prompt show --language de`
/// prints for that trial; a language the study lacks, or a situation without a text in it, is
/// refused before anything is stored; the run's language shows where runs are listed.
fn a_model_run_in_german_sends_what_prompt_show_prints_in_german(db: TestDb) {
    use crate::runs::{config, demo_run, eb, provider, run_id};
    use emotionbench::llm::fake::{FakeAction, FakeServer};
    let app = spawn_app(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let server =
        FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--seed",
            "11",
            "--default-repeats",
            "1",
            "--repeats",
            "2",
            "--situations",
            "emotion:Anger",
        ];
        args.extend_from_slice(extra);
        demo_run(&app.db, &cfg, "fake", "m", &args, &[])
    };
    let out = ok(run(&["--language", "de"]));
    assert!(out.contains(", language de"), "{out}");
    assert!(out.contains("completed"), "{out}");
    let id = run_id(&out);
    let german = emotionbench::domain::demo::demo_situations_de();
    let english = emotionbench::domain::demo::demo_study().situations;
    let trials = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::store::runs::trials(&mut conn, id).unwrap()
    };
    let evoked: Vec<_> = trials
        .iter()
        .filter(|t| t.measure.as_str() == "evoked")
        .collect();
    assert_eq!(evoked.len(), 4, "{trials:?}");
    for t in &evoked {
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        let body: serde_json::Value = serde_json::from_str(t.request.as_deref().unwrap()).unwrap();
        let sent = body["messages"].as_array().unwrap().clone();
        let de = german.iter().find(|s| s.key == t.situation_key).unwrap();
        let en = english.iter().find(|s| s.key == t.situation_key).unwrap();
        let user = sent[1]["content"].as_str().unwrap();
        assert!(user.contains(&de.text), "{user}");
        assert!(!user.contains(&en.text), "{user}");
        // The demo's PANAS in German (its translation), not as imported.
        assert!(
            user.contains("interessiert") && !user.contains("Interested"),
            "{user}"
        );
        // What prompt show prints for this trial is what the run sent, message for message.
        let shown = ok(cli(
            &app.db.url,
            &[
                "prompt",
                "show",
                "--study",
                "demo",
                "--measure",
                "evoked",
                "--situation",
                &t.situation_key,
                "--seed",
                "11",
                "--repeat",
                &t.repeat_index.to_string(),
                "--language",
                "de",
                "--json",
            ],
        ));
        let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(serde_json::Value::Array(sent), shown, "trial {}", t.id);
    }
    let list = ok(eb(&app.db, &cfg, &["runs", "list"], &[]));
    assert!(list.contains("LANGUAGE"), "{list}");
    let row = list
        .lines()
        .find(|l| l.trim_start().starts_with(&id.0.to_string()))
        .unwrap();
    assert!(row.contains(" de "), "{list}");
    let show = ok(eb(&app.db, &cfg, &["runs", "show", &id.0.to_string()], &[]));
    assert!(show.contains("language:   de"), "{show}");
    // A conversation (within-session) in German shows the German situation between its two
    // questionnaires too.
    let before = server.requests().len();
    let out = ok(demo_run(
        &app.db,
        &cfg,
        "fake",
        "m",
        &[
            "--protocol",
            "within-session",
            "--repeats",
            "1",
            "--situations",
            "emotion:Anger",
            "--language",
            "de",
        ],
        &[],
    ));
    assert!(out.contains("completed"), "{out}");
    let contents: Vec<String> = server.requests()[before..]
        .iter()
        .flat_map(|r| {
            let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    for s in english.iter().filter(|s| s.emotion == "Anger") {
        let de = german.iter().find(|g| g.key == s.key).unwrap();
        assert!(contents.iter().any(|c| c.contains(&de.text)), "{}", de.key);
        assert!(!contents.iter().any(|c| c.contains(&s.text)), "{}", s.key);
    }
    let requests = server.requests().len();

    // A language the study lacks: refused, naming the study's.
    let o = run(&["--language", "fr"]);
    assert!(!o.status.success());
    assert!(
        crate::helpers::stderr(&o).contains("is not in fr; its languages: en, de"),
        "{}",
        crate::helpers::stderr(&o)
    );
    // A situation of the run without a German text: refused, naming it; the others may run.
    let untranslated = &english[1].key;
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        conn.batch_execute(&format!(
            "DELETE FROM situation_texts WHERE language = 'de' AND situation_id = \
             (SELECT id FROM situations WHERE key = '{untranslated}')"
        ))
        .unwrap();
    }
    let o = run(&["--language", "de"]);
    assert!(!o.status.success());
    let err = crate::helpers::stderr(&o);
    assert!(
        err.contains(&format!("the situation {untranslated} has no text in de")),
        "{err}"
    );
    // Neither refusal stored a run or sent a request.
    let list = ok(eb(&app.db, &cfg, &["runs", "list"], &[]));
    assert_eq!(list.lines().count(), 3, "{list}");
    assert_eq!(server.requests().len(), requests);
    // The same run in English (the default, named or not) takes the set's own texts.
    let out = ok(run(&["--language", "en", "--detach"]));
    assert!(out.contains(", language en"), "{out}");
    // A stored language that is not a tag is an error naming the column, never the default.
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        conn.batch_execute(&format!(
            "UPDATE model_runs SET language = 'not a tag' WHERE id = {}",
            id.0
        ))
        .unwrap();
    }
    let o = eb(&app.db, &cfg, &["runs", "show", &id.0.to_string()], &[]);
    assert!(!o.status.success());
    let err = crate::helpers::stderr(&o);
    assert!(
        err.contains("model_runs") && err.contains("language"),
        "{err}"
    );
}

/// The report and the exports split by language (#20, acceptance point 3): three participants
/// take a two-language study in German and two in English, a model runs once in German and
/// once without a language (the default, English); the report's By-language section gives each
/// language its own n on both sides, in every format, and an export filtered by language has
/// only that language's participants.
fn the_report_and_the_exports_split_by_language(db: TestDb) {
    use crate::runs::{config, eb, provider};
    use emotionbench::llm::fake::{FakeAction, FakeServer};
    let app = spawn_app(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        // The demo set with its German texts, which the study below uses.
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    make_study(&app, "bi", |c| c.languages = langs(&["en", "de"]));
    for (pid, lang) in [
        ("pidbide1", "de"),
        ("pidbide2", "de"),
        ("pidbide3", "de"),
        ("pidbien1", "en"),
        ("pidbien2", "en"),
    ] {
        let (done, _) = walk_to(
            &app.browser(),
            &format!("/s/bi?PROLIFIC_PID={pid}&lang={lang}"),
            "never",
        );
        assert_eq!(done.status, 303, "{pid}");
        assert_eq!(language_of(&app, "bi", pid).as_deref(), Some(lang));
    }
    let server =
        FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--study",
            "bi",
            "--provider",
            "fake",
            "--model",
            "m",
            "--seed",
            "3",
            "--default-repeats",
            "2",
            "--situations",
            "emotion:Anger",
        ];
        args.extend_from_slice(extra);
        ok(eb(&app.db, &cfg, &args, &[]))
    };
    // In German: 2 default + 2 situations × 2 repeats; by default: 2 + 2 × 1.
    run(&["--language", "de", "--repeats", "2"]);
    run(&["--repeats", "1"]);

    let report = |format: &str| {
        ok(cli(
            &app.db.url,
            &["report", "--study", "bi", "--format", format],
        ))
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let split = &json["by_language"]["languages"];
    assert_eq!(split.as_array().unwrap().len(), 2, "{split}");
    assert_eq!(split[0]["language"], "en");
    assert_eq!(split[0]["default"], true);
    assert_eq!(split[0]["humans"]["n"], 2);
    assert_eq!(split[0]["models"][0]["cohort"], "m");
    assert_eq!(split[0]["models"][0]["n"], 4);
    assert_eq!(split[1]["language"], "de");
    assert_eq!(split[1]["humans"]["n"], 3);
    assert_eq!(split[1]["models"][0]["n"], 6);
    // Each category's cell is over that language's participants only.
    assert_eq!(split[1]["humans"]["categories"][0]["n_default"], 3);
    assert_eq!(split[1]["humans"]["categories"][1]["n_evoked"], 3);
    assert_eq!(split[1]["models"][0]["categories"][0]["n_evoked"], 4);
    // The whole report still pools every participant and every run.
    let humans = json["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "humans");
    assert_eq!(humans.unwrap()["observations"], 5);
    // The methods block names each run's language.
    let md = report("md");
    assert!(md.contains("language de, temperature"), "{md}");
    assert!(
        md.contains("language en (the study's default), temperature"),
        "{md}"
    );
    let section = &md[md
        .find("\n## By language\n")
        .expect("a By language section")..];
    assert!(section.contains("In en (the study's default)"), "{section}");
    assert!(section.contains("| humans | 2 |"), "{section}");
    assert!(section.contains("| humans | 3 |"), "{section}");
    assert!(section.contains("| m | 6 |"), "{section}");
    let html = report("html");
    assert!(html.contains("<h2>By language</h2>"), "{html}");
    assert!(
        html.contains("<th scope=\"row\">humans</th><td>3</td>"),
        "{html}"
    );
    // CSV: the section's rows carry their language; the report's own rows leave it empty.
    let csv_text = report("csv");
    let mut rows = csv::Reader::from_reader(csv_text.as_bytes());
    let header = rows.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(header.iter().next_back(), Some("language"));
    let records: Vec<csv::StringRecord> = rows.records().map(|r| r.unwrap()).collect();
    let de_humans: Vec<&csv::StringRecord> = records
        .iter()
        .filter(|r| &r[at("language")] == "de" && &r[at("cohort")] == "humans")
        .collect();
    assert_eq!(de_humans.len(), 2, "one row per category");
    assert!(
        de_humans
            .iter()
            .all(|r| &r[at("n_default")] == "3" && &r[at("level")] == "overall")
    );
    assert!(records.iter().any(|r| r[at("language")].is_empty()));
    // A study in one language has no such section.
    make_study(&app, "mono", |_| {});
    let mono = ok(cli(
        &app.db.url,
        &["report", "--study", "mono", "--format", "md"],
    ));
    assert!(!mono.contains("## By language"), "{mono}");

    // The exports keep to one language when asked; the language must be the study's.
    for (lang, want) in [
        ("de", &["pidbide1", "pidbide2", "pidbide3"][..]),
        ("en", &["pidbien1", "pidbien2"][..]),
    ] {
        for what in ["wide", "long"] {
            let out = ok(cli(
                &app.db.url,
                &["export", what, "--study", "bi", "--language", lang],
            ));
            let mut rows = csv::Reader::from_reader(out.as_bytes());
            let header = rows.headers().unwrap().clone();
            let pid = header.iter().position(|h| h == "prolific_pid").unwrap();
            let language = header.iter().position(|h| h == "language").unwrap();
            let mut seen: Vec<String> = Vec::new();
            for r in rows.records() {
                let r = r.unwrap();
                assert_eq!(&r[language], lang, "{what}: {out}");
                if !seen.contains(&r[pid].to_owned()) {
                    seen.push(r[pid].to_owned());
                }
            }
            seen.sort();
            assert_eq!(seen, want, "{what} in {lang}");
        }
    }
    let o = cli(
        &app.db.url,
        &["export", "wide", "--study", "bi", "--language", "fr"],
    );
    assert!(!o.status.success());
    assert!(crate::helpers::stderr(&o).contains("is not in fr; its languages: en, de"));
}

/// The admin pages take a language the same way (#20): the new-run form's Language field goes
/// to the same use case as `run --language` (refused for a language the study lacks; the run's
/// trials in German, its pages naming it), and an export link's `?language=` keeps to one
/// language's participants (refused, before any row, for one the study lacks).
fn the_admin_run_form_and_export_links_take_a_language(db: TestDb) {
    use emotionbench::config::{ProviderConfig, ProviderKind};
    use emotionbench::llm::fake::{FakeAction, FakeServer};
    let server =
        FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
    let app = spawn_app_with(db, |s| {
        let mut p = ProviderConfig::new("fake", ProviderKind::Openai, &server.base_url());
        p.concurrency = 2;
        s.providers = vec![p];
        s.worker_slots = Some(2);
    });
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    make_study(&app, "webbi", |c| c.languages = langs(&["en", "de"]));
    for (pid, lang) in [("pidwebde", "de"), ("pidweben", "en")] {
        let url = format!("/s/webbi?PROLIFIC_PID={pid}&lang={lang}");
        assert_eq!(walk_to(&app.browser(), &url, "never").0.status, 303);
    }
    let admin = crate::admin::signed_in(&app, emotionbench::store::users::Role::Admin);
    let token = admin.get("/admin").csrf();
    let form = |language: &str| -> Vec<(String, String)> {
        [
            ("csrf", token.as_str()),
            ("study", "webbi"),
            ("provider", "fake"),
            ("model", "web-1"),
            ("template", "eb-code"),
            ("repeats", "1"),
            ("default_repeats", "1"),
            ("situations", "emotion:Anger"),
            ("seed", "5"),
            ("temperature", "0"),
            ("language", language),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
    };
    let r = admin.post("/admin/runs", &crate::helpers::fields(&form("fr")));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("is not in fr; its languages: en, de"),
        "{}",
        r.body
    );
    let r = admin.post("/admin/runs", &crate::helpers::fields(&form("de")));
    assert_eq!(r.status, 303, "{}", r.body);
    let page = r.location().unwrap().to_owned();
    let started = std::time::Instant::now();
    loop {
        let r = admin.get(&page);
        assert_eq!(r.status, 200);
        if r.body.contains("<span class=\"badge\">completed</span>") {
            assert!(r.body.contains("· language de ·"), "{}", r.body);
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{}",
            r.body
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(admin.get("/admin/runs").body.contains("<td>de</td>"));
    let german = emotionbench::domain::demo::demo_situations_de();
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let run = emotionbench::store::runs::list(&mut conn)
        .unwrap()
        .remove(0);
    assert_eq!(run.language.as_deref(), Some("de"));
    let trials = emotionbench::store::runs::trials(&mut conn, run.id).unwrap();
    let evoked: Vec<_> = trials
        .iter()
        .filter(|t| t.measure.as_str() == "evoked")
        .collect();
    assert_eq!(evoked.len(), 2);
    for t in evoked {
        let de = german.iter().find(|s| s.key == t.situation_key).unwrap();
        let body: serde_json::Value = serde_json::from_str(t.request.as_deref().unwrap()).unwrap();
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains(&de.text), "{user}");
    }

    let csv = admin.get("/admin/studies/webbi/export/wide.csv?language=de");
    assert_eq!(csv.status, 200, "{}", csv.body);
    assert!(
        csv.body.contains("pidwebde") && !csv.body.contains("pidweben"),
        "{}",
        csv.body
    );
    let csv = admin.get("/admin/studies/webbi/export/long.csv?language=en&status=all");
    assert!(csv.body.contains("pidweben") && !csv.body.contains("pidwebde"));
    let refused = admin.get("/admin/studies/webbi/export/wide.csv?language=fr");
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("is not in fr"), "{}", refused.body);
}

/// `records` as a translation file in `dir`.
fn instrument_texts_file(
    dir: &std::path::Path,
    name: &str,
    records: &[emotionbench::domain::instrument_text::TranslationRecord],
) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(records).unwrap()).unwrap();
    path
}

fn an_instruments_texts_in_german_are_imported_and_a_mismatched_translation_is_refused(db: TestDb) {
    use emotionbench::store::{instrument_texts, instruments};
    let app = spawn_app(db);
    make_study(&app, "instde", |c| c.languages = langs(&["en", "de"]));
    let dir = tempfile::tempdir().unwrap();
    let import = |path: &std::path::Path| {
        cli(
            &app.db.url,
            &[
                "import",
                "instruments",
                path.to_str().unwrap(),
                "--language",
                "de",
            ],
        )
    };
    let german = emotionbench::domain::demo::demo_panas_de();
    let de = Lang::parse("de").unwrap();
    let stored = || {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let (id, _) = instruments::load(&mut conn, "PANAS").unwrap().unwrap();
        instrument_texts::missing(&mut conn, id, std::slice::from_ref(&de)).unwrap()
    };

    // An item number the PANAS lacks: refused naming the record, the field and why; nothing
    // stored.
    let mut wrong = german.clone();
    wrong.items[3].number = 21;
    let o = import(&instrument_texts_file(dir.path(), "wrong.json", &[wrong]));
    assert!(!o.status.success());
    let err = crate::helpers::stderr(&o);
    assert!(
        err.contains("record 1 (PANAS), field \"items\"[4].number")
            && err.contains("PANAS has no item 21 (its items are 1..=20)"),
        "{err}"
    );
    assert_eq!(stored(), vec![de.clone()]);
    // A label value the PANAS lacks, likewise.
    let mut wrong = german.clone();
    wrong.labels[4].value = 6;
    let o = import(&instrument_texts_file(dir.path(), "labels.json", &[wrong]));
    let err = crate::helpers::stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("field \"labels\"[5].value")
            && err.contains("no label for 6"),
        "{err}"
    );
    // An instrument that does not exist.
    let mut other = german.clone();
    other.name = "NOPE".into();
    let o = import(&instrument_texts_file(dir.path(), "nope.json", &[other]));
    assert!(crate::helpers::stderr(&o).contains("there is no instrument NOPE"));
    assert_eq!(stored(), vec![de.clone()]);

    let out = ok(import(&instrument_texts_file(
        dir.path(),
        "de.json",
        &[german],
    )));
    assert!(
        out.contains("into PANAS: 20 item texts and its labels in de"),
        "{out}"
    );
    assert!(stored().is_empty());
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let (id, own) = instruments::load(&mut conn, "PANAS").unwrap().unwrap();
    let shown = instrument_texts::get_in(&mut conn, id, Some("de")).unwrap();
    assert_eq!(shown.items[0].text, "interessiert");
    assert_eq!(shown.labels[0].label, "sehr wenig oder gar nicht");
    assert_eq!(shown.categories, own.categories);
    assert_eq!(instrument_texts::get_in(&mut conn, id, None).unwrap(), own);
    assert_eq!(
        instrument_texts::get_in(&mut conn, id, Some("zh-CN")).unwrap(),
        own
    );
    // The import is audited.
    let audit = emotionbench::store::audit::recent(&mut conn, 5).unwrap();
    let entry = audit
        .iter()
        .find(|e| e.action == "import.instrument_texts")
        .unwrap();
    let detail = entry.detail.as_deref().unwrap();
    assert!(
        detail.contains("\"language\":\"de\"") && detail.contains("PANAS"),
        "{detail}"
    );
    assert_eq!(
        audit
            .iter()
            .filter(|e| e.action == "import.instrument_texts")
            .count(),
        1
    );
    // Stored texts that do not decode are an error, never the instrument's own texts.
    conn.batch_execute("UPDATE instrument_texts SET labels = 'not json'")
        .unwrap();
    let e = instrument_texts::get_in(&mut conn, id, Some("de")).unwrap_err();
    assert!(
        e.to_string()
            .contains("instrument_texts row PANAS de, column labels"),
        "{e}"
    );
}

/// Imports the demo's German PANAS (our own translation) as the PANAS's texts in `de`.
/// Posts the study form of `slug` (as [`study_form`] fills it, ready to open but for what a
/// second language needs) with the study in English and German, and `more` fields.
fn post_bilingual_form(admin: &Browser, path: &str, slug: &str, more: &[(&str, &str)]) -> Reply {
    let csrf = admin.get("/admin/studies/new").csrf();
    let retention = (chrono::Utc::now().date_naive() + chrono::Days::new(90)).to_string();
    let mut form = crate::study_setup::study_form(
        &csrf,
        slug,
        &[
            (
                "consent_text",
                "Run by Dr Ada Lovelace (ada@example.org), IRB 2026-17.",
            ),
            ("debrief_text", "Thank you. Questions: ada@example.org."),
            ("code_completed", "C0MPLETE"),
            ("retention", &retention),
        ],
    );
    form.push(("languages".into(), "en, de".into()));
    form.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let fields: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    admin.post(path, &fields)
}

/// A study in English and German asks for its consent and debrief in German, does not open
/// without them (or with a placeholder left in one), and each participant reads the consent
/// and debrief of their own language, escaped like every other text.
fn the_consent_and_debrief_are_written_for_each_language_and_read_in_the_participants(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "seed", |_| {}); // brings the demo situation set
    let admin = crate::admin::signed_in(&app, emotionbench::store::users::Role::Admin);
    let r = post_bilingual_form(&admin, "/admin/studies", "bi", &[]);
    assert_eq!(r.location(), Some("/admin/studies/bi"), "{}", r.body);
    // Its situations and instrument in German, so only the consent and debrief are missing.
    let dir = tempfile::tempdir().unwrap();
    let (whole, _) = texts_file(dir.path(), "Auf Deutsch: ", 0);
    let path = whole.to_str().unwrap();
    let import = [
        "import",
        "situations",
        path,
        "--set",
        "demo",
        "--language",
        "de",
    ];
    ok(cli(&app.db.url, &import));
    import_german_panas(&app);

    // The form asks for them, the study page's checklist says what is missing, opening
    // refuses.
    let edit = admin.get("/admin/studies/bi/edit");
    assert_eq!(edit.status, 200);
    assert!(
        edit.body
            .contains(r#"<textarea id="consent_text_de" name="consent_text_de" lang="de""#),
        "{}",
        edit.body
    );
    assert!(edit.body.contains(r#"name="debrief_text_de""#));
    let page = admin.get("/admin/studies/bi");
    assert!(
        page.body
            .contains("Write the consent text in de. Write the debrief text in de."),
        "{}",
        page.body
    );
    let csrf = page.csrf();
    let open = [("csrf", csrf.as_str()), ("status", "open")];
    // Opening after the German texts are saved as given: its reply.
    let open_with = |title: &str, consent: &str, debrief: &str| {
        let more = [
            ("title_de", title),
            ("consent_text_de", consent),
            ("debrief_text_de", debrief),
        ];
        let r = post_bilingual_form(&admin, "/admin/studies/bi", "bi", &more);
        assert_eq!(r.status, 303, "{}", r.body);
        admin.post("/admin/studies/bi/status", &open)
    };
    let r = admin.post("/admin/studies/bi/status", &open);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("Write the consent text in de."),
        "{}",
        r.body
    );

    // A placeholder left in the German consent: still refused, and it says where.
    let r = open_with("", "Fragen an [CONTACT].", "Danke.");
    assert_eq!(r.status, 422);
    let says = "Replace [CONTACT] in the consent text in de.";
    assert!(r.body.contains(says), "{}", r.body);
    let r = open_with(
        "Gefühle im Alltag",
        "Studie von Dr. Ada Lovelace.\r\n\r\nFragen: <b>ada@example.org</b>",
        "Vielen Dank f\u{fc}r Ihre Teilnahme.",
    );
    assert_eq!(r.status, 303, "{}", r.body);
    // The form shows what is stored.
    let edit = admin.get("/admin/studies/bi/edit");
    assert!(
        edit.body
            .contains("Vielen Dank für Ihre Teilnahme.</textarea>"),
        "{}",
        edit.body
    );

    // German participants read the German consent (two paragraphs, the markup as text),
    // English ones the English; and each their own debrief.
    let de = app.browser().get("/s/bi/consent?lang=de");
    assert!(
        de.body.contains("<p>Studie von Dr. Ada Lovelace.</p>"),
        "{}",
        de.body
    );
    assert!(
        de.body
            .contains("Fragen: &#60;b&#62;ada@example.org&#60;/b&#62;"),
        "{}",
        de.body
    );
    assert!(!de.body.contains("<b>ada"));
    assert!(!de.body.contains("IRB 2026-17"));
    // The German title in the header and the window's title; the English one in English.
    assert!(
        de.body.contains("<title>Gefühle im Alltag</title>"),
        "{}",
        de.body
    );
    assert!(!de.body.contains("Launch test"));
    let en = app.browser().get("/s/bi/consent?lang=en");
    assert!(en.body.contains("IRB 2026-17"), "{}", en.body);
    assert!(!en.body.contains("Studie von"));
    assert!(en.body.contains("Launch test") && !en.body.contains("Gefühle im Alltag"));
    let (page, _) = walk_to(
        &app.browser(),
        "/s/bi?PROLIFIC_PID=pidbide&lang=de",
        "debrief",
    );
    assert!(
        page.body.contains("Vielen Dank für Ihre Teilnahme."),
        "{}",
        page.body
    );
    let (page, _) = walk_to(&app.browser(), "/s/bi?PROLIFIC_PID=pidbien", "debrief");
    assert!(
        page.body.contains("Thank you. Questions: ada@example.org."),
        "{}",
        page.body
    );

    // The study's definition file carries them to another installation.
    let def = ok(cli(&app.db.url, &["studies", "export", "bi"]));
    assert!(def.contains("Vielen Dank für Ihre Teilnahme."), "{def}");
}

fn import_german_panas(app: &TestApp) {
    let dir = tempfile::tempdir().unwrap();
    let path = instrument_texts_file(
        dir.path(),
        "panas-de.json",
        &[emotionbench::domain::demo::demo_panas_de()],
    );
    ok(cli(
        &app.db.url,
        &[
            "import",
            "instruments",
            path.to_str().unwrap(),
            "--language",
            "de",
        ],
    ));
}

fn a_german_participant_answers_the_panas_in_german_on_both_pages(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "panasde", |c| c.languages = langs(&["en", "de"]));
    import_german_panas(&app);
    let german = |body: &str| {
        body.contains("interessiert")
            && body.contains("ängstlich")
            && body.contains("sehr wenig oder gar nicht")
            && body.contains("äußerst")
            && !body.contains("Interested")
            && !body.contains("very slightly or not at all")
    };
    let g = app.browser();
    let (before, path) = walk_to(
        &g,
        "/s/panasde?PROLIFIC_PID=pidpanasde&lang=de",
        "feelings-now",
    );
    assert!(german(&before.body), "{}", before.body);
    // The page shown again with its errors (nothing answered) is in German too.
    let csrf = before.csrf();
    let again = g.post(&path, &[("csrf", csrf.as_str())]);
    assert_eq!(again.status, 422, "{}", again.body);
    assert!(german(&again.body), "{}", again.body);
    let (after, _) = walk_to(&g, &path, "feelings-imagined");
    assert!(german(&after.body), "{}", after.body);
    // The answers are stored by item number, as in English.
    let r = submit_current(&g, "/s/panasde/feelings-imagined", &after);
    assert_eq!(r.status, 303, "{}", r.body);

    // The study's default language shows the instrument as imported.
    let e = app.browser();
    let (before, _) = walk_to(
        &e,
        "/s/panasde?PROLIFIC_PID=pidpanasen&lang=en",
        "feelings-now",
    );
    assert!(before.body.contains("Interested"), "{}", before.body);
    assert!(!before.body.contains("interessiert"), "{}", before.body);
}

on_both_backends!(
    the_consent_and_debrief_are_written_for_each_language_and_read_in_the_participants,
    a_german_participant_answers_the_panas_in_german_on_both_pages,
    an_instruments_texts_in_german_are_imported_and_a_mismatched_translation_is_refused,
    the_admin_run_form_and_export_links_take_a_language,
    the_report_and_the_exports_split_by_language,
    a_model_run_in_german_sends_what_prompt_show_prints_in_german,
    the_demo_study_runs_in_english_and_german,
    the_link_then_the_browser_then_the_default_chooses_the_language,
    a_catalogue_folder_adds_a_right_to_left_language,
    a_study_with_an_untranslated_situation_or_instrument_cannot_open_and_says_which,
);
