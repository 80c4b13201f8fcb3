-- export_id: what exports show as `participant`, so an export never carries the survey
-- cookie's secret (public_id). resume_id: the cookie of a browser that resumed a participant by
-- Prolific id; it may continue the survey but not withdraw (issue #14, point 5).
ALTER TABLE participants ADD COLUMN export_id TEXT NOT NULL DEFAULT '';
ALTER TABLE participants ADD COLUMN resume_id TEXT;
UPDATE participants SET export_id = substr(md5(random()::text || clock_timestamp()::text || id::text), 1, 24);
CREATE UNIQUE INDEX participants_export_id ON participants (export_id);
CREATE UNIQUE INDEX participants_study_resume ON participants (study_id, resume_id);
