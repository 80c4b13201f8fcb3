DROP TABLE participant_texts;
ALTER TABLE studies DROP COLUMN free_text;
