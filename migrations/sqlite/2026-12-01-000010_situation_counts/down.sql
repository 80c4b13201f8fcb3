DROP INDEX participants_study_reserved;
DROP TRIGGER situation_counts_enter;
DROP TRIGGER situation_counts_leave;
DROP TRIGGER situation_counts_delete;
DROP TRIGGER situation_counts_insert;
DROP TABLE situation_counts;
