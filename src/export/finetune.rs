//! Fine-tuning data from humans (paper appendix F): JSONL, per participant of one side of the
//! study's split two records — the default measure and the evoked measure for the participant's
//! situation. Each record is the prompt exactly as model runs send it (`prompt::render`,
//! template `eb-code`, canonical item order) plus the participant's answers as the assistant
//! reply in `parse::format_reply`'s numbered form, which `parse::parse_reply` reads back.

use std::io::Write;

use serde::Serialize;

use super::{ExportError, ExportStats};
use crate::domain::parse::{ParseSpec, format_reply};
use crate::domain::prompt::{ChatMessage, Measure, Template, canonical_order, render};
use crate::domain::split::Side;
use crate::store::{
    DbConnection, InstrumentId, ParticipantId, StoreError, StudyId, cohorts, instruments,
};

/// The record layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FinetuneFormat {
    /// `{"messages":[system, user, assistant]}`: OpenAI's chat fine-tuning format, nothing else.
    Openai,
    /// The same messages with the record's identity: participant, source_ref, measure,
    /// situation (for other trainers and for checking).
    Messages,
}

#[derive(Serialize)]
struct OpenaiRecord<'a> {
    messages: &'a [ChatMessage],
}

#[derive(Serialize)]
struct MessagesRecord<'a> {
    participant: &'a str,
    source_ref: Option<&'a str>,
    measure: &'a str,
    situation: Option<&'a str>,
    messages: &'a [ChatMessage],
}

/// Participants whose answers are loaded per query.
const PAGE: usize = 500;

/// Writes the fine-tuning records of one side of the split of study `study_id`.
/// `stats.rows` counts records (lines).
pub fn write_finetune<W: Write>(
    conn: &mut DbConnection,
    study_id: StudyId,
    instrument_id: InstrumentId,
    side: Side,
    format: FinetuneFormat,
    mut out: W,
) -> Result<ExportStats, ExportError> {
    let instrument = instruments::get(conn, instrument_id)?;
    let n = instrument.items.len();
    let order = canonical_order(n);
    let texts: Vec<&str> = instrument.items.iter().map(|i| i.text.as_str()).collect();
    let spec = ParseSpec {
        display_order: &order,
        item_texts: &texts,
        min: instrument.min,
        max: instrument.max,
    };
    let members = cohorts::split_members(conn, study_id, side)?;
    let mut stats = ExportStats {
        participants: 0,
        rows: 0,
    };
    for page in members.chunks(PAGE) {
        let ids: Vec<ParticipantId> = page.iter().map(|m| m.id).collect();
        let answers = cohorts::answers_of(conn, &ids)?;
        for m in page {
            let mine = || answers.iter().filter(|a| a.participant_id == m.id);
            for measure in [Measure::Default, Measure::Evoked] {
                // answers_of orders by participant, phase, item number: canonical order.
                let scores: Vec<i32> = mine()
                    .filter(|a| a.phase == measure)
                    .map(|a| a.value)
                    .collect();
                if scores.len() != n {
                    return Err(incomplete(m, measure, scores.len(), n));
                }
                let situation = match measure {
                    Measure::Default => None,
                    Measure::Evoked => Some(m.situation_text.as_deref().ok_or_else(|| {
                        StoreError::Inconsistent(format!(
                            "participant {} has no situation for the evoked measure",
                            m.export_id
                        ))
                    })?),
                };
                let mut messages =
                    render(&instrument, &Template::EbCode, measure, situation, &order)
                        .map_err(|e| StoreError::Inconsistent(e.to_string()))?;
                messages.push(ChatMessage {
                    role: "assistant".into(),
                    content: format_reply(&scores, &spec),
                });
                match format {
                    FinetuneFormat::Openai => serde_json::to_writer(
                        &mut out,
                        &OpenaiRecord {
                            messages: &messages,
                        },
                    ),
                    FinetuneFormat::Messages => serde_json::to_writer(
                        &mut out,
                        &MessagesRecord {
                            participant: &m.export_id,
                            source_ref: m.source_ref.as_deref(),
                            measure: measure.as_str(),
                            situation: match measure {
                                Measure::Default => None,
                                Measure::Evoked => m.situation_key.as_deref(),
                            },
                            messages: &messages,
                        },
                    ),
                }
                .map_err(std::io::Error::from)?;
                out.write_all(b"\n")?;
                stats.rows += 1;
            }
            stats.participants += 1;
        }
    }
    out.flush()?;
    Ok(stats)
}

fn incomplete(m: &cohorts::SplitMember, phase: Measure, found: usize, n: usize) -> ExportError {
    ExportError::Store(StoreError::Inconsistent(format!(
        "participant {} has {found} {phase} answers, expected {n}",
        m.export_id
    )))
}
