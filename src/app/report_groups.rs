//! The report's comparison by demographic group (#17): each model cohort with persona trials
//! against the study's humans, by gender and by age band (`domain::groups`).

use std::collections::HashMap;

use chrono::Datelike;

use super::error::Result;
use crate::domain::groups::{GroupComparison, Member, compare};
use crate::domain::instrument::Instrument;
use crate::domain::protocol::Persona;
use crate::domain::report::{Kind, Report};
use crate::store::studies::Study;
use crate::store::{DbConnection, ParticipantId, personas};

/// A scored human: participant, the category scores before and after the situation.
pub type Scored = (ParticipantId, Vec<f64>, Vec<f64>);

/// One comparison per model cohort that has persona trials (`personas[i]`: the members of the
/// i-th model cohort), none when no cohort has any or there are no humans to compare with.
pub fn comparisons(
    conn: &mut DbConnection,
    study: &Study,
    instrument: &Instrument,
    report: &Report,
    humans: &[Scored],
    personas: Vec<Vec<Member>>,
) -> Result<Vec<GroupComparison>> {
    if humans.is_empty() || personas.iter().all(Vec::is_empty) {
        return Ok(Vec::new());
    }
    // The humans' profiles as a persona trial would state them (the same age rule).
    let profiles: HashMap<ParticipantId, Persona> = personas::profiles(conn, study.id)?
        .into_iter()
        .map(|(id, answers, created, completed)| {
            let year = completed.unwrap_or(created).year();
            (id, Persona::from_json("", &answers.0, year))
        })
        .collect();
    let people: Vec<Member> = humans
        .iter()
        .map(|(id, before, after)| {
            let p = profiles.get(id);
            Member {
                gender: p.and_then(|p| p.gender.clone()),
                age: p.and_then(|p| p.age),
                before: before.clone(),
                after: after.clone(),
            }
        })
        .collect();
    let categories: Vec<String> = instrument
        .categories
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let models = report.cohorts.iter().filter(|c| c.kind == Kind::Model);
    Ok(models
        .zip(personas)
        .filter(|(_, members)| !members.is_empty())
        .map(|(cohort, members)| compare(&cohort.name, &categories, &people, &members))
        .collect())
}
