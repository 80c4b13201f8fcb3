-- The monitor's evidence reads a study's latest 2,000 participants by id (issue #15). With only
-- (study_id, status) to go by, a query over three statuses had to sort every participant of the
-- study (0.9 s at 100,000 on SQLite); walking this index backwards stops after 2,000 rows.
-- Neither column ever changes after the INSERT, so on Postgres it costs no HOT update.
CREATE INDEX participants_study_id ON participants (study_id, id);
