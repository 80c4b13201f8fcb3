-- Protocols that mirror the humans (#17). A within-session or persona trial is one
-- conversation: the questionnaire (`before_order`, answers `before_scores`), then the situation
-- and the questionnaire again (`item_order`, `scores`). A persona trial answers as one human
-- participant of the study: `persona` is that person's profile as the prompt states it (JSON,
-- domain::protocol::Persona), copied when the run is made so the run can be repeated and
-- grouped without the participant row.
ALTER TABLE model_trials ADD COLUMN persona TEXT;
ALTER TABLE model_trials ADD COLUMN before_order TEXT;
ALTER TABLE model_trials ADD COLUMN before_scores TEXT;
