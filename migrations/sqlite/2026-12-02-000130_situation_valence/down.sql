ALTER TABLE situations DROP COLUMN valence;
ALTER TABLE situations DROP COLUMN variant_of;
