ALTER TABLE participants DROP COLUMN flag_honeypot;
