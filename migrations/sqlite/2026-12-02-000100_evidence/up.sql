-- Evidence against bots (issue #15, point 3): the situation page's honeypot, a visually hidden
-- field labelled "leave this empty", set by the page's own submit like flag_fast (no extra
-- statement on the survey's path). Never indexed: page moves must stay cheap.
ALTER TABLE participants ADD COLUMN flag_honeypot BOOLEAN NOT NULL DEFAULT 0;
