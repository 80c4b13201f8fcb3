DROP TABLE study_door_exclusions;
DROP TABLE study_doors;
