ALTER TABLE studies DROP COLUMN translations;
