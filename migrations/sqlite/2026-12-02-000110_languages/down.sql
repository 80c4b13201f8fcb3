ALTER TABLE participants DROP COLUMN language;
ALTER TABLE studies DROP COLUMN languages;
