-- A study's consent and debrief in its other languages (issue #20): a JSON object from language
-- tag to {"consent": ..., "debrief": ...} (domain::study::StudyTexts); consent_text and
-- debrief_text stay the default language's. Studies made before it have none.
ALTER TABLE studies ADD COLUMN translations TEXT NOT NULL DEFAULT '{}';
