DROP INDEX participants_study_completed;
DROP INDEX participants_study_status_situation;
CREATE INDEX participants_study_status ON participants (study_id, status);
