//! Lookups into a built report shared by the writers (`export::report`) and the charts
//! (`export::charts`): the emotions in report order, the category names, a cohort's group.
//! Kept in their own module so neither writer depends on the other.

use crate::domain::report::{Cohort, Group, Level, Report};

pub fn overall(c: &Cohort) -> Option<&Group> {
    c.groups.iter().find(|g| g.level == Level::Overall)
}

pub fn emotion_group<'a>(c: &'a Cohort, emotion: &str) -> Option<&'a Group> {
    c.groups
        .iter()
        .find(|g| g.level == Level::Emotion && g.emotion.as_deref() == Some(emotion))
}

/// Emotions in report order.
pub fn emotions(report: &Report) -> Vec<String> {
    report
        .cohorts
        .first()
        .map(|c| {
            c.groups
                .iter()
                .filter(|g| g.level == Level::Emotion)
                .filter_map(|g| g.emotion.clone())
                .collect()
        })
        .unwrap_or_default()
}

pub fn category_names(report: &Report) -> Vec<String> {
    report
        .cohorts
        .first()
        .and_then(overall)
        .map(|g| g.categories.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}
