-- The language a model run asks in (issue #20): one of its study's language tags, the
-- situations' texts in it (situation_texts) for every trial. NULL: a run made before languages,
-- or one that did not name a language, which asks in the study's default (the set's own
-- texts). Not indexed: read with the run's row.
ALTER TABLE model_runs ADD COLUMN language TEXT;
