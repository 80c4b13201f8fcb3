//! Issue #13 point 8, small frictions of the participant pages: no withdraw link before
//! consent, no full progress bar on pages of an unfinished survey, a year-of-birth range that
//! agrees with the 18+ consent, the situation repeated above the second questionnaire, and
//! unanswered items marked at the item.

use chrono::Datelike;

use crate::helpers::{TestDb, spawn_app};
use crate::on_both_backends;
use crate::survey::{items_on, make_study, submit_current, walk_to};

fn there_is_no_withdraw_link_before_consent_and_no_full_bar_after_leaving(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "fr", |_| {});
    let b = app.browser();
    let (consent, path) = b.open("/s/fr");
    assert_eq!(crate::helpers::page_name(&path), "consent", "{path}");
    assert!(
        !consent.body.contains("/withdraw"),
        "declining is the way out: {}",
        consent.body
    );
    assert!(consent.body.contains("I do not agree"));
    assert!(
        consent.body.contains("<progress"),
        "the bar shows the steps"
    );

    // Declined: no progress bar.
    let form = crate::helpers::consent_form(&consent, None, "no");
    let fields = crate::helpers::fields(&form);
    let r = b.post(&path, &fields);
    assert_eq!(r.status, 303);
    let (declined, _) = b.open("/s/fr");
    assert!(declined.body.contains("You chose not to take part"));
    assert!(!declined.body.contains("<progress"), "{}", declined.body);

    // Withdrawn: the link shows after consent; the withdrawn page has no bar.
    let w = app.browser();
    let (page, _) = walk_to(&w, "/s/fr", "feelings-now");
    assert!(
        page.body.contains("/s/fr/withdraw"),
        "after consent, withdrawal is offered"
    );
    let confirm = w.get("/s/fr/withdraw");
    let r = w.post("/s/fr/withdraw", &[("csrf", &confirm.csrf())]);
    assert_eq!(r.status, 303);
    let (withdrawn, path) = w.open("/s/fr");
    assert!(path.ends_with("/withdrawn"), "{path}");
    assert!(withdrawn.body.contains("You have withdrawn"));
    assert!(!withdrawn.body.contains("<progress"), "{}", withdrawn.body);

    // Completed: the full bar is true there.
    let c = app.browser();
    let (done, _) = walk_to(&c, "/s/fr", "done");
    assert!(done.body.contains("Thank you!") && done.body.contains("<progress"));
}

fn the_year_of_birth_range_agrees_with_the_18_plus_consent(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "years", |_| {});
    let youngest = chrono::Utc::now().year() - 18;
    let b = app.browser();
    let (page, path) = walk_to(&b, "/s/years", "demographics");
    assert!(page.body.contains(&format!("<option value=\"{youngest}\"")));
    assert!(
        !page
            .body
            .contains(&format!("<option value=\"{}\"", youngest + 1))
    );
    let csrf = page.csrf();
    let answer = |year: i32| {
        let year = year.to_string();
        b.post(
            &path,
            &[
                ("csrf", csrf.as_str()),
                ("gender", "Female"),
                ("year_of_birth", year.as_str()),
                ("country", "United Kingdom"),
                ("employment_status", "Employed"),
                ("education", "University - Masters"),
            ],
        )
    };
    let r = answer(youngest + 1);
    assert_eq!(
        r.status, 422,
        "a 17-year-old's year is refused by the server too"
    );
    assert!(r.body.contains("aria-invalid=\"true\""));
    let r = answer(youngest);
    assert_eq!(r.status, 303, "{}", r.body);
}

fn the_second_questionnaire_repeats_the_situation_and_marks_unanswered_items(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "remind", |_| {});
    let b = app.browser();
    let (first, path) = walk_to(&b, "/s/remind", "feelings-now");
    assert!(
        !first.body.contains("The situation:"),
        "nothing to remind of yet"
    );

    // One item left unanswered: marked at the item, and linked from the summary.
    let items = items_on(&first);
    let missing = items[3];
    let owned: Vec<(String, String)> = items
        .iter()
        .filter(|n| **n != missing)
        .map(|n| (format!("item-{n}"), "3".to_owned()))
        .collect();
    let csrf = first.csrf();
    let mut fields: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    fields.push(("csrf", &csrf));
    let r = b.post(&path, &fields);
    assert_eq!(r.status, 422);
    let body = &r.body;
    let item = body
        .split(&format!(
            "<fieldset class=\"item invalid\" id=\"item-{missing}\""
        ))
        .nth(1)
        .and_then(|rest| rest.split("</fieldset>").next())
        .unwrap_or_else(|| panic!("item {missing} is not marked invalid: {body}"));
    assert!(
        item.contains(&format!("aria-describedby=\"err-item-{missing}\"")),
        "{item}"
    );
    assert!(
        item.contains(&format!("id=\"err-item-{missing}\"")),
        "{item}"
    );
    assert!(item.contains("Please choose an answer."), "{item}");
    assert_eq!(
        item.matches("aria-invalid=\"true\"").count(),
        5,
        "every choice of the item: {item}"
    );
    assert_eq!(
        body.matches("aria-invalid=\"true\"").count(),
        5,
        "only that item's"
    );
    assert!(
        body.contains(&format!("href=\"#item-{missing}\"")),
        "the summary links it"
    );
    assert_eq!(body.matches("class=\"item invalid\"").count(), 1);

    // The situation page, then the second questionnaire reminds of it.
    let r = submit_current(&b, &path, &first);
    assert_eq!(r.status, 303);
    let (situation, spath) = b.open(r.location().unwrap());
    assert!(spath.ends_with("/situation"));
    let text = situation
        .body
        .split("<blockquote class=\"situation\">")
        .nth(1)
        .and_then(|t| t.split("</blockquote>").next())
        .unwrap()
        .to_owned();
    let r = submit_current(&b, &spath, &situation);
    let (second, _) = b.open(r.location().unwrap());
    let reminder = second
        .body
        .split("<p class=\"reminder\">")
        .nth(1)
        .and_then(|t| t.split("</p>").next())
        .unwrap_or_else(|| panic!("no reminder: {}", second.body));
    let words: Vec<&str> = text.split_whitespace().take(4).collect();
    assert!(reminder.contains(&words.join(" ")), "{reminder} / {text}");
    assert!(!reminder.contains('\n'), "one line");
    // The reminder stays when the page comes back with an unanswered item.
    let csrf = second.csrf();
    let r = b.post("/s/remind/feelings-imagined", &[("csrf", &csrf)]);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("<p class=\"reminder\">"), "{}", r.body);
}

on_both_backends!(
    there_is_no_withdraw_link_before_consent_and_no_full_bar_after_leaving,
    the_year_of_birth_range_agrees_with_the_18_plus_consent,
    the_second_questionnaire_repeats_the_situation_and_marks_unanswered_items,
);
