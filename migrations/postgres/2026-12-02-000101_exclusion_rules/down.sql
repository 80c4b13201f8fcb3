DROP TABLE study_exclusions;
