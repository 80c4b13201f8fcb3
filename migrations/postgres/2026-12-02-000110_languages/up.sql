-- Languages (issue #20). A study lists the languages it runs in (a JSON list of language tags,
-- the first its default); a participant records the one they took it in (NULL: made before
-- languages existed, which was English). Neither is indexed: the participant's is written
-- once, at consent, and read with the row.
ALTER TABLE studies ADD COLUMN languages TEXT NOT NULL DEFAULT '["en"]';
ALTER TABLE participants ADD COLUMN language TEXT;
