DROP INDEX participants_study_resume;
DROP INDEX participants_export_id;
ALTER TABLE participants DROP COLUMN resume_id;
ALTER TABLE participants DROP COLUMN export_id;
