//! Model and humans compared per demographic group (#17): a persona run answers once as each
//! participant, so its trials can be grouped by the same gender and age band as the people
//! they stand for, and each group's mean change (after − before, per category) set beside the
//! humans' of that group.
//!
//! Descriptive only: a mean change and its n per side, and their difference. Groups are small
//! (a study's participants split by gender or six age bands), so the report states the n of
//! every cell rather than a test a handful of people cannot carry.

use serde::Serialize;

use super::protocol::{AGE_BANDS, age_band};

/// One person, or one persona trial: the profile grouped by and the category scores of the
/// two questionnaires (the report's convention, `scores[c]` for category `c`).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub gender: Option<String>,
    pub age: Option<i32>,
    pub before: Vec<f64>,
    pub after: Vec<f64>,
}

/// What a group is formed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Gender,
    AgeBand,
}

/// One side (humans or the model) of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub n: usize,
    /// Per category, the mean of after − before; None without members.
    pub change: Vec<Option<f64>>,
}

/// One group: both sides and, per category, model − humans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupRow {
    pub by: GroupBy,
    pub group: String,
    pub humans: Side,
    pub model: Side,
    pub difference: Vec<Option<f64>>,
}

/// One model cohort's persona trials against the humans, by gender and by age band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupComparison {
    pub cohort: String,
    pub categories: Vec<String>,
    /// The age bands, as the rows name them (ages from the year of birth).
    pub age_bands: Vec<&'static str>,
    pub rows: Vec<GroupRow>,
}

/// The label of a gender answer: as answered (trimmed), `"not stated"` when missing. Answers
/// that differ only in case are one group, named as first met.
fn gender_of(m: &Member) -> String {
    m.gender
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .unwrap_or("not stated")
        .to_owned()
}

fn select(members: &[Member], keep: impl Fn(&Member) -> bool) -> Vec<&Member> {
    members.iter().filter(|m| keep(m)).collect()
}

fn side(members: &[&Member], categories: usize) -> Side {
    let change = (0..categories)
        .map(|c| {
            let d: Vec<f64> = members
                .iter()
                .filter_map(|m| Some(m.after.get(c)? - m.before.get(c)?))
                .collect();
            (!d.is_empty()).then(|| d.iter().sum::<f64>() / d.len() as f64)
        })
        .collect();
    Side {
        n: members.len(),
        change,
    }
}

fn row(
    by: GroupBy,
    group: String,
    humans: &[&Member],
    model: &[&Member],
    categories: usize,
) -> GroupRow {
    let humans = side(humans, categories);
    let model = side(model, categories);
    let difference = humans
        .change
        .iter()
        .zip(&model.change)
        .map(|(h, m)| Some((*m)? - (*h)?))
        .collect();
    GroupRow {
        by,
        group,
        humans,
        model,
        difference,
    }
}

/// The rows by gender (groups in order of first appearance, humans first), then by age band
/// (the bands in order, then "under 18" and "unknown" where anyone falls there). A group
/// present on one side only still gets its row: the other side's n is 0.
pub fn compare(
    cohort: &str,
    categories: &[String],
    humans: &[Member],
    model: &[Member],
) -> GroupComparison {
    let k = categories.len();
    let mut genders: Vec<String> = Vec::new();
    for m in humans.iter().chain(model) {
        let g = gender_of(m);
        if !genders.iter().any(|x| x.eq_ignore_ascii_case(&g)) {
            genders.push(g);
        }
    }
    let mut rows = Vec::new();
    for g in genders {
        let of = |m: &Member| gender_of(m).eq_ignore_ascii_case(&g);
        let (h, m) = (select(humans, of), select(model, of));
        rows.push(row(GroupBy::Gender, g.clone(), &h, &m, k));
    }
    let bands: Vec<&'static str> = AGE_BANDS
        .iter()
        .map(|(_, _, name)| *name)
        .chain(["under 18", "unknown"])
        .collect();
    for band in bands {
        let of = |m: &Member| age_band(m.age) == band;
        let (h, m) = (select(humans, of), select(model, of));
        if h.is_empty() && m.is_empty() {
            continue;
        }
        rows.push(row(GroupBy::AgeBand, band.to_owned(), &h, &m, k));
    }
    GroupComparison {
        cohort: cohort.to_owned(),
        categories: categories.to_vec(),
        age_bands: AGE_BANDS.iter().map(|(_, _, name)| *name).collect(),
        rows,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn m(gender: &str, age: Option<i32>, before: f64, after: f64) -> Member {
        Member {
            gender: Some(gender.into()),
            age,
            before: vec![before, 10.0],
            after: vec![after, 10.0],
        }
    }

    #[test]
    fn groups_by_gender_and_age_band_with_each_sides_mean_change() {
        let humans = [
            m("Female", Some(20), 10.0, 14.0),
            m("female", Some(30), 10.0, 12.0),
            m("Male", Some(70), 20.0, 19.0),
        ];
        let model = [
            m("Female", Some(20), 10.0, 20.0),
            m("Female", Some(30), 10.0, 20.0),
            m("Male", Some(70), 10.0, 10.0),
        ];
        let g = compare("m", &["PA".into(), "NA".into()], &humans, &model);
        let names: Vec<(GroupBy, &str)> = g.rows.iter().map(|r| (r.by, r.group.as_str())).collect();
        assert_eq!(
            names,
            [
                (GroupBy::Gender, "Female"),
                (GroupBy::Gender, "Male"),
                (GroupBy::AgeBand, "18–24"),
                (GroupBy::AgeBand, "25–34"),
                (GroupBy::AgeBand, "65+"),
            ]
        );
        let female = &g.rows[0];
        assert_eq!((female.humans.n, female.model.n), (2, 2));
        assert_eq!(female.humans.change, [Some(3.0), Some(0.0)]);
        assert_eq!(female.model.change, [Some(10.0), Some(0.0)]);
        assert_eq!(female.difference, [Some(7.0), Some(0.0)]);
        let male = &g.rows[1];
        assert_eq!(male.difference[0], Some(1.0));
        assert_eq!(g.age_bands.len(), 6);
    }

    #[test]
    fn a_group_on_one_side_only_has_no_difference_and_missing_answers_say_so() {
        let humans = [Member {
            gender: None,
            age: None,
            before: vec![1.0],
            after: vec![2.0],
        }];
        let g = compare("m", &["T".into()], &humans, &[]);
        assert_eq!(g.rows[0].group, "not stated");
        assert_eq!(g.rows[0].model.n, 0);
        assert_eq!(g.rows[0].model.change, [None]);
        assert_eq!(g.rows[0].difference, [None]);
        assert_eq!(g.rows[1].group, "unknown");
    }
}
