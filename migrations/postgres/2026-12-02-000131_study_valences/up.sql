-- Valence selection of a study (issue #18, point 4): the valences of its set's situations
-- that participants are assigned, a JSON list (`["negative"]`); empty for every situation of
-- the set, which is what every study did before.
ALTER TABLE studies ADD COLUMN valences TEXT NOT NULL DEFAULT '[]';
