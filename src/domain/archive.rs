//! A study's definition as one versioned JSON file, to reuse it on another installation: the
//! settings and texts, the instrument with its items, the situation set with its texts, and
//! the retention date. No participants, no seed, no timestamps: exporting what an import made
//! gives the same bytes again.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::door::DoorSettings;
use super::instrument::Instrument;
use super::situation::Situation;
use super::study::StudyConfig;

/// What the `format` field says, so another JSON file is refused by name.
pub const FORMAT: &str = "emotionbench-study";

/// The version this build writes and the newest it reads. Raise it when a field changes
/// meaning or a required one is added; older files keep importing.
pub const FORMAT_VERSION: u32 = 1;

/// The situation set of a study, with its texts in the set's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchivedSet {
    pub name: String,
    pub situations: Vec<Situation>,
}

/// One study definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyArchive {
    pub format: String,
    pub format_version: u32,
    pub study: StudyConfig,
    pub retention_until: Option<NaiveDate>,
    pub instrument: Instrument,
    pub situation_set: Option<ArchivedSet>,
    /// Who may take part (#15 point 2). Absent when every check is off, so files of studies
    /// without a door read (and are written) as before; excluded studies go by slug.
    #[serde(default, skip_serializing_if = "DoorSettings::is_default")]
    pub door: DoorSettings,
    /// The free-text task the situation page's field asks (#18), so the study travels with
    /// the prompt its participants answer. Absent for a study without the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_text_task: Option<Instrument>,
}

impl StudyArchive {
    pub fn new(
        study: StudyConfig,
        retention_until: Option<NaiveDate>,
        instrument: Instrument,
        situation_set: Option<ArchivedSet>,
    ) -> Self {
        Self {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            study,
            retention_until,
            instrument,
            situation_set,
            door: DoorSettings::default(),
            free_text_task: None,
        }
    }

    /// The file's text: pretty JSON with a final newline (fields in a fixed order).
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut s = serde_json::to_string_pretty(self)?;
        s.push('\n');
        Ok(s)
    }

    /// Reads a file. The format and its version are checked before the rest, so a file of a
    /// newer emotionbench is refused as such, not as a mysterious missing field.
    pub fn parse(text: &str) -> Result<StudyArchive, String> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("not JSON (line {}, column {}): {e}", e.line(), e.column()))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(format!(
                "not an emotionbench study definition (its \"format\" is not {FORMAT:?})"
            ));
        }
        let version = value
            .get("format_version")
            .and_then(|v| v.as_u64())
            .ok_or("\"format_version\" is missing or not a whole number")?;
        if version > u64::from(FORMAT_VERSION) {
            return Err(format!(
                "the file has format version {version}, written by a newer emotionbench; this \
                 one reads versions up to {FORMAT_VERSION}: upgrade emotionbench here to import it"
            ));
        }
        let archive: StudyArchive =
            serde_json::from_value(value).map_err(|e| format!("invalid definition: {e}"))?;
        archive.study.validate()?;
        let door = archive.door.validate(&archive.study.slug);
        if !door.is_empty() {
            return Err(format!("door: {}", door.join(" ")));
        }
        archive
            .instrument
            .validate()
            .map_err(|e| format!("instrument {}: {e}", archive.instrument.key))?;
        if let Some(task) = &archive.free_text_task {
            task.validate()
                .map_err(|e| format!("free-text task {}: {e}", task.key))?;
            let named = archive.study.free_text.as_ref().map(|f| f.task.as_str());
            if !task.is_free_text() || named != Some(task.key.as_str()) {
                return Err(format!(
                    "\"free_text_task\" {} is not the free-text task the study's \"free_text\" names",
                    task.key
                ));
            }
        }
        Ok(archive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StudyArchive {
        let demo = crate::domain::demo::demo_study();
        let mut c = StudyConfig::new("wave-1", "Wave 1");
        c.consent_text = "Consent.\n\n\"Quoted\" <b>".into();
        c.code_completed = Some("C0DE".into());
        StudyArchive::new(
            c,
            "2027-06-30".parse().ok(),
            Instrument::panas(),
            Some(ArchivedSet {
                name: "demo".into(),
                situations: demo.situations.clone(),
            }),
        )
    }

    #[test]
    fn a_definition_round_trips_byte_for_byte() {
        let a = sample();
        let text = a.to_json().unwrap();
        let back = StudyArchive::parse(&text).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.to_json().unwrap(), text);
        assert!(text.contains("\"format_version\": 1"));
    }

    #[test]
    fn a_newer_version_is_refused_by_name() {
        let text = sample()
            .to_json()
            .unwrap()
            .replace("\"format_version\": 1", "\"format_version\": 2");
        let e = StudyArchive::parse(&text).unwrap_err();
        assert!(e.contains("format version 2") && e.contains("newer"), "{e}");
        // Even when the rest no longer looks like version 1.
        let e = StudyArchive::parse(r#"{"format":"emotionbench-study","format_version":9}"#)
            .unwrap_err();
        assert!(e.contains("newer"), "{e}");
    }

    #[test]
    fn other_files_are_refused_clearly() {
        for (text, says) in [
            ("{", "not JSON"),
            ("[]", "not an emotionbench study definition"),
            (r#"{"format":"emotionbench-study"}"#, "format_version"),
            (
                r#"{"format":"emotionbench-study","format_version":1}"#,
                "invalid definition",
            ),
        ] {
            let e = StudyArchive::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let mut bad = sample();
        bad.study.slug = "Bad Slug".into();
        assert!(
            StudyArchive::parse(&bad.to_json().unwrap())
                .unwrap_err()
                .contains("slug")
        );
    }
}
