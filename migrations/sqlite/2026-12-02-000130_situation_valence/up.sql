-- Valence variants (issue #18, point 4): a situation may rewrite another of its set (its
-- original, by key) with another valence. Two new columns only, so that the per-language
-- texts (#20) can change the table beside this. Existing rows are EmotionBench's negative
-- situations, hence the default. The link is by key within the set, not a foreign key: an
-- import matches situations by key, and a file may list a variant before its original.
ALTER TABLE situations ADD COLUMN variant_of TEXT;
ALTER TABLE situations ADD COLUMN valence TEXT NOT NULL DEFAULT 'negative';
