-- Evidence against bots (issue #15, point 3): see the SQLite migration. Not indexed, so the
-- page moves' UPDATEs stay HOT.
ALTER TABLE participants ADD COLUMN flag_honeypot BOOLEAN NOT NULL DEFAULT false;
