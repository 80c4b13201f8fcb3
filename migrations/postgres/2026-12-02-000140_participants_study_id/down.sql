DROP INDEX participants_study_id;
