//! The demo and the generated fixtures: the embedded default's study and admin, and the
//! generated studies and model runs of the benchmarks and tests.

use super::error::Result;
use crate::auth::password;
use crate::domain::demo::demo_study;
use crate::domain::measure::Measure;
use crate::domain::study::{StudyConfig, StudyStatus};
use crate::store::{
    self, DbConnection, ItemOrder, Json, StoreError, audit, instruments, situations, studies, users,
};

/// What loading the demo did.
#[derive(Debug, Clone)]
pub struct DemoSetup {
    pub study_slug: String,
    pub study_created: bool,
    /// Set only when the admin account was created now: the password is shown once.
    pub admin: Option<(String, String)>,
}

pub const DEMO_ADMIN_EMAIL: &str = "admin@localhost";

/// The completion code the demo study shows at the end (the demo is not on Prolific; a real
/// study enters the code Prolific gives it).
pub const DEMO_COMPLETION_CODE: &str = "DEMO-COMPLETED";

/// The demo's valence study (#18): the demo situations and our positive and neutral variants,
/// for model runs (`run --study demo-valence`) and the report's valence section. A draft: it
/// is not offered to participants.
pub const DEMO_VALENCE_STUDY: &str = "demo-valence";

/// Loads the demo study once, and creates an admin with a random password when there is none.
pub fn load_demo(conn: &mut DbConnection) -> Result<DemoSetup> {
    let demo = demo_study();
    // The free-text task (#18) is imported whenever missing: a demo database made before it
    // gains it too; an unchanged one stays as it is.
    instruments::import(conn, &[crate::domain::demo::free_text_task()])?;
    let study_created = conn.write_transaction(|conn| {
        if store::studies::find(conn, demo.slug)?.is_some() {
            return Ok::<_, StoreError>(false);
        }
        let german =
            crate::domain::language::Lang::parse("de").map_err(StoreError::Inconsistent)?;
        let instrument = instruments::ensure_builtin(conn)?;
        // The PANAS in German too, so that the demo's German participants answer it in German
        // and the study opens: our own, unvalidated translation (domain::demo). A PANAS that
        // already has German texts (a lab's validated ones) keeps them.
        if !store::instrument_texts::missing(conn, instrument, std::slice::from_ref(&german))?
            .is_empty()
        {
            store::instrument_texts::import(
                conn,
                &german,
                &[crate::domain::demo::demo_panas_de()],
            )?;
        }
        situations::import(
            conn,
            demo.situation_set,
            "demo (written by the emotionbench team)",
            &demo.situations,
        )?;
        let set = situations::find_set(conn, demo.situation_set)?
            .ok_or_else(|| StoreError::Inconsistent("demo set vanished".into()))?;
        // In English and German (#20): the German situations are our own, unvalidated.
        store::situation_texts::import(
            conn,
            set,
            demo.situation_set,
            &german,
            &crate::domain::demo::demo_situations_de(),
        )?;
        let mut config = StudyConfig::new(demo.slug, demo.title);
        config.consent_text = demo.consent_text.to_owned();
        config.debrief_text = demo.debrief_text.to_owned();
        config.translations.insert(
            german.clone(),
            crate::domain::study::StudyTexts {
                title: demo.title_de.to_owned(),
                consent: demo.consent_text_de.to_owned(),
                debrief: demo.debrief_text_de.to_owned(),
            },
        );
        config.languages = vec![crate::domain::language::Lang::english(), german];
        config.target_per_situation = 5;
        config.min_situation_seconds = 5;
        // The demo opens at once, so it must pass the launch checklist every study passes
        // before it opens: a completion code (it uses Prolific's parameter names) and a
        // retention date, a year from its creation.
        config.code_completed = Some(DEMO_COMPLETION_CODE.to_owned());
        let sources = studies::Sources {
            retention_until: Some(chrono::Utc::now().naive_utc() + chrono::Duration::days(365)),
            ..studies::Sources::new(instrument, Some(set))
        };
        let seed = rand::random::<u32>() as i64;
        studies::create(conn, &config, StudyStatus::Open, sources, seed)?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "study.create",
            Some(demo.slug),
            None,
        )?;
        Ok(true)
    })?;
    let admin = if users::count_admins(conn).map_err(StoreError::from)? == 0 {
        let secret = password::random_secret(20);
        let hash = password::hash(&secret)?;
        conn.write_transaction(|conn| {
            users::create(conn, DEMO_ADMIN_EMAIL, &hash, users::Role::Admin)?;
            audit::record(
                conn,
                &audit::Actor::Cli,
                "user.create",
                Some(DEMO_ADMIN_EMAIL),
                None,
            )?;
            Ok::<_, StoreError>(())
        })?;
        Some((DEMO_ADMIN_EMAIL.to_owned(), secret))
    } else {
        None
    };
    Ok(DemoSetup {
        study_slug: demo.slug.to_owned(),
        study_created,
        admin,
    })
}

/// Creates the valence study and its set once (also in a demo database made before #18);
/// whether it was created now. The `demo` command loads it beside [`load_demo`].
pub fn load_valence_demo(conn: &mut DbConnection) -> Result<bool> {
    let demo = demo_study();
    Ok(conn.write_transaction(|conn| {
        if store::studies::find(conn, DEMO_VALENCE_STUDY)?.is_some() {
            return Ok::<_, StoreError>(false);
        }
        let instrument = instruments::ensure_builtin(conn)?;
        situations::import(
            conn,
            demo.valence_set,
            "demo valence variants (written by the emotionbench team)",
            &demo.valence_situations(),
        )?;
        let set = situations::find_set(conn, demo.valence_set)?
            .ok_or_else(|| StoreError::Inconsistent("demo valence set vanished".into()))?;
        let config = StudyConfig::new(
            DEMO_VALENCE_STUDY,
            "EmotionBench demo: the valence control (models)",
        );
        let seed = rand::random::<u32>() as i64;
        studies::create(
            conn,
            &config,
            StudyStatus::Draft,
            studies::Sources::new(instrument, Some(set)),
            seed,
        )?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "study.create",
            Some(DEMO_VALENCE_STUDY),
            None,
        )?;
        Ok(true)
    })?)
}

/// Creates a closed study `slug` over the demo situations with `participants` completed
/// participants with seeded random answers: the fixture of the export tests and benchmark.
/// Inserts in transactions of 1,000 participants, so memory stays small at any size.
pub fn generate_study(
    conn: &mut DbConnection,
    slug: &str,
    participants: usize,
    seed: u64,
) -> Result<store::StudyId> {
    let demo = demo_study();
    let set_name = format!("{slug}-situations");
    let study = conn.write_transaction(|conn| {
        let instrument = instruments::ensure_builtin(conn)?;
        situations::import(conn, &set_name, "generated", &demo.situations)?;
        let set = situations::find_set(conn, &set_name)?
            .ok_or_else(|| StoreError::Inconsistent("generated set vanished".into()))?;
        let config = StudyConfig::new(slug, "Generated study");
        studies::create(
            conn,
            &config,
            StudyStatus::Closed,
            studies::Sources::new(instrument, Some(set)),
            seed as i64,
        )
    })?;
    add_generated(conn, slug, study, 0, participants, seed)?;
    Ok(study)
}

/// Adds `participants` more completed participants to the generated study `slug` (numbered
/// from `first`, so their public ids stay unique): a live study's new completions in the
/// monitor benchmark.
pub fn generate_more(
    conn: &mut DbConnection,
    slug: &str,
    first: usize,
    participants: usize,
    seed: u64,
) -> Result<()> {
    let study = studies::load(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| super::Error::NoStudy(slug.to_owned()))?;
    add_generated(conn, slug, study.id, first, participants, seed)
}

fn add_generated(
    conn: &mut DbConnection,
    slug: &str,
    study: store::StudyId,
    first: usize,
    participants: usize,
    seed: u64,
) -> Result<()> {
    use rand::{Rng, SeedableRng};
    let set_name = format!("{slug}-situations");
    let set = situations::find_set(conn, &set_name)
        .map_err(StoreError::from)?
        .ok_or_else(|| StoreError::Inconsistent("generated set vanished".into()))?;
    let ids: Vec<store::SituationId> = situations::list(conn, set)
        .map_err(StoreError::from)?
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ first as u64);
    let t = store::now();
    let mut done = 0;
    while done < participants {
        let n = (participants - done).min(1000);
        let batch: Vec<store::cohorts::NewCompleted> = (0..n)
            .map(|i| {
                let k = first + done + i;
                let mut answers = |lo: i32| (0..20).map(|_| rng.random_range(lo..=5)).collect();
                store::cohorts::NewCompleted {
                    public_id: format!("{slug}-{k:07}"),
                    prolific_pid: Some(format!("PID{k:07}")),
                    source_ref: None,
                    imported: false,
                    situation_id: ids.get(k % ids.len().max(1)).copied(),
                    demographics: match serde_json::json!({
                        "gender": if k % 2 == 0 { "Female" } else { "Male" },
                        "year_of_birth": (1950 + k % 50).to_string(),
                        "country": "United Kingdom, \"Great\" Britain",
                        "employment_status": "Employed",
                        "education": "University - Bachelors"})
                    {
                        serde_json::Value::Object(m) => Some(Json(m)),
                        _ => None,
                    },
                    default_answers: answers(1),
                    evoked_answers: answers(2),
                    created_at: t - chrono::Duration::seconds(600),
                    completed_at: Some(t),
                }
            })
            .collect();
        conn.write_transaction(|conn| store::cohorts::insert_completed(conn, study, &batch))?;
        done += n;
    }
    Ok(())
}

/// Adds `models` imported runs (`model-1` …) of `trials` trials each to the generated study
/// `slug`: 50 default-measure trials, the rest evoked over the study's situations in turn,
/// seeded random answers, one in a hundred failed. The fixture of the report benchmark.
pub fn generate_model_runs(
    conn: &mut DbConnection,
    slug: &str,
    models: usize,
    trials: usize,
    seed: u64,
) -> Result<()> {
    use rand::{Rng, SeedableRng};
    let study = studies::load(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| StoreError::Conflict(format!("there is no study {slug:?}")))?;
    let set = study
        .situation_set_id
        .ok_or_else(|| StoreError::Conflict(format!("study {slug:?} has no situation set")))?;
    let situations: Vec<(store::SituationId, String)> = situations::list(conn, set)
        .map_err(StoreError::from)?
        .into_iter()
        .map(|s| (s.id, s.situation.key))
        .collect();
    if situations.is_empty() {
        return Err(StoreError::Conflict(format!("study {slug:?} has no situations")).into());
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let order: ItemOrder = Json((1..=20).collect());
    for m in 0..models {
        let name = format!("model-{}", m + 1);
        let rows: Vec<store::model_runs::NewImportedTrial> = (0..trials)
            .map(|k| {
                let (measure, situation_id, key, repeat) = if k < 50 {
                    (Measure::Default, None, "General".to_owned(), k)
                } else {
                    let j = k - 50;
                    let (id, key) = &situations[j % situations.len()];
                    (
                        Measure::Evoked,
                        Some(*id),
                        key.clone(),
                        j / situations.len(),
                    )
                };
                let lo = if measure == Measure::Default { 1 } else { 2 };
                let answers: Vec<i32> = (0..20).map(|_| rng.random_range(lo..=5)).collect();
                let scores = if rng.random_range(0..100) == 0 {
                    Err("generated failure".to_owned())
                } else {
                    Ok(Json(answers))
                };
                store::model_runs::NewImportedTrial {
                    measure,
                    situation_id,
                    situation_key: key,
                    repeat_index: i32::try_from(repeat).unwrap_or(i32::MAX),
                    item_order: order.clone(),
                    request: String::new(),
                    raw_reply: String::new(),
                    scores,
                }
            })
            .collect();
        conn.write_transaction(|conn| {
            store::model_runs::insert_imported(
                conn,
                &store::model_runs::NewImportedRun {
                    study_id: study.id,
                    model: &name,
                    instrument_id: study.instrument_id,
                    situation_set_id: Some(set),
                    selection: "{\"generated\":true}".to_owned(),
                    repeats: 1,
                    default_repeats: 50,
                },
                &rows,
            )
        })?;
    }
    Ok(())
}

/// Creates the open study `slug` for load tests (the demo situations, PANAS, shuffled items,
/// no minimum reading time, `target` completed participants wanted per situation). Returns
/// false, changing nothing, when the study exists already.
pub fn prepare_bench_study(conn: &mut DbConnection, slug: &str, target: i32) -> Result<bool> {
    let demo = demo_study();
    conn.write_transaction(|conn| {
        if situations::find_set(conn, demo.situation_set)?.is_none() {
            situations::import(conn, demo.situation_set, "demo", &demo.situations)?;
        }
        let set = situations::find_set(conn, demo.situation_set)?
            .ok_or_else(|| StoreError::Inconsistent("the demo situation set vanished".into()))?;
        let instrument = instruments::ensure_builtin(conn)?;
        if studies::find(conn, slug)?.is_some() {
            return Ok(false);
        }
        let mut c = StudyConfig::new(slug, "Load test");
        c.consent_text = "A load test study.".into();
        c.debrief_text = "Thank you.".into();
        c.target_per_situation = target;
        c.min_situation_seconds = 0;
        c.code_completed = Some("BENCHDONE".into());
        studies::create(
            conn,
            &c,
            StudyStatus::Open,
            studies::Sources::new(instrument, Some(set)),
            7,
        )?;
        audit::record(conn, &audit::Actor::Cli, "study.create", Some(slug), None)?;
        Ok(true)
    })
}
