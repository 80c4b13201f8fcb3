ALTER TABLE studies DROP COLUMN valences;
